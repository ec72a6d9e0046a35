-- The claim's statements (conveyor.backends.sql.claim), the same names on every store.
-- PostgreSQL's differ from SQLite's: concurrent claimers skip each other's rows
-- (FOR UPDATE SKIP LOCKED), times are the server's clock (clock_timestamp(), so every
-- worker's leases agree), and the counts saturate at their column's limit.

-- name: job_promote_due
-- Scheduled jobs whose time has come become ready. SKIP LOCKED: two workers promoting
-- at once split the rows instead of one waiting for the other. Answers how many it
-- promoted and in how many seconds the next scheduled job is due (NULL: none), read
-- against the same clock reading, so that a worker whose claim came back empty knows
-- how long it may wait without asking again (work_wait): any job scheduled after this
-- statement comes with a notification (an insert's, a retry's).
WITH n AS (SELECT extract(epoch from clock_timestamp())::float8 AS now),
promoted AS (
  UPDATE jobs SET state = 'queued'
  WHERE id IN (SELECT id FROM jobs WHERE state = 'scheduled' AND run_at <= (SELECT now FROM n)
               FOR UPDATE SKIP LOCKED)
  RETURNING 1
)
SELECT (SELECT count(*) FROM promoted),
       (SELECT min(run_at) FROM jobs WHERE state = 'scheduled' AND run_at > (SELECT now FROM n))
         - (SELECT now FROM n);

-- name: job_claim
-- Up to "limit" ready jobs of one queue over the jobs_ready partial index; a paused
-- queue yields nothing. The counts saturate (2^63 - 2, 2^31 - 2): a count at its
-- column's limit is the row's problem (flagged by the decoder), not every claim's error.
-- limit_key last: the engine admits jobs that have one (conveyor.backends.sql.limits).
UPDATE jobs
SET state = 'running', worker_id = %(worker_id)s,
    token = least(token, 9223372036854775806) + 1, attempt = least(attempt, 2147483646) + 1,
    started_at = n.now, lease_until = n.now + lease
FROM (SELECT extract(epoch from clock_timestamp())::float8 AS now) AS n
WHERE jobs.id IN (
    SELECT id FROM jobs
    WHERE state = 'queued' AND queue = %(queue)s
      AND NOT EXISTS (SELECT 1 FROM queues WHERE name = %(queue)s AND paused = 1)
    ORDER BY priority DESC, run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
  )
RETURNING jobs.id, jobs.task, jobs.queue, jobs.payload, jobs.attempt, jobs.max_attempts,
          jobs.token, jobs.timeout, jobs.lease, jobs.run_at, jobs.started_at, jobs.rescues,
          jobs.priority, jobs.headers, jobs.expires_at, jobs.limit_key;

-- name: job_claim_ring
-- One chunk of a worker's many queues (conveyor.backends.queue_ring): the first job of
-- each non-empty, unpaused queue named in "queues" (JSON array text: one parameter
-- however many names, no array adaptation per name), in the array's order, up to
-- "limit" jobs; one statement. Each queue is one probe of jobs_ready for its first
-- unlocked job (LATERAL ... LIMIT 1 SKIP LOCKED), never a scan of its backlog.
UPDATE jobs
SET state = 'running', worker_id = %(worker_id)s,
    token = least(token, 9223372036854775806) + 1, attempt = least(attempt, 2147483646) + 1,
    started_at = n.now, lease_until = n.now + lease
FROM (SELECT extract(epoch from clock_timestamp())::float8 AS now) AS n
WHERE jobs.id IN (
    SELECT j.id FROM json_array_elements_text(%(queues)s::json) AS c(name)
    CROSS JOIN LATERAL (
      SELECT id FROM jobs
      WHERE state = 'queued' AND queue = c.name
      ORDER BY priority DESC, run_at, id
      LIMIT 1
      FOR UPDATE SKIP LOCKED
    ) AS j
    WHERE NOT EXISTS (SELECT 1 FROM queues WHERE name = c.name AND paused = 1)
    LIMIT %(limit)s
  )
RETURNING jobs.id, jobs.task, jobs.queue, jobs.payload, jobs.attempt, jobs.max_attempts,
          jobs.token, jobs.timeout, jobs.lease, jobs.run_at, jobs.started_at, jobs.rescues,
          jobs.priority, jobs.headers, jobs.expires_at, jobs.limit_key;
