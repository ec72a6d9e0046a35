"""Signal handling of a worker process.

TERM/INT: graceful stop (stop fetching, let running jobs finish up to the shutdown
timeout, then release the rest back to ``queued``, exit 0). A second INT: stop at once
(release everything now). TSTP: quiet (stop fetching, keep running jobs). TTIN: print
every thread's stack to stderr.

Example::

    install(worker)   # from the main thread only
"""

from __future__ import annotations

import signal
import sys
import threading
import traceback
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker


def dump_stacks() -> str:
    """Every thread's current stack, as text."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f"--- thread {names.get(ident, '?')} ({ident}) ---\n")
        parts.append("".join(traceback.format_stack(frame)))
    return "".join(parts)


def install(worker: Worker) -> None:
    """Install the handlers (must be called from the main thread)."""
    interrupts = {"count": 0}

    def on_term(signum: int, frame: FrameType | None) -> None:
        worker.stop_soon()

    def on_int(signum: int, frame: FrameType | None) -> None:
        interrupts["count"] += 1
        if interrupts["count"] >= 2:
            worker.stop_now()
        else:
            worker.stop_soon()

    def on_tstp(signum: int, frame: FrameType | None) -> None:
        worker.quiet()

    def on_ttin(signum: int, frame: FrameType | None) -> None:
        sys.stderr.write(dump_stacks())
        sys.stderr.flush()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_int)
    if hasattr(signal, "SIGTSTP"):
        signal.signal(signal.SIGTSTP, on_tstp)
    if hasattr(signal, "SIGTTIN"):
        signal.signal(signal.SIGTTIN, on_ttin)
