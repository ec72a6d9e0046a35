"""SQL text shared by the PostgreSQL backend's modules.

Times come from the server's clock: :data:`NOW` is the current epoch second as a
double, evaluated when the statement runs (``clock_timestamp()``, not the transaction's
start), so leases and due times of every worker agree whatever their own clocks say.

Example:
    >>> "clock_timestamp()" in NOW
    True
"""

from __future__ import annotations

from conveyor.backends import decoding

#: The server's clock, as epoch seconds (double precision).
NOW = "extract(epoch from clock_timestamp())::float8"

#: The largest values of the integer columns (attempt, rescues: integer; token: bigint).
#: A row written around the API may hold them; one more would fail the statement (and
#: with it every claim of the queue, every rescue pass), so the counts saturate there
#: and :func:`count_at_limit` names the row's problem instead.
INT_MAX, BIGINT_MAX = 2**31 - 1, 2**63 - 1


def count_at_limit(*, attempt: int, token: int, rescues: int) -> str | None:
    """What is wrong with counts that cannot move on (None for a normal row): the
    worker or the rescue then ends the job dead with this as the reason.

    >>> count_at_limit(attempt=1, token=2, rescues=0) is None
    True
    >>> count_at_limit(attempt=INT_MAX, token=2, rescues=0)
    'attempt is at the limit of its column (2147483647)'
    """
    found = [
        f"{name} is at the limit of its column ({value})"
        for name, value, low, high in (
            ("attempt", attempt, -INT_MAX, INT_MAX),
            ("token", token, -BIGINT_MAX, BIGINT_MAX),
            ("rescues", rescues, -INT_MAX, INT_MAX),
        )
        if not low < value < high
    ]
    return "; ".join(found) or None


#: Column order of JobRecord: the columns are named as its fields (``decoding.JOB_NAMES``,
#: the same list as SQLite's rows.JOB_COLUMNS), so the two cannot drift apart.
JOB_COLUMNS = ", ".join(decoding.JOB_NAMES)

#: Plain jobs, many per statement: one array per column, unnested into rows. A job
#: whose run_at is still ahead of the server's clock is scheduled, else queued.
JOB_INSERT = f"""
INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, timeout, lease, headers, expires_at)
SELECT i.id, i.task, i.queue,
       CASE WHEN i.run_at > n.now THEN 'scheduled' ELSE 'queued' END,
       i.priority, i.payload, i.max_attempts, COALESCE(i.run_at, n.now), n.now,
       i.timeout, i.lease, i.headers, i.expires_at
FROM (SELECT {NOW} AS now) AS n,
     unnest(%s::text[], %s::text[], %s::text[], %s::int[], %s::text[], %s::int[],
            %s::float8[], %s::float8[], %s::float8[], %s::text[], %s::float8[])
       AS i(id, task, queue, priority, payload, max_attempts, run_at, timeout, lease, headers,
            expires_at)
"""

#: JobInsertBatchParams: ids, payloads and headers as arrays, the shared options once.
JOB_INSERT_BATCH = f"""
INSERT INTO jobs (id, payload, headers, task, queue, state, priority, max_attempts, run_at,
                  created_at, timeout, lease, expires_at)
SELECT i.id, i.payload, i.headers, %(task)s, %(queue)s,
       CASE WHEN %(run_at)s::float8 > n.now THEN 'scheduled' ELSE 'queued' END,
       %(priority)s, %(max_attempts)s, COALESCE(%(run_at)s::float8, n.now), n.now,
       %(timeout)s::float8, %(lease)s::float8, %(expires_at)s::float8
FROM (SELECT {NOW} AS now) AS n, unnest(%(ids)s::text[], %(payloads)s::text[], %(headers)s::text[])
       AS i(id, payload, headers)
"""
