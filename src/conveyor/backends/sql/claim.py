"""The claim on any SQL store: due jobs promoted, then each queue's share claimed, then
the rest topped up to ``total`` from the queues that still had jobs, then limits
admission (:mod:`conveyor.backends.sql.limits`), all in the caller's transaction.

Written to be *sent, then read*: creating a :class:`Claim` sends the promotion and each
queue's first share without reading anything back, and :meth:`Claim.result` reads them
and runs the rest. On PostgreSQL (pipeline mode) what was sent before the first read
travels in one round trip with the finishes sent before it; on SQLite the statements
simply run as they are sent. The executor must hand back an independent result for
every ``execute`` (a ``sqlite3.Connection``; on PostgreSQL a new cursor per statement).

The store's named queries (``Dialect.queries``): ``job_promote_due`` (``:now``) and
``job_claim`` (``:worker_id``, ``:queue``, ``:limit``, ``:now``), which answers the
claimed rows as ``decoding.CLAIM_NAMES`` then ``limit_key``. A store without
``UPDATE ... RETURNING`` (:attr:`Dialect.returning` False) has no ``job_claim``: the
engine selects the rows locked (``SKIP LOCKED`` where :attr:`Dialect.skip_locked`),
marks them, and reads them back, three statements instead of one.

Example::

    started = Claim(SQLITE, conn, JobClaimParams("w", [("q", 8)], 8), time.time())
    promoted, jobs = started.result(conn)
"""

from __future__ import annotations

from typing import Any

from conveyor.backends import decoding
from conveyor.backends.base import ClaimedJob, JobClaimParams
from conveyor.backends.sql import limits
from conveyor.backends.sql.dialect import Dialect, Executor, Result

#: The columns a claim answers: ClaimedJob's, then the job's limit key.
CLAIM_COLUMNS = ", ".join(decoding.CLAIM_NAMES)
_FIELDS = len(decoding.CLAIM_NAMES)

#: For stores without UPDATE ... RETURNING: the rows a claim takes, locked (skipping
#: rows another claimer holds, where the store can), then marked and read back.
_CANDIDATES = (
    "SELECT id FROM jobs WHERE state = 'queued' AND queue = ? "
    "AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ? AND paused = 1) "
    "ORDER BY priority DESC, run_at, id LIMIT ?"
)
_MARK = (
    "UPDATE jobs SET state = 'running', worker_id = ?, token = token + 1, "
    "attempt = attempt + 1, started_at = ?, lease_until = ? + lease "
    "WHERE state = 'queued' AND {where}"
)
_READ = f"SELECT {CLAIM_COLUMNS}, limit_key FROM jobs WHERE {{where}}"


def job_order(job: ClaimedJob) -> tuple[int, float, str]:
    """The order jobs are handed out in: priority first, then due time, then id."""
    return (-job.priority, job.run_at, job.id)


class Claim:
    """A claim in two steps (see the module docstring): creating it sends the promotion
    and each queue's first share; :meth:`result` reads them and runs the rest (top-ups,
    limits) in the same transaction. ``now``: the claim's clock where the store's
    statements take it from the caller (SQLite), None where they read the server's."""

    def __init__(self, d: Dialect, ex: Executor, params: JobClaimParams, now: float | None) -> None:
        self.d, self.params, self.now = d, params, now
        self._promote = ex.execute(d.queries["job_promote_due"], {"now": now})
        #: (queue, how many asked, its result): the first pass, each queue its share,
        #: never more than ``total`` in all (what each gets is known only in result()).
        self._sent: list[tuple[str, int, Result | list[Any]]] = []
        left = params.total
        for queue, limit in params.queues:
            want = min(limit, left)
            if want <= 0:
                continue
            self._sent.append((queue, want, self._send(ex, queue, want)))
            left -= want
        #: Seconds until the next scheduled job is due, where the store's promotion
        #: answers it (None: none scheduled, or the store does not say); set by result().
        self.next_due: float | None = None

    def _send(self, ex: Executor, queue: str, want: int) -> Result | list[Any]:
        d = self.d
        if d.returning:
            args = {"worker_id": self.params.worker_id, "queue": queue, "limit": want}
            return ex.execute(d.queries["job_claim"], {**args, "now": self.now})
        return self._claim_without_returning(ex, queue, want)

    def _claim_without_returning(self, ex: Executor, queue: str, want: int) -> list[Any]:
        """Select locked, mark, read back: for a store without UPDATE ... RETURNING."""
        d = self.d
        now = d.clock(ex) if self.now is None else self.now
        found = ex.execute(d.sql(_CANDIDATES + d.skip_locked), (queue, queue, want)).fetchall()
        ids = [str(r[0]) for r in found]
        rows: list[Any] = []
        for where, args in d.in_list("id", ids):
            ex.execute(d.sql(_MARK.format(where=where)), [self.params.worker_id, now, now, *args])
            rows += ex.execute(d.sql(_READ.format(where=where)), args).fetchall()
        return rows

    def _rows(self, ex: Executor, queue: str, sent: Result | list[Any], seen: list[str]) -> Any:
        if isinstance(sent, list):
            return sent
        return self.d.claim_rows(ex, sent, self.params.worker_id, queue, self.now, seen)

    def result(self, ex: Executor) -> tuple[int, list[ClaimedJob]]:
        """(how many were promoted, the jobs claimed in priority order)."""
        d, params = self.d, self.params
        claimed: list[ClaimedJob] = []
        keyed: dict[str, str] = {}  # claimed id -> its limit key (jobs that have one)
        empty: set[str] = set()

        def take(queue: str, want: int, sent: Result | list[Any]) -> None:
            rows = self._rows(ex, queue, sent, [j.id for j in claimed])
            for r in rows:
                claimed.append(d.claimed(r))
                if r[_FIELDS] is not None:
                    keyed[str(r[0])] = str(r[_FIELDS])
            if len(rows) < want:
                empty.add(queue)

        for queue, want, sent in self._sent:
            take(queue, want, sent)
        # Then top up from any queue that still had jobs, in the same transaction.
        for queue, _ in params.queues:
            want = params.total - len(claimed)
            if want <= 0:
                break
            if queue not in empty:
                take(queue, want, self._send(ex, queue, want))
        if keyed:
            claimed = limits.apply_limits(d, ex, claimed, keyed, self.now)
        if len(claimed) > 1:
            claimed.sort(key=job_order)
        return self._promoted(), claimed

    def _promoted(self) -> int:
        if not self.d.promote_answers:
            return int(self._promote.rowcount)
        promoted, due = self._promote.fetchone()
        self.next_due = None if due is None else float(due)
        return int(promoted)


def promote_due(d: Dialect, ex: Executor, now: float | None) -> int:
    """Scheduled jobs whose time has come become ready; how many."""
    found = ex.execute(d.queries["job_promote_due"], {"now": now})
    return int(found.fetchone()[0]) if d.promote_answers else int(found.rowcount)
