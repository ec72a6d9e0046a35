-- Capped counts (sql/counts_capped.py): queue_stats for the operator's reads (`conveyor
-- status`, `conveyor queues`, the dashboard) on a store of more jobs than the cap. Each
-- statement reads at most cap + 1 entries of one index per (queue, state) or per state,
-- so a million jobs cost what ten thousand do; a count past the cap is shown as
-- "1000+". The same reads as PostgreSQL's and SQLite's, but the loose scans of
-- jobs_ready (queue names; a capped queue's priorities) are walked one statement a step,
-- with constants: MariaDB's correlated subqueries read no range (a recursive CTE's step
-- scanned every ready entry: 4 s at a million jobs), its MIN/MAX over the DESC priority
-- is no index step, and no derived table may name an outer column. Its indexes lead
-- with the state (no partial indexes): jobs_ready (state, queue, priority DESC, run_at,
-- id), jobs_scheduled, jobs_running, jobs_finished (state, finished_at); a waiting job
-- is found by any of them.

-- name: queue_counts_probe
-- More jobs than the cap (at most cap + 1 rows read)?
SELECT COUNT(*) FROM (SELECT 1 FROM jobs LIMIT %(limit)s) AS t;

-- name: queue_counts_next_ready
-- The first queue name after %(after)s with ready jobs (one step of jobs_ready: the loose
-- scan, walked by counts_capped.py with a constant each time, since MariaDB reads a
-- correlated `queue > q.name` as a scan of every ready entry, not a range), its ready
-- jobs up to %(limit)s and their oldest run_at; a NULL name: no queue after it. The
-- subquery is uncorrelated, so it is read once, as a constant, and the count is a ref
-- of jobs_ready: one round trip a queue.
SELECT (SELECT MIN(queue) FROM jobs WHERE state = 'queued' AND queue > %(after)s),
       COUNT(*), MIN(run_at)
FROM (
    SELECT run_at FROM jobs
    WHERE state = 'queued'
      AND queue = (SELECT MIN(queue) FROM jobs WHERE state = 'queued' AND queue > %(after)s)
    LIMIT %(limit)s
) AS t;

-- name: queue_counts_next_priority
-- The highest priority below %(below)s with ready jobs in one queue, and its oldest
-- run_at: the first entry of jobs_ready (state, queue, priority DESC, run_at) past it.
SELECT priority, run_at FROM jobs
WHERE state = 'queued' AND queue = %(queue)s AND priority < %(below)s
ORDER BY priority DESC, run_at LIMIT 1;

-- name: queue_counts_active
-- (queue, jobs) of up to cap + 1 jobs in one active state ({state}, a literal) from an
-- index that leads with the state (jobs_scheduled, jobs_running; waiting: any of them).
SELECT queue, COUNT(*) FROM (SELECT queue FROM jobs WHERE state = '{state}' LIMIT %(limit)s) AS t
GROUP BY queue;

-- name: queue_counts_finished
-- The same for one finished state, the newest first (jobs_finished: state, finished_at),
-- so the queues seen are the recently busy ones.
SELECT queue, COUNT(*) FROM (
    SELECT queue FROM jobs WHERE state = '{state}' AND finished_at IS NOT NULL
    ORDER BY finished_at DESC LIMIT %(limit)s
) AS t
GROUP BY queue;
