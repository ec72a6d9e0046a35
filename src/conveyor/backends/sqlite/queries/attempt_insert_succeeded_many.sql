-- The attempt rows of job_finish_succeeded_many's batch (only rows it moved): the same
-- JSON array, [id, token, result, finished_at, attempt, worker_id, started_at].
INSERT OR IGNORE INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[4]'),
       json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[3]'),
       'succeeded', NULL
FROM json_each(:batch)
