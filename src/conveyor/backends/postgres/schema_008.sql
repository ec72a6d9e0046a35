-- conveyor PostgreSQL schema, version 8 (an indexed sort): additive over version 7; the
-- twin of SQLite's schema_012.sql.

-- The dashboard's sort by task and its task filter at a million jobs: the next distinct
-- task is one step of this index (job_keys), and a task's jobs newest first a backward
-- range of it. The id in the listing's byte order (COLLATE "C", the dialect's
-- id_order). The task never changes after the insert.
CREATE INDEX IF NOT EXISTS jobs_task ON jobs (task, id COLLATE "C");
