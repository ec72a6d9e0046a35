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

A claim handed a :class:`~conveyor.backends.queue_ring.QueueRing` (a worker on more
equally weighted queues than it has slots: a queue per tenant) is not one statement per
queue: each chunk of the ring is ONE statement, ``job_claim_ring`` (``:worker_id``,
``:queues`` a JSON array, ``:limit``, ``:now``), that takes the first job of each
non-empty, unpaused queue of the chunk, in the ring's order, up to ``:limit``; chunks
grow until the claim is full or the ring is walked (:func:`~conveyor.backends.queue_ring.chunk_sizes`),
then the queues that gave a job top the claim up as before, and the ring resumes after
the last queue served. A store without RETURNING names the chunk's first jobs with
``job_ring_candidates`` (same parameters), then locks, marks and reads them back.

Example::

    started = Claim(SQLITE, conn, JobClaimParams("w", [("q", 8)], 8), time.time())
    promoted, jobs = started.result(conn)
"""

from __future__ import annotations

from typing import Any

from conveyor.backends import decoding
from conveyor.backends.base import ClaimedJob, JobClaimParams
from conveyor.backends.queue_ring import QueueRing, chunk_sizes, ring_of
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
_LOCK_QUEUED = "SELECT id FROM jobs WHERE state = 'queued' AND {where}"


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
        self._ring = ring_of(params.queues)
        if self._ring is not None:
            # One statement for the ring's first chunk; result() walks on from there.
            self._chunks = chunk_sizes(params.total, len(self._ring))
            at, size = next(self._chunks)
            self._ring_sent = self._send_chunk(ex, self._ring, at, size, params.total)
        left = params.total
        for queue, limit in () if self._ring is not None else params.queues:
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

    def _send_chunk(
        self, ex: Executor, ring: QueueRing, at: int, size: int, want: int
    ) -> Result | list[Any]:
        """The first job of each non-empty queue of one chunk of the ring, up to ``want``."""
        d = self.d
        args: dict[str, Any] = {"worker_id": self.params.worker_id, "limit": want}
        args.update(queues=ring.chunk_json(at, size), now=self.now)
        if d.returning:
            return ex.execute(d.queries["job_claim_ring"], args)
        now = d.clock(ex) if self.now is None else self.now
        found = ex.execute(d.queries["job_ring_candidates"], args).fetchall()
        named = [str(r[0]) for r in found]
        rows: list[Any] = []
        for where, ids in d.in_list("id", named):
            # Locked as the per-queue claim locks them (another claimer's are skipped).
            lock = d.sql(_LOCK_QUEUED.format(where=where) + d.skip_locked)
            locked = [str(r[0]) for r in ex.execute(lock, ids).fetchall()]
            for where_locked, args_locked in d.in_list("id", locked):
                mark = d.sql(_MARK.format(where=where_locked))
                ex.execute(mark, [self.params.worker_id, now, now, *args_locked])
                rows += ex.execute(d.sql(_READ.format(where=where_locked)), args_locked).fetchall()
        return rows

    def _rows(
        self, ex: Executor, queue: str | None, sent: Result | list[Any], before: list[ClaimedJob]
    ) -> Any:
        if isinstance(sent, list):
            return sent
        return self.d.claim_rows(ex, sent, self.params.worker_id, queue, self.now, before)

    def result(self, ex: Executor) -> tuple[int, list[ClaimedJob]]:
        """(how many were promoted, the jobs claimed in priority order)."""
        d, params = self.d, self.params
        claimed: list[ClaimedJob] = []
        keyed: dict[str, str] = {}  # claimed id -> its limit key (jobs that have one)
        empty: set[str] = set()

        def take(queue: str, want: int, sent: Result | list[Any]) -> None:
            rows = self._rows(ex, queue, sent, claimed)
            claimed.extend(map(d.claimed, rows))
            for r in rows:
                if r[_FIELDS] is not None:
                    keyed[str(r[0])] = str(r[_FIELDS])
            if len(rows) < want:
                empty.add(queue)

        for queue, want, sent in self._sent:
            take(queue, want, sent)
        ring = self._ring
        if ring is not None:
            served = self._walk(ex, ring, claimed, keyed)
            # Queues that gave a job are the only ones known non-empty: they top it up.
            queues: Any = [(q, 1) for q in served]
        else:
            queues = params.queues
        # Then top up from any queue that still had jobs, in the same transaction.
        for queue, _ in queues:
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

    def _walk(
        self, ex: Executor, ring: QueueRing, claimed: list[ClaimedJob], keyed: dict[str, str]
    ) -> list[str]:
        """The ring's first pass, chunk by chunk: claims into ``claimed``; answers the
        queues that gave a job, in the ring's order (the ring resumes after the last)."""
        d, total = self.d, self.params.total
        served: list[str] = []
        sent = self._ring_sent
        while True:
            rows = self._rows(ex, None, sent, claimed)
            for r in rows:
                job = d.claimed(r)
                claimed.append(job)
                served.append(job.queue)
                if r[_FIELDS] is not None:
                    keyed[job.id] = str(r[_FIELDS])
            want = total - len(claimed)
            chunk = next(self._chunks, None) if want > 0 else None
            if chunk is None:
                break
            sent = self._send_chunk(ex, ring, *chunk, want)
        served.sort(key=ring.position)
        if served:
            ring.resume(served[-1])
        return served

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
