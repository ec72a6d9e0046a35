-- Ids of finished jobs old enough to go (reads the jobs_finished partial index); the
-- caller deletes them with their attempts and logs in the same transaction.
SELECT id FROM jobs
WHERE state IN (SELECT value FROM json_each(:states))
  AND finished_at IS NOT NULL AND finished_at < :finished_before
LIMIT :limit
