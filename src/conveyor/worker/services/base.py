"""``Looper``: the start/stop protocol every background service shares.

A service runs ``tick()`` every ``interval`` seconds on its own daemon thread until
stopped. An exception in a tick is logged and the loop goes on: a flaky store must not
kill the heartbeat (a store outage is logged once when it starts and once when it ends),
and neither must a bug or an odd row (its error is logged with its traceback once, then
once more when the ticks pass again).

Example:
    >>> class Count(Looper):
    ...     name = "count"
    ...     def tick(self) -> None:
    ...         self.n = getattr(self, "n", 0) + 1
    >>> c = Count(interval=0.01); c.start(); c.stop(); c.n >= 1
    True
"""

from __future__ import annotations

import logging
import threading

from conveyor.errors import BackendUnavailable, ConveyorError
from conveyor.worker.outage import Outage, OutageLog

log = logging.getLogger("conveyor.worker")


class Looper:
    """Runs ``tick`` now, then every ``interval`` seconds, until ``stop``."""

    name = "service"
    #: The worker's shared outage log (one line per outage for all its loops); set by
    #: the worker, None for a looper used on its own.
    outages: OutageLog | None = None

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # What ends a wait early: stop(), or nudge() (work came before the interval).
        self._wake = threading.Condition()
        self._nudged = False

    def tick(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._loop, name=f"conveyor-{self.name}", daemon=True
        )
        self._thread.start()

    def nudge(self) -> None:
        """End the current wait: the next tick runs now (for a looper whose work came
        sooner than its interval; a tick in progress is followed by another)."""
        with self._wake:
            self._nudged = True
            self._wake.notify_all()

    def _pause(self) -> bool:
        """Wait ``interval`` seconds, less when nudged or stopped; True once stopped."""
        with self._wake:
            if not self._nudged and not self._stop.is_set():
                self._wake.wait(self.interval)
            self._nudged = False
        return self._stop.is_set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _loop(self) -> None:
        outage = Outage(self.name, self.outages)
        failing: str | None = None  # the unexpected error the last tick raised
        while True:
            try:
                self.tick()
                outage.recovered()
                if failing is not None:
                    log.warning("%s: ticking again after %s", self.name, failing)
                    failing = None
            except BackendUnavailable as exc:  # one line when it starts, one when it ends
                outage.failed(exc, "retrying every tick")
            except Exception as exc:
                # A bug or a row nothing expected: the service goes on at its next tick.
                # Logged with its traceback once, not at every tick (one bad row would
                # repeat it every second), and again only when the error changes.
                # conveyor's own errors (a store replaced under the worker) explain
                # themselves in one line: their traceback says nothing more.
                seen = f"{type(exc).__name__}: {exc}"
                if seen != failing:
                    log.warning(
                        "%s: tick failed, retrying every %.3g s: %s",
                        self.name,
                        self.interval,
                        seen,
                        exc_info=None if isinstance(exc, ConveyorError) else exc,
                    )
                else:
                    log.debug("%s: tick failed again: %s", self.name, seen)
                failing = seen
            if self._pause():
                return
