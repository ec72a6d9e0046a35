"""PostgreSQL's finish statements (``Dialect.finish_batch`` ``"arrays"``, see
:mod:`conveyor.backends.sql.finish`): one per finish kind, the batch's rows as arrays.

Built here rather than written in ``queries/finish.sql``: each is the engine's ``SET``
list for its kind (:func:`~conveyor.backends.sql.finish.finish_sets`, from
:data:`conveyor.rules.FINISH`) inside one writable CTE that also writes the attempt rows
(or deletes a gone row's history), twice (``_alone`` or not): fourteen statements that
would otherwise repeat the rule by hand. PostgreSQL only: writable CTEs and arrays.

Example:
    >>> "state = 'scheduled'" in FINISH_QUERIES["job_finish_many_retry"]
    True
"""

from __future__ import annotations

from conveyor.backends.postgres.sql import NOW
from conveyor.backends.sql.finish import finish_sets
from conveyor.rules import FINISH
from conveyor.states import FinishKind

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
#: The fence of a finish that commits before its answer is read: only jobs without
#: dependants (the others stay running, for a transaction that settles them).
_ALONE = " AND NOT EXISTS (SELECT 1 FROM job_deps WHERE parent_id = jobs.id)"
#: An array element's value; a time left out is the server's clock.
_VALUES = {
    "result": "f.result",
    "error": "f.error",
    "reason": "f.reason",
    "finished_at": "COALESCE(f.finished_at, n.now)",
    "run_at": "COALESCE(f.run_at, n.now)",
}


def finish_sql(kind: FinishKind, alone: bool = False) -> str:
    """The fenced statement applying ``FINISH[kind]`` to a batch, with its attempt rows
    (or, for a row that goes, the deletion of its history) in the same statement. A job
    named twice is changed once: the second finish finds it no longer running under its
    token, as it would in order. ``alone``: jobs that have dependants are left as they
    are (:data:`_ALONE`), and the answer need not look for dependants."""
    rule = FINISH[kind]
    fence = _FENCE + _ALONE if alone else _FENCE
    answer = _ANSWER_ALONE if alone else _ANSWER
    if rule.state is None:
        # The row went: its history goes with it.
        return (
            f"WITH done AS (DELETE FROM jobs USING {_BATCH} WHERE {fence} {_RETURNING}), "
            "gone_attempts AS (DELETE FROM attempts WHERE job_id IN (SELECT id FROM done)), "
            "gone_logs AS (DELETE FROM job_logs WHERE job_id IN (SELECT id FROM done)), "
            "gone_steps AS (DELETE FROM job_steps WHERE job_id IN (SELECT id FROM done)), "
            "gone_events AS (DELETE FROM job_events WHERE job_id IN (SELECT id FROM done)) "
            f"{answer}"
        )
    sets, _ = finish_sets(kind, _VALUES.__getitem__)
    return (
        f"WITH done AS (UPDATE jobs SET {sets} FROM {_BATCH} WHERE {fence} {_RETURNING}), "
        "attempt_rows AS (INSERT INTO attempts (job_id, token, attempt, worker_id, "
        "started_at, finished_at, outcome, error) SELECT id, token, attempt, worker_id, "
        f"started_at, finished_at, '{rule.attempt_outcome}', error FROM done "
        f"ON CONFLICT DO NOTHING) {answer}"
    )


#: ``job_finish_many_<kind>`` and ``job_finish_many_<kind>_alone``, by name.
FINISH_QUERIES = {
    f"job_finish_many_{kind.value}" + ("_alone" if alone else ""): finish_sql(kind, alone)
    for kind in FinishKind
    for alone in (False, True)
}

#: Attempt rows from one array per column (a release's, a rescue's).
ATTEMPT_INSERT = """
INSERT INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::text[], %s::float8[],
                     %s::float8[], %s::text[], %s::text[])
ON CONFLICT DO NOTHING
"""
