-- conveyor PostgreSQL schema, version 8 (an indexed sort): additive over version 7; the
-- twin of SQLite's schema_012.sql.

-- The dashboard's sort by task or by queue, and its task and queue filters, at a
-- million jobs: the next distinct value is one step of these indexes (job_keys), and a
-- value's jobs newest first a backward range of one. The id in the listing's byte order
-- (COLLATE "C", the dialect's id_order). Neither column changes after the insert.
CREATE INDEX IF NOT EXISTS jobs_task ON jobs (task, id COLLATE "C");
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (queue, id COLLATE "C");
