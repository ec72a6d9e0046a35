-- job_finished_histogram: jobs finished since :since, per :bucket_s-second bucket, queue
-- and state (the dashboard's throughput history). The finished_at range and the state
-- list let SQLite read the partial index jobs_finished (state, finished_at) only.
-- Buckets count from :since, so bucket n starts at :since + n * :bucket_s.
SELECT CAST((finished_at - :since) / :bucket_s AS INTEGER) AS bucket, queue, state, COUNT(*)
FROM jobs
WHERE state IN ('succeeded', 'dead', 'cancelled', 'expired') AND finished_at >= :since
GROUP BY bucket, queue, state
ORDER BY bucket, queue, state
