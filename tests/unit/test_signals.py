"""Signal handlers never take the worker's locks on the main thread."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import conveyor
from conveyor.worker import signals
from conveyor.worker.worker import Worker


def test_sigterm_while_the_main_thread_holds_the_worker_lock_does_not_deadlock(
    tmp_path: Path,
) -> None:
    worker = Worker(conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}"))
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    saved_tstp = signal.getsignal(signal.SIGTSTP)
    saved_ttin = signal.getsignal(signal.SIGTTIN)
    try:
        signals.install(worker)
        with worker._lock:  # the main thread is inside a critical section...
            os.kill(os.getpid(), signal.SIGTERM)  # ...when the signal is handled
            time.sleep(0.05)  # the handler has run by now and returned (no deadlock)
            helpers = [t for t in threading.enumerate() if t.name == "conveyor-signal"]
            assert helpers and helpers[0].is_alive()  # its wake-up waits for the lock
        helpers[0].join(5)
        assert not helpers[0].is_alive() and worker._stopping.is_set()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        signal.signal(signal.SIGTSTP, saved_tstp)
        signal.signal(signal.SIGTTIN, saved_ttin)
        worker.app.close()
