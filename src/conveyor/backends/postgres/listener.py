"""Wake-ups by LISTEN/NOTIFY: a listening connection per backend and purpose (workers
waiting for work, callers waiting for a job), each in a thread.

Every insert, release, rescue and readying finish sends ``pg_notify('conveyor',
<schema>)`` inside its own transaction (a rollback sends nothing; PostgreSQL delivers
one notification per transaction and channel/payload, however many jobs it wrote). The
listener thread counts the ones for its schema in ``generation``; a waiting worker
returns as soon as the count moves past the value it saw before its last empty claim,
so many notifications while it works coalesce into one early return.

When the listening connection is lost the listener reconnects with backoff, and
``listening`` is False meanwhile: waiters then poll (return after at most
:data:`POLL_FALLBACK` seconds), so a dropped listener costs latency, never a job.

Finishes that end jobs also send ``pg_notify('conveyor_done', payload)``, the payload
the schema and then the jobs' ids, one a line (:func:`notify_done`; at most ~7,900 bytes
a notification, so a large batch sends a few),
and a process waiting for results (``job_wait``) holds a :class:`DoneListener` on that
channel, started on its first wait: the waiter wakes when its job's finish commits
instead of polling. Worker processes never listen there unless a task waits for a job.

Example::

    listener = Listener(conninfo, {"autocommit": True}, "conveyor")
    seen = listener.generation
    listener.wait(seen, 5.0)    # until a notification for schema "conveyor", or 5 s
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor.backends.retrying import backoff_delays

#: How often a waiter re-checks while the listener is down (seconds).
POLL_FALLBACK = 0.5
#: How often the listener thread looks up from the socket to see whether it was closed.
_CHECK_CLOSED = 1.0
CHANNEL = "conveyor"
#: Where finishes that end jobs name them (:func:`notify_done`).
DONE_CHANNEL = "conveyor_done"
#: A notification's payload must stay under 8,000 bytes (PostgreSQL's limit).
_PAYLOAD_MAX = 7900


def done_payloads(schema: str, ids: Sequence[str]) -> list[str]:
    r"""The payloads naming ``ids`` as ended, each under the server's limit: the schema,
    then one id a line. An id too long for a payload, or holding a newline, is left
    out: its waiter sees the job at its next poll instead.

    >>> done_payloads("conveyor", ["a", "b"])
    ['conveyor\na\nb']
    >>> len(done_payloads("s", ["x" * 3000] * 5))
    3
    """
    payloads: list[str] = []
    lines: list[str] = [schema]
    size = len(schema.encode())
    for job_id in ids:
        n = len(job_id.encode()) + 1
        if "\n" in job_id or n + len(schema) >= _PAYLOAD_MAX:
            continue
        if size + n > _PAYLOAD_MAX:
            payloads.append("\n".join(lines))
            lines, size = [schema], len(schema.encode())
        lines.append(job_id)
        size += n
    if len(lines) > 1:
        payloads.append("\n".join(lines))
    return payloads


def notify_done(cur: Any, schema: str, ids: Sequence[str]) -> None:
    """Tell waiters that ``ids`` ended, at this transaction's commit (statements only:
    in a pipeline they add no round trip)."""
    for payload in done_payloads(schema, ids):
        cur.execute("SELECT pg_notify(%s, %s)", (DONE_CHANNEL, payload))


class Listener:
    """Counts notifications for one schema; see the module docstring."""

    channel = CHANNEL

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

    def _deliver(self, payload: str) -> None:
        if payload == self._schema:
            self._bump()

    def _run(self) -> None:
        import psycopg

        delays = backoff_delays()
        while not self._closed:
            try:
                with psycopg.connect(self._conninfo, **self._kwargs) as conn:  # type: ignore[arg-type]
                    conn.execute(f"LISTEN {self.channel}")
                    with self._cond:
                        self.listening = True
                        self._cond.notify_all()
                    # What was sent while nobody listened is lost: wake every waiter.
                    self._bump()
                    delays = backoff_delays()
                    while not self._closed:
                        for note in conn.notifies(timeout=_CHECK_CLOSED):
                            self._deliver(note.payload)
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


class DoneListener(Listener):
    """Wakes the waiters of jobs named by :func:`notify_done`; see the module docstring.

    A waiter reads :meth:`seen` for its job, reads the job, and if it has not ended
    calls :meth:`wait_done` with what it saw: that returns once a notification named
    the job after ``seen`` was read (or the listener reconnected, when what was sent
    meanwhile is lost), at timeout, or after :data:`POLL_FALLBACK` while not listening.
    """

    channel = DONE_CHANNEL

    def __init__(self, conninfo: str, kwargs: Mapping[str, object], schema: str) -> None:
        #: Per job waited for: (waiters, how many notifications named it).
        self._watched: dict[str, list[int]] = {}
        super().__init__(conninfo, kwargs, schema)

    def watch(self, job_id: str) -> None:
        with self._cond:
            self._watched.setdefault(job_id, [0, 0])[0] += 1

    def unwatch(self, job_id: str) -> None:
        with self._cond:
            entry = self._watched[job_id]
            entry[0] -= 1
            if not entry[0]:
                del self._watched[job_id]

    def seen(self, job_id: str) -> tuple[int, int]:
        with self._cond:
            return self.generation, self._watched[job_id][1]

    def wait_done(self, job_id: str, seen: tuple[int, int], timeout: float) -> None:
        with self._cond:
            if not self.listening:
                timeout = min(timeout, POLL_FALLBACK)
            self._cond.wait_for(
                lambda: (self.generation, self._watched[job_id][1]) != seen or self._closed,
                timeout,
            )

    def _deliver(self, payload: str) -> None:
        schema, _, named = payload.partition("\n")
        if schema != self._schema:
            return
        with self._cond:
            woke = False
            for job_id in named.split("\n"):
                entry = self._watched.get(job_id)
                if entry is not None:
                    entry[1] += 1
                    woke = True
            if woke:
                self._cond.notify_all()
