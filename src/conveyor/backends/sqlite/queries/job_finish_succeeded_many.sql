-- Successes of one batch in one statement (backend.py's _finish_in): :batch is a JSON
-- array of [id, token, result, finished_at, ...] (finish_batch.py). Each row is fenced
-- by its own token, as job_finish_succeeded; RETURNING names the rows that moved, so the
-- caller reports the others as refused. One statement instead of one per job: the
-- per-row cost left is SQLite's (the row and its index entries), not the statement's.
UPDATE jobs
SET state = 'succeeded', result = json_extract(f.value, '$[2]'),
    finished_at = json_extract(f.value, '$[3]'), worker_id = NULL, lease_until = NULL
FROM json_each(:batch) AS f
WHERE jobs.id = json_extract(f.value, '$[0]')
  AND jobs.token = json_extract(f.value, '$[1]')
  AND jobs.state = 'running'
RETURNING jobs.id
