-- queue_stats_kept: queue_stats from the kept counts (queue_counts.sql, `conveyor
-- queue-counts on`): a row per (queue, state), not a million jobs; the oldest ready job
-- is one step into jobs_queued_since per queue.
SELECT c.queue, c.state, c.n,
       CASE WHEN c.state = 'queued' THEN
           (SELECT MIN(j.run_at) FROM jobs AS j WHERE j.state = 'queued' AND j.queue = c.queue)
       END
FROM queue_counts AS c
WHERE c.n > 0
