-- The finish's statements of SQLite's own (conveyor.backends.sql.finish, Dialect
-- finish_batch "json"): a batch of successes only, each job once, travels as one JSON
-- array [[id, token, result, finished_at, attempt, worker_id, started_at], ...] that
-- json_each joins to the jobs by primary key. SQLite only: PostgreSQL sends arrays and
-- writes the attempt rows in the same statement (postgres/finish.py); every other
-- finish is the engine's one fenced statement per row.

-- name: job_finish_succeeded_many
-- Each row is fenced by its own token, as a single finish; RETURNING names the rows that
-- moved, so the caller reports the others as refused. One statement instead of one per
-- job: the per-row cost left is SQLite's (the row and its index entries), not the
-- statement's.
UPDATE jobs
SET state = 'succeeded', result = json_extract(f.value, '$[2]'),
    finished_at = json_extract(f.value, '$[3]'), worker_id = NULL, lease_until = NULL
FROM json_each(:batch) AS f
WHERE jobs.id = json_extract(f.value, '$[0]')
  AND jobs.token = json_extract(f.value, '$[1]')
  AND jobs.state = 'running'
RETURNING jobs.id;

-- name: attempt_insert_succeeded_many
-- The attempt rows of job_finish_succeeded_many's batch (only the rows it moved).
INSERT OR IGNORE INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[4]'),
       json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[3]'),
       'succeeded', NULL
FROM json_each(:batch);
