"""Signal handling of a worker process.

TERM/INT: graceful stop (stop fetching, let running jobs finish up to the shutdown
timeout, then release the rest back to ``queued``, exit 0). A second INT: stop at once
(release everything now). TSTP: quiet (stop fetching, keep running jobs). TTIN: print
every thread's stack to stderr.

Example::

    install(worker)   # from the main thread only
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")


def dump_stacks() -> str:
    """Every thread's current stack, as text."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f"--- thread {names.get(ident, '?')} ({ident}) ---\n")
        parts.append("".join(traceback.format_stack(frame)))
    return "".join(parts)


def _off_main(action: Callable[[], None]) -> None:
    """Run ``action`` on a short-lived thread, never inside the handler itself.

    A handler runs on the main thread between two bytecodes, possibly while that thread
    holds one of the worker's (non-reentrant) locks: taking the same lock in the handler
    would deadlock the worker for good (seen as a worker ignoring SIGTERM). A separate
    thread simply waits until the main thread lets go."""
    threading.Thread(target=action, name="conveyor-signal", daemon=True).start()


def _write_stacks() -> None:
    sys.stderr.write(dump_stacks())
    sys.stderr.flush()


def _noted(name: str, what: str, action: Callable[[], None]) -> Callable[[], None]:
    """``action``, after logging that signal ``name`` arrived (logged off the main
    thread too: a handler must not take the logging locks the main thread may hold)."""

    def run() -> None:
        log.info(
            "received %s: %s",
            name,
            what,
            extra={"conveyor_event": {"event": "worker.signal", "signal": name}},
        )
        action()

    return run


def install(worker: Worker) -> None:
    """Install the handlers (must be called from the main thread)."""
    interrupts = {"count": 0}
    graceful = "stopping gracefully (no more claims; running jobs may finish)"

    def on_term(signum: int, frame: FrameType | None) -> None:
        _off_main(_noted("SIGTERM", graceful, worker.stop_soon))

    def on_int(signum: int, frame: FrameType | None) -> None:
        interrupts["count"] += 1
        if interrupts["count"] >= 2:
            _off_main(_noted("a second SIGINT", "stopping now", worker.stop_now))
        else:
            _off_main(_noted("SIGINT", graceful, worker.stop_soon))

    def on_tstp(signum: int, frame: FrameType | None) -> None:
        _off_main(worker.quiet)

    def on_ttin(signum: int, frame: FrameType | None) -> None:
        _off_main(_write_stacks)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_int)
    if hasattr(signal, "SIGTSTP"):
        signal.signal(signal.SIGTSTP, on_tstp)
    if hasattr(signal, "SIGTTIN"):
        signal.signal(signal.SIGTTIN, on_ttin)
