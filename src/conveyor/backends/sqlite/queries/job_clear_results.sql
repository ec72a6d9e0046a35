-- A task's result_ttl: drop the results of its succeeded jobs that finished in the
-- window (reads the jobs_finished index by state and finished_at); the rows stay.
UPDATE jobs SET result = NULL
WHERE id IN (
    SELECT id FROM jobs
    WHERE state = 'succeeded'
      AND finished_at >= :finished_after AND finished_at < :finished_before
      AND task = :task AND result IS NOT NULL
    LIMIT :limit
)
