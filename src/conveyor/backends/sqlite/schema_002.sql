-- conveyor SQLite schema, version 2 (operations). Additive and idempotent: applied over
-- version 1 inside BEGIN IMMEDIATE; only new tables and indexes.

-- Pause flags. A queue without a row is running; the claim reads this by primary key.
CREATE TABLE IF NOT EXISTS queues (
    name       TEXT PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL
) WITHOUT ROWID;

-- Captured log records of tasks, per job and attempt. The rowid orders them; the index
-- serves both "logs of job X" and the per-job count that bounds them.
CREATE TABLE IF NOT EXISTS job_logs (
    job_id  TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    ts      REAL NOT NULL,
    level   TEXT NOT NULL,
    logger  TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS job_logs_job ON job_logs (job_id);

-- Retention and purge read finished jobs by state and age. Partial: active jobs (the hot
-- path's rows) never enter it until they finish.
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (state, finished_at)
    WHERE finished_at IS NOT NULL;
