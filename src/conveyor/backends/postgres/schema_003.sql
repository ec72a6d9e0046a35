-- conveyor PostgreSQL schema, version 3 (schedules steered by operators): additive over 2.
-- Run by connection.migrate under the migration lock, with search_path = the schema.

-- The twin of SQLite's schema_007.sql: paused (1 while an operator paused the
-- schedule; every worker's periodic_fire skips its slots), run_requested_at (a pending
-- "run now", cleared by the worker that enqueues it, fenced on this value).
ALTER TABLE periodic_schedules ADD COLUMN IF NOT EXISTS paused smallint NOT NULL DEFAULT 0;
ALTER TABLE periodic_schedules ADD COLUMN IF NOT EXISTS run_requested_at double precision;
