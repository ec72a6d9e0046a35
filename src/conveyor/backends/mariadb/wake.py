"""Waking idle MariaDB workers: user locks as a doorbell, ``KILL QUERY`` as the ring.

MariaDB has no LISTEN/NOTIFY. An idle worker waits in one statement on a connection of
its own (:class:`IdleWaiter`)::

    SELECT COALESCE(IF(GET_LOCK('conveyor_idle:<db>:0', 0), 0, NULL), ...), SLEEP(t)

It takes the first free one of :data:`SLOTS` named locks and sleeps; it keeps the lock
while it stays idle (claims between sleeps find nothing) and gives it back when woken
or when a claim finds work. A write that makes jobs ready (an enqueue, an event sent, a retry or resume from
the operations) reads ``IS_USED_LOCK`` of those names in a statement it sends anyway
(the enqueue's clock read: no new round trip), and after its commit runs
``KILL QUERY <id>`` for each holder: the sleep ends at once (error 1317 on MariaDB,
``SLEEP`` returning 1 on MySQL) and the worker claims. So an enqueue pays a round trip
per idle waiter it wakes, and none when no worker is idle; an idle worker sends one
statement per poll interval, as its claim does.

The same doorbell serves two more waits. An idle worker's sleep also ends when the
next scheduled job comes due (a durable sleep's wake time, a retry's backoff): the
statement reads it (``jobs_scheduled`` index) and sleeps no longer, so a sleeping job
resumes on time, not up to a poll later. A ``job.result()`` waiter (:class:`DoneWaiter`)
holds a lock named after its job (:func:`done_lock`) and one of :data:`SLOTS` result
slots (:func:`result_slots`) on a connection of its own and sleeps in a statement that
first checks the job has not ended; a finish reads the result slots in its clock read
(no new round trip, :func:`read_clock_and_done`) and, only when one is held, the locks
of the jobs it ended after its commit (one round trip), and kills those sleeps. A
finish that schedules a job (a durable sleep parks so, a retry waits so) reads the idle
workers' locks there too and rings them, so a sleep begun before that job existed ends
when it is due.

Safe by default: the sleep lasts one poll interval, so a wake that is lost (a waiter
that took its lock just after the writer read the locks, more than :data:`SLOTS` idle
waiters, a user not allowed to kill another user's query: error 1095, remembered and
not tried again, a proxy that hides connection ids) costs the old polling latency,
never a job. Writers and waiters in one process also share a generation counter, so a
worker that claims while a write of its own process commits does not sleep past it.

Example (needs a server; the test suite starts one)::

    waiter = IdleWaiter(target)
    waiter.wait(0.25)                            # in the worker: until woken or 0.25 s
    now, idle = read_clock_and_idle(ex, "jobs")  # in a writer's transaction
    wake(conn, idle)                             # after its commit
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from conveyor.backends.mariadb.connection import Executor, connect
from conveyor.backends.mariadb.url import MariaDBTarget

log = logging.getLogger("conveyor.backends.mariadb")

#: How many idle waiters of one database a write can wake. Each is a named lock the
#: writer reads (IS_USED_LOCK: ~20 us of server time each, measured in BENCHMARKS.md);
#: waiters past these poll as before.
SLOTS = 4
#: The first sleep of an idle spell lasts this long at most: a write that read the idle
#: locks just before this waiter's lock was taken (the server can run the statement
#: well after it was sent on a busy box) does not ring it, and costs this, not a poll.
#: Later sleeps hold the lock already and last the whole poll.
FIRST_SLEEP = 0.05
#: How long an idle waiter sleeps at most when a scheduled job comes due: until the
#: first one due after now (2 ms past it, so the claim's clock has reached it), 10 ms
#: at least (a worker not serving that job's queue is woken at most 100 times a second).
_UNTIL_DUE = (
    "GREATEST(0.01, COALESCE((SELECT MIN(run_at) FROM jobs WHERE state = 'scheduled' "
    "AND run_at > UNIX_TIMESTAMP(NOW(6))) - UNIX_TIMESTAMP(NOW(6)) + 0.002, 3600))"
)
#: The ended states (conveyor/states.py FINISHED_STATES), for a result waiter's check.
_ENDED = "('succeeded', 'dead', 'cancelled', 'expired')"
#: MariaDB's "query execution was interrupted" (the KILL QUERY of a SLEEP), "unknown
#: thread id" (the waiter is gone) and "you are not owner of thread" (another user's).
_INTERRUPTED, _UNKNOWN_THREAD, _NOT_OWNER = 1317, 1094, 1095
_NOW = "UNIX_TIMESTAMP(NOW(6))"


def lock_names(database: str) -> list[str]:
    """The names of the idle waiters' locks of one database (user locks are server-wide).

    >>> lock_names("jobs")[:2]
    ['conveyor_idle:jobs:0', 'conveyor_idle:jobs:1']
    """
    return [f"conveyor_idle:{database}:{i}" for i in range(SLOTS)]


def clock_and_idle_sql(database: str) -> str:
    """The statement of :func:`read_clock_and_idle`: the server's clock and, as one
    text, the connection ids holding the idle locks (names quoted: a database name
    is letters, digits, ``_`` and ``$``; a quote would be doubled anyway)."""
    held = ", ".join(f"IS_USED_LOCK({_quote(n)})" for n in lock_names(database))
    return f"SELECT {_NOW}, CONCAT_WS(',', {held})"


def read_clock_and_idle(ex: Executor, database: str) -> tuple[float, list[int]]:
    """The server's clock and the ids of idle waiters' connections, in one round trip."""
    now, held = ex.execute(clock_and_idle_sql(database)).fetchone()
    return float(now), [int(i) for i in str(held or "").split(",") if i]


#: Connection ids this process may not kill (error 1095), per (host, port): not asked
#: again, so a writer under another user pays no round trip per enqueue for nothing.
_refused: set[tuple[str, int, int]] = set()


def wake(conn: Any, target: MariaDBTarget, ids: Iterable[int]) -> int:
    """``KILL QUERY`` each idle waiter's sleep on ``conn`` (after the write committed);
    how many were sent. A waiter gone since (1094) is skipped; one of another user
    (1095) is remembered and skipped from then on. Never raises for those."""
    import pymysql

    sent = 0
    for conn_id in ids:
        key = (target.host, target.port, conn_id)
        if key in _refused:
            continue
        try:
            conn.cursor().execute(f"KILL QUERY {int(conn_id)}")
            sent += 1
        except pymysql.err.OperationalError as exc:
            if exc.args[0] == _NOT_OWNER:
                _refused.add(key)
                log.debug("cannot wake waiter %s (another user's connection): it polls", conn_id)
            elif exc.args[0] != _UNKNOWN_THREAD:
                raise
        except pymysql.err.InternalError as exc:  # some servers report 1094/1095 here
            if exc.args[0] not in (_UNKNOWN_THREAD, _NOT_OWNER):
                raise
    return sent


class Generation:
    """Ready-making commits of one process on one database, counted: a worker reads it
    before its claim and does not sleep when it moved since (a writer of its own
    process committed between the claim and the sleep)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> None:
        self.value += 1  # a lost increment under a race only costs one poll interval


_generations: dict[tuple[str, int, str], Generation] = {}
_generations_lock = threading.Lock()


def generation_for(target: MariaDBTarget) -> Generation:
    """The process-wide :class:`Generation` of ``target``'s database."""
    key = (target.host, target.port, target.database)
    with _generations_lock:
        found = _generations.get(key)
        if found is None:
            found = _generations[key] = Generation()
        return found


class IdleWaiter:
    """One thread's waits for work: a connection of its own, held while it is idle
    (opened on the first wait, so a process that never waits holds none)."""

    def __init__(self, target: MariaDBTarget) -> None:
        self.target = target
        self._conn: Any = None
        names = lock_names(target.database)
        take = ", ".join(f"IF(GET_LOCK({_quote(n)}, 0), {i}, NULL)" for i, n in enumerate(names))
        # Left to right: a free slot (or none: the sleep is a plain poll), then the sleep.
        self._take_and_sleep = f"SELECT COALESCE({take}), SLEEP(LEAST(%s, {_UNTIL_DUE}))"
        self._sleep = f"SELECT NULL, SLEEP(LEAST(%s, {_UNTIL_DUE}))"
        #: This waiter's connection holds a slot: it keeps it through sleeps that time
        #: out (the claims between them find nothing), so a write meanwhile still sees
        #: it idle; a wake, or a claim that found work (:meth:`release`), gives it back.
        self.holding = False
        #: False once the server refused the statement for another reason than a kill
        #: (an old server without RELEASE_ALL_LOCKS): the waiter sleeps in Python.
        self.usable = True
        #: The next sleep begins an idle spell (FIRST_SLEEP at most).
        self.fresh = True

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, or until a writer wakes this waiter; True when woken."""
        import pymysql

        if not self.usable or seconds <= 0:
            time.sleep(max(0.0, seconds))
            return False
        if self.fresh:
            seconds, self.fresh = min(seconds, FIRST_SLEEP), False
        try:
            if self._conn is None or not self._conn.open:
                self._conn = connect(self.target)
                self._conn.autocommit(True)
            cur = self._conn.cursor()
            cur.execute(self._sleep if self.holding else self._take_and_sleep, (seconds,))
            row = cur.fetchone()
            self.holding = self.holding or row[0] is not None
            if row[1] == 1:  # MySQL: SLEEP returns 1 when killed
                self.release(always=True)
                return True
            return False
        except pymysql.err.OperationalError as exc:
            if exc.args[0] == _INTERRUPTED:
                # Killed, maybe before the statement said whether it took a slot: give
                # back whatever it holds.
                self.release(always=True)
                return True
            self.close()  # a lost connection: the next wait opens another
            raise
        except pymysql.err.ProgrammingError as exc:  # e.g. no RELEASE_ALL_LOCKS: poll
            log.warning("idle MariaDB workers will poll: %s", exc)
            self.usable = False
            self.close()
            return False

    def release(self, always: bool = False) -> None:
        """Give the slot back (the worker is busy now: writers need not wake it);
        nothing to do unless it holds one (``always``: it may, unknown)."""
        import pymysql

        self.fresh = True  # busy now: the next wait begins an idle spell
        if not (self.holding or always):
            return
        self.holding = False
        try:
            self._conn.cursor().execute("DO RELEASE_ALL_LOCKS()")
        except pymysql.err.Error:
            self.close()  # closing the connection releases its locks too

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to release
                self._conn.close()
            self._conn = None
        self.holding = False
        self.fresh = True


def done_lock(database: str, job_id: str) -> str:
    """The lock a ``job.result()`` waiter holds while it waits for ``job_id`` (hashed:
    a lock name is 64 characters at most).

    >>> done_lock("jobs", "06H5")
    'conveyor_done:842b02047cbd52060db6ed0b4206a3d77bd73331'
    """
    import hashlib

    return "conveyor_done:" + hashlib.sha1(f"{database}:{job_id}".encode()).hexdigest()


def result_slots(database: str) -> list[str]:
    """The locks saying "a ``job.result()`` waiter is here" (one each, :data:`SLOTS`):
    a finish reads its jobs' locks (one more round trip) only when one is held, so a
    store nobody waits on pays four IS_USED_LOCK calls in a statement it sends anyway."""
    return [f"conveyor_result:{database}:{i}" for i in range(SLOTS)]


def read_clock_and_done(
    ex: Executor, database: str, ids: list[str], idle: bool = False
) -> tuple[float, bool, list[int]]:
    """A finish's clock read (one round trip, as before): the server's clock, whether a
    ``job.result()`` waiter holds a result slot (only ``ids`` given: then the finish
    reads its jobs' locks after its commit, :func:`done_waiters`), and with ``idle`` the
    idle workers' connections (a finish that schedules a job: they sleep until due)."""
    slots = ", ".join(f"IS_USED_LOCK({_quote(n)})" for n in result_slots(database))
    waited = f"COALESCE({slots}) IS NOT NULL" if ids else "0"
    idle_sql = clock_and_idle_sql(database).split(", ", 1)[1] if idle else "NULL"
    now, any_waiter, held = ex.execute(f"SELECT {_NOW}, {waited}, {idle_sql}").fetchone()
    return float(now), bool(any_waiter), [int(i) for i in str(held or "").split(",") if i]


def done_waiters(ex: Executor, database: str, ids: list[str]) -> list[int]:
    """The connections waiting for the end of one of ``ids`` (after the finish's commit:
    a waiter that took its lock later finds the job ended in its sleep statement)."""
    held = ", ".join(f"IS_USED_LOCK({_quote(done_lock(database, i))})" for i in ids)
    (found,) = ex.execute(f"SELECT CONCAT_WS(',', {held})").fetchone()
    return [int(i) for i in str(found or "").split(",") if i]


class DoneWaiter:
    """One thread's waits for jobs' ends (``job.result()``): a connection of its own that
    holds the job's :func:`done_lock` and sleeps unless the job has ended; a finish of
    the job kills the sleep. The lock of the last wait is given back by the next one
    (no round trip after the result is known)."""

    def __init__(self, target: MariaDBTarget) -> None:
        self.target = t = target
        self._conn: Any = None
        #: The job whose lock this waiter holds (None: none, or not known after a kill).
        self.job: str | None = None
        take = ", ".join(f"IF(GET_LOCK({_quote(n)}, 0), 1, NULL)" for n in result_slots(t.database))
        # The job's lock, then a free result slot (finishes read job locks only then).
        self._hold = f"SELECT RELEASE_ALL_LOCKS(), GET_LOCK(%s, 0) AND COALESCE({take})"
        self._sleep = (
            "SELECT IF(EXISTS(SELECT 1 FROM jobs WHERE id = %s AND state IN "
            f"{_ENDED}), 0, SLEEP(%s))"
        )

    def hold(self, job_id: str) -> bool:
        """Take ``job_id``'s lock and a result slot (giving back the last ones); False
        when another waiter holds it (that one is woken; this one polls), the slots are
        all taken (more than :data:`SLOTS` waiters: it polls) or the server refused."""
        import pymysql

        try:
            if self._conn is None or not self._conn.open:
                self._conn = connect(self.target)
                self._conn.autocommit(True)
            cur = self._conn.cursor()
            cur.execute(self._hold, (done_lock(self.target.database, job_id),))
            self.job = job_id if cur.fetchone()[1] == 1 else None
        except pymysql.err.Error as exc:  # an old server, a lost connection: it polls
            log.debug("result waits on MariaDB poll: %s", exc)
            self.close()
        return self.job == job_id

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` unless the held job has ended; True when woken. A
        connection lost meanwhile: a plain sleep, and the next :meth:`hold` opens one."""
        import pymysql

        if self._conn is None or self.job is None:
            time.sleep(seconds)
            return False
        try:
            cur = self._conn.cursor()
            cur.execute(self._sleep, (self.job, seconds))
            return bool(cur.fetchone()[0] == 1)  # MySQL: SLEEP returns 1 when killed
        except pymysql.err.OperationalError as exc:
            if exc.args[0] == _INTERRUPTED:
                return True
            log.debug("a result wait on MariaDB failed (%s); it polls", exc)
            self.close()
            return False

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to release
                self._conn.close()
            self._conn = None
        self.job = None


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
