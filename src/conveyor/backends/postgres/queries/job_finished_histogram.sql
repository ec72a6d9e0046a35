-- job_finished_histogram: jobs finished since since, per bucket_s-second bucket,
-- queue and state (the dashboard's throughput history); bucket n starts at
-- since + n * bucket_s (as on SQLite). Differs from SQLite's by more than spelling: the
-- bucket is clamped below 2**63 before the cast, so a finished_at written around the API
-- (infinity, NaN, 1e300) lands in the last bucket, as SQLite's saturating CAST puts it,
-- instead of failing the whole dashboard with "bigint out of range"; queues sort in
-- byte order (COLLATE "C"), as SQLite's do.
SELECT least(floor((finished_at - %(since)s) / %(bucket_s)s), 9223372036854774784)::bigint
       AS bucket, queue, state, count(*)
FROM jobs
WHERE state IN ('succeeded', 'dead', 'cancelled', 'expired') AND finished_at >= %(since)s
GROUP BY bucket, queue, state
ORDER BY bucket, queue COLLATE "C", state
