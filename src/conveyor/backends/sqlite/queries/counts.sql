-- Capped counts (sql/counts_capped.py): queue_stats for the operator's reads (`conveyor
-- status`, `conveyor queues`, the dashboard) on a store of more jobs than the cap, with
-- the kept counts off. Each statement reads at most cap + 1 entries of one partial index
-- per (queue, state) or per state, so a million jobs cost what ten thousand do; a count
-- that reaches the cap is shown as "10,000+". The same statements (placeholders aside) as PostgreSQL's.

-- name: queue_counts_probe
-- More jobs than the cap (at most cap + 1 rows read)?
SELECT COUNT(*) FROM (SELECT 1 FROM jobs LIMIT :limit) AS t;

-- name: queue_counts_queued
-- (queue, ready jobs up to the cap, oldest run_at among them) for every queue with ready
-- jobs: a loose scan of jobs_ready (one index step per queue name, never every entry),
-- then at most cap entries per queue. Below the cap the oldest run_at is exact.
WITH RECURSIVE q(name) AS (
    SELECT MIN(queue) FROM jobs WHERE state = 'queued'
    UNION ALL
    SELECT (SELECT MIN(j.queue) FROM jobs AS j WHERE j.state = 'queued' AND j.queue > q.name)
    FROM q WHERE q.name IS NOT NULL
)
SELECT q.name,
       (SELECT COUNT(*) FROM (SELECT 1 FROM jobs AS j
                              WHERE j.state = 'queued' AND j.queue = q.name LIMIT :limit) AS c),
       (SELECT MIN(m.run_at) FROM (SELECT j.run_at FROM jobs AS j
                                   WHERE j.state = 'queued' AND j.queue = q.name LIMIT :limit) AS m)
FROM q WHERE q.name IS NOT NULL;

-- name: queue_counts_oldest
-- The oldest ready run_at of one queue past the cap: the first entry of each priority in
-- jobs_ready (queue, priority DESC, run_at), priorities found by a loose scan.
WITH RECURSIVE p(pr) AS (
    SELECT MAX(priority) FROM jobs WHERE state = 'queued' AND queue = :queue
    UNION ALL
    SELECT (SELECT MAX(j.priority) FROM jobs AS j
            WHERE j.state = 'queued' AND j.queue = :queue AND j.priority < p.pr)
    FROM p WHERE p.pr IS NOT NULL
)
SELECT MIN((SELECT MIN(j.run_at) FROM jobs AS j
            WHERE j.state = 'queued' AND j.queue = :queue AND j.priority = p.pr))
FROM p WHERE p.pr IS NOT NULL;

-- name: queue_counts_active
-- (queue, jobs) of up to cap + 1 jobs in one active state ({state}, a literal: a partial
-- index WHERE state = '...' is used only for a literal): jobs_scheduled, jobs_running,
-- jobs_waiting (schema 11).
SELECT queue, COUNT(*) FROM (SELECT queue FROM jobs WHERE state = '{state}' LIMIT :limit) AS t
GROUP BY queue;

-- name: queue_counts_finished
-- The same for one finished state, the newest first (jobs_finished: state, finished_at),
-- so the queues seen are the recently busy ones.
SELECT queue, COUNT(*) FROM (
    SELECT queue FROM jobs WHERE state = '{state}' AND finished_at IS NOT NULL
    ORDER BY finished_at DESC LIMIT :limit
) AS t
GROUP BY queue;
