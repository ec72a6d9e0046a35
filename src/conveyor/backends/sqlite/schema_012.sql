-- conveyor SQLite schema, version 12 (an indexed sort): additive over version 11.

-- The dashboard's sort by task and its task filter at a million jobs: the next distinct
-- task is one step of this index (job_keys), and a task's jobs newest first a range of
-- it (jobs is WITHOUT ROWID: each entry holds the id, so this is (task, id)). The task
-- never changes after the insert: the claim and the finish never touch it; the insert
-- pays one entry (E2 +5.5% of CPU, BENCHMARKS.md "An indexed sort"). A queue index
-- was measured too and left out: +16-20% on the enqueue for a sort by queue.
CREATE INDEX IF NOT EXISTS jobs_task ON jobs (task);
