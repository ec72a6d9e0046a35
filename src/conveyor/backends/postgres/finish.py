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

from conveyor.backends.base import JobFinishParams
from conveyor.backends.postgres.flow import Cursor, settle
from conveyor.backends.postgres.sql import NOW
from conveyor.rules import FINISH
from conveyor.states import FinishKind, JobState

_BATCH = f"""
unnest(%(n)s::int[], %(id)s::text[], %(token)s::bigint[], %(result)s::text[],
       %(error)s::text[], %(reason)s::text[], %(run_at)s::float8[], %(finished_at)s::float8[])
  AS f(n, id, token, result, error, reason, run_at, finished_at),
(SELECT {NOW} AS now) AS n
"""
_FENCE = "jobs.id = f.id AND jobs.token = f.token AND jobs.state = 'running'"

ATTEMPT_INSERT = """
INSERT INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::text[], %s::float8[],
                     %s::float8[], %s::text[], %s::text[])
ON CONFLICT DO NOTHING
"""


def finish_sql(kind: FinishKind) -> str:
    """The fenced statement applying ``FINISH[kind]`` to a batch; RETURNING the index
    of each finish applied (with the finish time used). A job named twice is changed
    once: the second finish finds it no longer running under its token, as in order."""
    rule = FINISH[kind]
    finished = "COALESCE(f.finished_at, n.now)"
    if rule.state is None:
        return f"DELETE FROM jobs USING {_BATCH} WHERE {_FENCE} RETURNING f.n, {finished}"
    sets = [f"state = '{rule.state.value}'", "worker_id = NULL", "lease_until = NULL"]
    if rule.state is JobState.SUCCEEDED:
        sets.append("result = f.result")
    elif kind is not FinishKind.SNOOZE:  # a snooze is not an error: the last one stays
        sets += ["error = f.error", "reason = f.reason"]
    if rule.state.is_finished:
        sets.append(f"finished_at = {finished}")
    else:
        sets.append("run_at = COALESCE(f.run_at, n.now)")
    if rule.gives_back_attempt:
        sets.append("attempt = attempt - 1")
    return (
        f"UPDATE jobs SET {', '.join(sets)} FROM {_BATCH} WHERE {_FENCE} RETURNING f.n, {finished}"
    )


_SQL = {kind: finish_sql(kind) for kind in FinishKind}


def finish_in(cur: Cursor, params: Sequence[JobFinishParams]) -> tuple[list[str], bool]:
    """Apply every finish inside the caller's transaction, dependants moved with them.
    Returns (refused ids, whether anything became ready or scheduled: wake workers)."""
    by_kind: dict[FinishKind, list[tuple[int, JobFinishParams]]] = {}
    for n, p in enumerate(params):
        by_kind.setdefault(p.kind, []).append((n, p))
    applied: dict[int, float] = {}
    for kind, numbered in by_kind.items():
        batch = [p for _, p in numbered]
        cur.execute(
            _SQL[kind],
            {
                "n": [n for n, _ in numbered],
                "id": [p.id for p in batch],
                "token": [p.token for p in batch],
                "result": [p.result for p in batch],
                "error": [p.error for p in batch],
                "reason": [p.reason for p in batch],
                "run_at": [p.run_at for p in batch],
                "finished_at": [p.finished_at for p in batch],
            },
        )
        applied.update((int(n), float(t)) for n, t in cur.fetchall())
    stale = [p.id for n, p in enumerate(params) if n not in applied]
    done = [p for n, p in enumerate(params) if n in applied]
    finished_at = {p.id: applied[n] for n, p in enumerate(params) if n in applied}
    wake = any(not FINISH[p.kind].ends_job for p in done)
    succeeded = [p.id for p in done if FINISH[p.kind].state is JobState.SUCCEEDED]
    failed = {p.id: why for p in done if (why := FINISH[p.kind].parent_failed) is not None}
    dropped = [p.id for p in done if FINISH[p.kind].attempt_outcome is None]
    if dropped:  # the row went: its history goes with it
        cur.execute("DELETE FROM attempts WHERE job_id = ANY(%s)", (dropped,))
        cur.execute("DELETE FROM job_logs WHERE job_id = ANY(%s)", (dropped,))
    kept = [p for p in done if FINISH[p.kind].attempt_outcome is not None]
    if kept:
        cur.execute(
            ATTEMPT_INSERT,
            (
                [p.id for p in kept],
                [p.token for p in kept],
                [p.attempt for p in kept],
                [p.worker_id for p in kept],
                [p.started_at for p in kept],
                [finished_at[p.id] for p in kept],
                [FINISH[p.kind].attempt_outcome for p in kept],
                [p.error for p in kept],
            ),
        )
    if succeeded or failed:
        # Dependants move in the same commit as their parent's finish.
        cur.execute(f"SELECT {NOW}")
        now = float(cur.fetchone()[0])
        wake = settle(cur, succeeded, failed, now) > 0 or wake
    return stale, wake
