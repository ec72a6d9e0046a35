"""Wake-ups by LISTEN/NOTIFY: one listening connection per backend, in a thread.

Every insert, release, rescue and readying finish sends ``pg_notify('conveyor',
<schema>)`` inside its own transaction (a rollback sends nothing; PostgreSQL delivers
one notification per transaction and channel/payload, however many jobs it wrote). The
listener thread counts the ones for its schema in ``generation``; a waiting worker
returns as soon as the count moves past the value it saw before its last empty claim,
so many notifications while it works coalesce into one early return.

When the listening connection is lost the listener reconnects with backoff, and
``listening`` is False meanwhile: waiters then poll (return after at most
:data:`POLL_FALLBACK` seconds), so a dropped listener costs latency, never a job.

Example::

    listener = Listener(conninfo, {"autocommit": True}, "conveyor")
    seen = listener.generation
    listener.wait(seen, 5.0)    # until a notification for schema "conveyor", or 5 s
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from conveyor.backends.redis.retrying import backoff_delays

#: How often a waiter re-checks while the listener is down (seconds).
POLL_FALLBACK = 0.5
#: How often the listener thread looks up from the socket to see whether it was closed.
_CHECK_CLOSED = 1.0
CHANNEL = "conveyor"


class Listener:
    """Counts notifications for one schema; see the module docstring."""

    def __init__(self, conninfo: str, kwargs: Mapping[str, object], schema: str) -> None:
        self._conninfo = conninfo
        self._kwargs = {**kwargs, "autocommit": True}
        self._schema = schema
        self._cond = threading.Condition()
        self.generation = 0
        self.listening = False
        self._closed = False
        self._stopping = threading.Event()  # wakes the reconnect backoff on close
        self._thread = threading.Thread(target=self._run, name="conveyor-pg-listen", daemon=True)
        self._thread.start()

    def wait_listening(self, timeout: float) -> bool:
        """Block until LISTEN is in place (or ``timeout``); True if it is."""
        with self._cond:
            return self._cond.wait_for(lambda: self.listening or self._closed, timeout)

    def wait(self, generation: int | None, timeout: float) -> None:
        """Return when a notification arrived after ``generation`` was read, at timeout,
        or after :data:`POLL_FALLBACK` while the listener is down (``None``: at once)."""
        if generation is None or timeout <= 0:
            return
        with self._cond:
            if not self.listening:
                timeout = min(timeout, POLL_FALLBACK)
            self._cond.wait_for(lambda: self.generation != generation or self._closed, timeout)

    def _bump(self) -> None:
        with self._cond:
            self.generation += 1
            self._cond.notify_all()

    def _run(self) -> None:
        import psycopg

        delays = backoff_delays()
        while not self._closed:
            try:
                with psycopg.connect(self._conninfo, **self._kwargs) as conn:  # type: ignore[arg-type]
                    conn.execute(f"LISTEN {CHANNEL}")
                    with self._cond:
                        self.listening = True
                        self._cond.notify_all()
                    # What was sent while nobody listened is lost: wake every waiter.
                    self._bump()
                    delays = backoff_delays()
                    while not self._closed:
                        for note in conn.notifies(timeout=_CHECK_CLOSED):
                            if note.payload == self._schema:
                                self._bump()
            except psycopg.Error:
                pass  # server gone or connection cut: waiters poll until we are back
            with self._cond:
                self.listening = False
                self._cond.notify_all()
            if not self._closed:
                self._stopping.wait(next(delays))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._stopping.set()
        self._thread.join(timeout=_CHECK_CLOSED * 2)
