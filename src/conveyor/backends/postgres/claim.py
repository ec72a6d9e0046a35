"""The claim on PostgreSQL: due jobs promoted, then one ``UPDATE ... RETURNING`` per
queue whose rows come from ``SELECT ... FOR UPDATE SKIP LOCKED LIMIT n`` over the
``jobs_ready`` partial index, so concurrent claimers skip each other's rows instead of
waiting. Each queue gets its share first, then the rest tops up to ``total``; a paused
queue yields nothing (checked in the same statement).

Limits are claim-then-check, the engine's (:mod:`conveyor.backends.sql.limits`, as on
SQLite): the claim returns each job's ``limit_key``, and only when one has a key are its
key's running jobs and recent starts counted, with the key's ``limits`` row locked
``FOR UPDATE`` so two workers never both take the last slot; jobs over the limit go back
to ``scheduled`` a little later in the same transaction.

Example::

    with pool.connection() as conn, conn.pipeline():
        started = Claim(conn, JobClaimParams(worker_id="w", queues=(("q", 8),), total=8))
        promoted, jobs = started.result(conn.cursor())
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conveyor import records
from conveyor.backends import decoding
from conveyor.backends.base import ClaimedJob, JobClaimParams
from conveyor.backends.postgres.dialect import POSTGRES
from conveyor.backends.postgres.flow import Cursor
from conveyor.backends.postgres.sql import BIGINT_MAX, CLAIM_COLUMNS, INT_MAX, NOW, count_at_limit
from conveyor.backends.sql import limits

#: Scheduled jobs whose time has come become ready. SKIP LOCKED: two workers promoting
#: at once split the rows instead of one waiting for the other. Answers how many it
#: promoted and in how many seconds the next scheduled job is due (NULL: none), read
#: against the same clock reading, so that a worker whose claim came back empty knows
#: how long it may wait without asking again (``work_wait``): any job scheduled after
#: this statement comes with a notification (an insert's, a retry's).
PROMOTE_DUE = f"""
WITH n AS (SELECT {NOW} AS now),
promoted AS (
  UPDATE jobs SET state = 'queued'
  WHERE id IN (SELECT id FROM jobs WHERE state = 'scheduled' AND run_at <= (SELECT now FROM n)
               FOR UPDATE SKIP LOCKED)
  RETURNING 1
)
SELECT (SELECT count(*) FROM promoted),
       (SELECT min(run_at) FROM jobs WHERE state = 'scheduled' AND run_at > (SELECT now FROM n))
         - (SELECT now FROM n)
"""

CLAIM = f"""
UPDATE jobs
SET state = 'running', worker_id = %(worker_id)s,
    -- saturating: a count at its column's limit is the row's problem (flagged below)
    token = least(token, {BIGINT_MAX - 1}) + 1, attempt = least(attempt, {INT_MAX - 1}) + 1,
    started_at = n.now, lease_until = n.now + lease
FROM (SELECT {NOW} AS now) AS n
WHERE jobs.id IN (
    SELECT id FROM jobs
    WHERE state = 'queued' AND queue = %(queue)s
      AND NOT EXISTS (SELECT 1 FROM queues WHERE name = %(queue)s AND paused = 1)
    ORDER BY priority DESC, run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
  )
RETURNING {", ".join(f"jobs.{c}" for c in CLAIM_COLUMNS.split(", "))}, jobs.limit_key
"""


class Claim:
    """A claim in two steps, so that its statements share a round trip with what was
    sent before them (the finishes of ``job_finish_and_claim``, in pipeline mode):
    creating it sends the promotion and each queue's first share; :meth:`result`
    reads them and runs the rest (top-ups, limits) in the same transaction."""

    def __init__(self, conn: Any, params: JobClaimParams) -> None:
        self.params = params
        self._promote = conn.cursor()
        self._promote.execute(PROMOTE_DUE)
        #: (queue, how many asked, its cursor): the first pass, each queue its share,
        #: never more than ``total`` in all (what each gets is known only in result()).
        self._sent: list[tuple[str, int, Any]] = []
        left = params.total
        for queue, limit in params.queues:
            want = min(limit, left)
            if want <= 0:
                continue
            cur = conn.cursor()
            cur.execute(CLAIM, self._args(queue, want))
            self._sent.append((queue, want, cur))
            left -= want
        #: Seconds until the next scheduled job is due, as the promotion read it (None:
        #: no scheduled job); set by result().
        self.next_due: float | None = None

    def _args(self, queue: str, want: int) -> dict[str, object]:
        return {"worker_id": self.params.worker_id, "queue": queue, "limit": want}

    def result(self, cur: Cursor) -> tuple[int, list[ClaimedJob]]:
        """(how many were promoted, the jobs claimed in priority order)."""
        params = self.params
        claimed: list[ClaimedJob] = []
        keyed: dict[str, str] = {}  # claimed id -> its limit key (jobs that have one)
        empty: set[str] = set()

        def take(queue: str, want: int, rows: list[Any]) -> None:
            for r in rows:
                claimed.append(_claimed(r))
                if r[-1] is not None:
                    keyed[str(r[0])] = str(r[-1])
            if len(rows) < want:
                empty.add(queue)

        for queue, want, sent in self._sent:
            take(queue, want, sent.fetchall())
        # Then top up from any queue that still had jobs, in the same transaction.
        for queue, _ in params.queues:
            want = params.total - len(claimed)
            if want <= 0:
                break
            if queue not in empty:
                cur.execute(CLAIM, self._args(queue, want))
                take(queue, want, cur.fetchall())
        if keyed:
            claimed = limits.apply_limits(POSTGRES, cur, claimed, keyed)
        if len(claimed) > 1:
            claimed.sort(key=lambda j: (-j.priority, j.run_at, j.id))
        promoted, due = self._promote.fetchone()
        self.next_due = None if due is None else float(due)
        return int(promoted), claimed


#: ClaimedJob's fields a claim row holds (CLAIM_COLUMNS, then limit_key, left out).
_FIELDS = len(CLAIM_COLUMNS.split(", "))


def _claimed(row: Sequence[Any]) -> ClaimedJob:
    """A claim's row as a ClaimedJob; counts at their column's limit (a row written
    around the API) make it a problem job, which the worker ends dead with the reason.

    The typed columns make every value what ClaimedJob says (text NOT NULL as str,
    integers as int, doubles as float) unless the database's encoding is SQL_ASCII,
    where psycopg hands text back as bytes: only then the checking decoder runs."""
    if (
        type(row[0]) is str
        and type(row[3]) is str
        and -INT_MAX < row[4] < INT_MAX  # attempt
        and -BIGINT_MAX < row[6] < BIGINT_MAX  # token
        and -INT_MAX < row[11] < INT_MAX  # rescues
    ):
        return ClaimedJob(*row[:_FIELDS])
    job = decoding.claimed_job(row[:_FIELDS])
    if job.problem is None:
        at_limit = _at_limit(job)
        if at_limit is not None:
            job = records.replace(job, problem=at_limit)
    return job


def _at_limit(job: ClaimedJob) -> str | None:
    return count_at_limit(attempt=job.attempt, token=job.token, rescues=job.rescues)
