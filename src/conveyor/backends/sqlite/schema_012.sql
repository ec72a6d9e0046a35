-- conveyor SQLite schema, version 12 (an indexed sort): additive over version 11.

-- The dashboard's sort by task or by queue, and its task and queue filters, at a
-- million jobs: the next distinct value is one step of these indexes (job_keys), and a
-- value's jobs newest first a range of one (jobs is WITHOUT ROWID: each entry holds the
-- id, so this is (task, id) and (queue, id)). Neither column changes after the insert:
-- the claim and the finish never touch them; the insert pays one entry each.
CREATE INDEX IF NOT EXISTS jobs_task ON jobs (task);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (queue);
