-- The leases' statements (conveyor.backends.sql.leases). SQLite has none of its own:
-- it runs the engine's one-row statements (executemany). PostgreSQL sends the batch as
-- arrays (unnest), one statement for all of it, times from the server's clock.

-- name: job_extend_leases
UPDATE jobs SET lease_until = extract(epoch from clock_timestamp())::float8 + lease
FROM unnest(%(ids)s::text[], %(tokens)s::bigint[]) AS f(id, token)
WHERE jobs.id = f.id AND jobs.token = f.token AND jobs.state = 'running';

-- name: job_release_many
-- Graceful shutdown: back to ready, and the attempt is not counted.
UPDATE jobs SET state = 'queued', attempt = attempt - 1, worker_id = NULL, lease_until = NULL
FROM unnest(%(ids)s::text[], %(tokens)s::bigint[]) AS f(id, token)
WHERE jobs.id = f.id AND jobs.token = f.token AND jobs.state = 'running'
RETURNING jobs.id, jobs.token, jobs.attempt + 1, jobs.started_at,
          extract(epoch from clock_timestamp())::float8;

-- name: attempt_insert_many
-- Attempt rows from one array per column (a release's, a rescue's).
INSERT INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::text[], %s::float8[],
                     %s::float8[], %s::text[], %s::text[])
ON CONFLICT DO NOTHING;
