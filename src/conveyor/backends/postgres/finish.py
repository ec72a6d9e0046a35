"""Finishing attempts on PostgreSQL: one fenced statement per finish kind in a batch.

The statement for each kind is built from its :data:`conveyor.rules.FINISH` rule (target
state, whether the attempt is given back, whether the job ends), never decided here.
Each applies to rows still ``running`` under the claim token (``unnest`` of the batch's
arrays joined on id and token); the ids it does not return were refused (stale).

Example:
    >>> from conveyor.states import FinishKind
    >>> "state = 'scheduled'" in finish_sql(FinishKind.RETRY)
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conveyor.backends.base import JobFinishParams
from conveyor.backends.postgres.flow import Cursor, settle
from conveyor.backends.postgres.sql import NOW
from conveyor.rules import FINISH
from conveyor.states import FinishKind, JobState

#: The batch's arrays are sent in binary (``%b``): psycopg's text form escapes every
#: element of every array, which cost about 3x as much client CPU per finish.
_BATCH = f"""
unnest(%(n)b::int[], %(id)b::text[], %(token)b::bigint[], %(result)b::text[],
       %(error)b::text[], %(reason)b::text[], %(run_at)b::float8[], %(finished_at)b::float8[],
       %(attempt)b::int[], %(worker_id)b::text[], %(started_at)b::float8[])
  AS f(n, id, token, result, error, reason, run_at, finished_at, attempt, worker_id,
       started_at),
(SELECT {NOW} AS now) AS n
"""
_FENCE = "jobs.id = f.id AND jobs.token = f.token AND jobs.state = 'running'"
_RETURNING = (
    "RETURNING f.n, f.id, f.token, f.attempt, f.worker_id, f.started_at, "
    "COALESCE(f.finished_at, n.now) AS finished_at, f.error, n.now AS now"
)
#: What each finish statement answers: per finish applied, its index, the finish time
#: used, the server's clock, and whether the job has dependants to settle.
_ANSWER = (
    "SELECT n, finished_at, now, EXISTS (SELECT 1 FROM job_deps WHERE parent_id = done.id) "
    "FROM done"
)
_ANSWER_ALONE = "SELECT n, finished_at, now, false FROM done"

ATTEMPT_INSERT = """
INSERT INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::text[], %s::float8[],
                     %s::float8[], %s::text[], %s::text[])
ON CONFLICT DO NOTHING
"""


#: The fence of a finish that commits before its answer is read: only jobs without
#: dependants (the others stay running, for a transaction that settles them).
_ALONE = " AND NOT EXISTS (SELECT 1 FROM job_deps WHERE parent_id = jobs.id)"


def finish_sql(kind: FinishKind, alone: bool = False) -> str:
    """The fenced statement applying ``FINISH[kind]`` to a batch, with its attempt rows
    (or, for a row that goes, the deletion of its history) in the same statement; it
    answers :data:`_ANSWER`. A job named twice is changed once: the second finish finds
    it no longer running under its token, as it would in order. ``alone``: jobs that
    have dependants are left as they are (:data:`_ALONE`)."""
    rule = FINISH[kind]
    fence = _FENCE + _ALONE if alone else _FENCE
    # Alone, no job done has dependants: the answer need not look.
    answer = _ANSWER_ALONE if alone else _ANSWER
    if rule.state is None:
        # The row went: its history goes with it.
        return (
            f"WITH done AS (DELETE FROM jobs USING {_BATCH} WHERE {fence} {_RETURNING}), "
            "gone_attempts AS (DELETE FROM attempts WHERE job_id IN (SELECT id FROM done)), "
            "gone_logs AS (DELETE FROM job_logs WHERE job_id IN (SELECT id FROM done)) "
            f"{answer}"
        )
    sets = [f"state = '{rule.state.value}'", "worker_id = NULL", "lease_until = NULL"]
    if rule.state is JobState.SUCCEEDED:
        sets.append("result = f.result")
    elif kind is not FinishKind.SNOOZE:  # a snooze is not an error: the last one stays
        sets += ["error = f.error", "reason = f.reason"]
    if rule.state.is_finished:
        sets.append("finished_at = COALESCE(f.finished_at, n.now)")
    else:
        sets.append("run_at = COALESCE(f.run_at, n.now)")
    if rule.gives_back_attempt:
        sets.append("attempt = jobs.attempt - 1")
    return (
        f"WITH done AS (UPDATE jobs SET {', '.join(sets)} FROM {_BATCH} WHERE {fence} "
        f"{_RETURNING}), "
        "attempt_rows AS (INSERT INTO attempts (job_id, token, attempt, worker_id, "
        "started_at, finished_at, outcome, error) SELECT id, token, attempt, worker_id, "
        f"started_at, finished_at, '{rule.attempt_outcome}', error FROM done "
        f"ON CONFLICT DO NOTHING) {answer}"
    )


_SQL = {(kind, alone): finish_sql(kind, alone) for kind in FinishKind for alone in (False, True)}


def _floats(values: list[float | None]) -> list[float | None]:
    """Times as floats: a binary array takes one element type, and a time may be an
    int (``run_at=now + 5`` from a hook)."""
    if all(type(v) is float or v is None for v in values):
        return values
    return [None if v is None else float(v) for v in values]


class Finishes:
    """A batch of finishes in two steps (see :class:`~conveyor.backends.postgres.claim.
    Claim`): creating it sends one statement per kind; :meth:`result` reads them and
    moves dependants, in the same transaction. With ``alone``, jobs that have
    dependants are left running (and counted in ``unapplied`` with the refused ones),
    so that the statements may commit before they are read: one round trip."""

    def __init__(self, conn: Any, params: Sequence[JobFinishParams], alone: bool = False) -> None:
        self.params = params
        self.ended: list[str] = []
        #: Indexes into ``params`` of the finishes not applied, set by result().
        self.unapplied: list[int] = []
        by_kind: dict[FinishKind, list[tuple[int, JobFinishParams]]] = {}
        for n, p in enumerate(params):
            by_kind.setdefault(p.kind, []).append((n, p))
        self._sent: list[Any] = []
        for kind, numbered in by_kind.items():
            batch = [p for _, p in numbered]
            cur = conn.cursor()
            cur.execute(
                _SQL[kind, alone],
                {
                    "n": [n for n, _ in numbered],
                    "id": [p.id for p in batch],
                    "token": [p.token for p in batch],
                    "result": [p.result for p in batch],
                    "error": [p.error for p in batch],
                    "reason": [p.reason for p in batch],
                    "run_at": _floats([p.run_at for p in batch]),
                    "finished_at": _floats([p.finished_at for p in batch]),
                    "attempt": [p.attempt for p in batch],
                    "worker_id": [p.worker_id for p in batch],
                    "started_at": _floats([p.started_at for p in batch]),
                },
            )
            self._sent.append(cur)

    def result(self, cur: Cursor) -> tuple[list[str], bool]:
        """(refused ids, whether anything became ready or scheduled: wake workers)."""
        params = self.params
        applied: set[int] = set()
        parents: dict[int, float] = {}  # index -> server clock, for jobs with dependants
        for sent in self._sent:
            for n, _finished, now, has_dependants in sent.fetchall():
                applied.add(int(n))
                if has_dependants:
                    parents[int(n)] = float(now)
        self.unapplied = [n for n in range(len(params)) if n not in applied]
        stale = [params[n].id for n in self.unapplied]
        ends = [FINISH[params[n].kind].ends_job for n in sorted(applied)]
        wake = not all(ends)
        #: The ids whose job ended here, for the waiters (``listener.notify_done``).
        self.ended = [params[n].id for n, end in zip(sorted(applied), ends, strict=True) if end]
        if parents:
            # Dependants move in the same commit as their parent's finish.
            succeeded = [
                params[n].id for n in parents if FINISH[params[n].kind].state is JobState.SUCCEEDED
            ]
            failed = {
                params[n].id: why
                for n in parents
                if (why := FINISH[params[n].kind].parent_failed) is not None
            }
            wake = settle(cur, succeeded, failed, max(parents.values())) > 0 or wake
        return stale, wake
