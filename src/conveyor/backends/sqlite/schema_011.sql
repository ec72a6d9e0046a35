-- conveyor SQLite schema, version 11 (capped counts): additive over version 10.

-- Waiting jobs (workflow children, parked durable jobs) by queue, so the operator's
-- capped counts (queries/counts.sql) read at most cap + 1 of them instead of scanning
-- every job for a state that has no other index. Partial: only jobs that wait enter it.
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (queue) WHERE state = 'waiting';
