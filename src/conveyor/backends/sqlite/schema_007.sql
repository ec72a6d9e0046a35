-- conveyor SQLite schema, version 7 (schedules steered by operators): additive over 6.
-- Applied once inside BEGIN IMMEDIATE; an ADD COLUMN whose column exists is skipped.

-- conveyor schedules pause|resume|run, the dashboard's /schedules. paused: 1 while an
-- operator paused the schedule (every worker's periodic_fire skips its slots);
-- run_requested_at: when "run now" was asked, until the worker that enqueues that run
-- clears it (exactly once: the clear is fenced on this value).
ALTER TABLE periodic_schedules ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE periodic_schedules ADD COLUMN run_requested_at REAL
