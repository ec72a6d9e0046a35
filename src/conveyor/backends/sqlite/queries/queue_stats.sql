-- queue_stats: (queue, state, jobs, oldest run_at) per queue and state with jobs; the
-- queued group's minimum is the oldest ready job. One scan of jobs; with kept counts on
-- (`conveyor queue-counts on`) queue_stats_kept.sql is read instead.
SELECT queue, state, COUNT(*), MIN(run_at) FROM jobs GROUP BY queue, state
