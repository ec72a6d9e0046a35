-- Capped counts (sql/counts_capped.py): queue_stats for the operator's reads (`conveyor
-- status`, `conveyor queues`, the dashboard) on a store of more jobs than the cap. Each
-- statement reads at most cap + 2 entries of one index per (queue, state) or per state,
-- so a million jobs cost what ten thousand do; a count past the cap is shown as
-- "1000+". The same reads as PostgreSQL's and SQLite's, but MariaDB allows no outer
-- column in a derived table (no LATERAL): the ready count of a queue is a correlated
-- scalar probe instead, "is there an entry past %(limit)s?" (LIMIT %(limit)s, 1: at most
-- cap + 2 entries of jobs_ready), and only a queue with no such entry is counted (then
-- at most cap + 1 entries). Its indexes lead with the state (no partial indexes):
-- jobs_ready (state, queue, priority DESC, run_at, id), jobs_scheduled, jobs_running,
-- jobs_finished (state, finished_at); a waiting job is found by any of them.

-- name: queue_counts_probe
-- More jobs than the cap (at most cap + 1 rows read)?
SELECT COUNT(*) FROM (SELECT 1 FROM jobs LIMIT %(limit)s) AS t;

-- name: queue_counts_queued
-- (queue, ready jobs up to the cap, oldest run_at among them) for every queue with ready
-- jobs: a loose scan of jobs_ready (one index step per queue name, never every entry).
-- A queue with an entry past %(limit)s reads %(limit)s (capped; its oldest run_at is
-- then read by queue_counts_oldest); any other is counted exactly, with its oldest.
WITH RECURSIVE q(name) AS (
    SELECT MIN(queue) FROM jobs WHERE state = 'queued'
    UNION ALL
    SELECT (SELECT MIN(j.queue) FROM jobs AS j WHERE j.state = 'queued' AND j.queue > q.name)
    FROM q WHERE q.name IS NOT NULL
), o AS (
    SELECT q.name,
           (SELECT 1 FROM jobs AS j WHERE j.state = 'queued' AND j.queue = q.name
            LIMIT %(limit)s, 1) AS past
    FROM q WHERE q.name IS NOT NULL
)
SELECT o.name,
       CASE WHEN o.past IS NULL
            THEN (SELECT COUNT(*) FROM jobs AS j WHERE j.state = 'queued' AND j.queue = o.name)
            ELSE %(limit)s END,
       CASE WHEN o.past IS NULL
            THEN (SELECT MIN(j.run_at) FROM jobs AS j WHERE j.state = 'queued' AND j.queue = o.name)
            END
FROM o;

-- name: queue_counts_oldest
-- The oldest ready run_at of one queue past the cap: the first entry of each priority in
-- jobs_ready (state, queue, priority DESC, run_at), priorities found by a loose scan.
WITH RECURSIVE p(pr) AS (
    SELECT MAX(priority) FROM jobs WHERE state = 'queued' AND queue = %(queue)s
    UNION ALL
    SELECT (SELECT MAX(j.priority) FROM jobs AS j
            WHERE j.state = 'queued' AND j.queue = %(queue)s AND j.priority < p.pr)
    FROM p WHERE p.pr IS NOT NULL
)
SELECT MIN((SELECT MIN(j.run_at) FROM jobs AS j
            WHERE j.state = 'queued' AND j.queue = %(queue)s AND j.priority = p.pr))
FROM p WHERE p.pr IS NOT NULL;

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
