-- queue_stats: (queue, state, jobs, oldest run_at) per queue and state with jobs; the
-- queued group's minimum is the oldest ready job. One scan of jobs (see BENCHMARKS.md
-- for what it costs at a million jobs).
SELECT queue, state, COUNT(*), MIN(run_at) FROM jobs GROUP BY queue, state
