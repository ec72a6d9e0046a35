-- conveyor SQLite schema, version 2 (flow control): additive over version 1.
-- Applied once inside BEGIN IMMEDIATE; an ADD COLUMN whose column already exists is
-- skipped by the migrator, and everything else is IF NOT EXISTS, so re-running is a no-op.

-- Progress reported by a running task (throttled by the worker).
ALTER TABLE jobs ADD COLUMN progress REAL;
ALTER TABLE jobs ADD COLUMN progress_message TEXT;
-- Unique jobs: the key holds while the job is active, and after it finished until
-- unique_until (NULL: only while active). Expired holders are cleared by the insert.
ALTER TABLE jobs ADD COLUMN unique_key TEXT;
ALTER TABLE jobs ADD COLUMN unique_until REAL;
-- Workflows: parents not yet succeeded, and how parent results become arguments
-- (0: not passed, 1: the single parent's result first, 2: the list of results first).
ALTER TABLE jobs ADD COLUMN waiting_on INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN pipe INTEGER NOT NULL DEFAULT 0;
-- Limits: the concurrency / rate key this job counts against.
ALTER TABLE jobs ADD COLUMN limit_key TEXT;

CREATE UNIQUE INDEX IF NOT EXISTS jobs_unique ON jobs (task, unique_key)
    WHERE unique_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_limit_running ON jobs (limit_key)
    WHERE state = 'running' AND limit_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS job_deps (
    parent_id TEXT NOT NULL,
    child_id  TEXT NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS job_deps_child ON job_deps (child_id, position);

CREATE TABLE IF NOT EXISTS limits (
    key         TEXT PRIMARY KEY,
    concurrency INTEGER,
    rate_count  INTEGER,
    rate_period REAL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS limit_hits (
    key TEXT NOT NULL,
    at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS limit_hits_key ON limit_hits (key, at);

CREATE TABLE IF NOT EXISTS periodic_schedules (
    name          TEXT PRIMARY KEY,
    spec          TEXT NOT NULL,
    last_slot     REAL,
    last_fired_at REAL,
    last_job_id   TEXT,
    next_slot     REAL
) WITHOUT ROWID;
-- Exactly once per slot: whichever worker inserts the row first enqueues the job.
CREATE TABLE IF NOT EXISTS periodic_slots (
    name     TEXT NOT NULL,
    slot     REAL NOT NULL,
    job_id   TEXT NOT NULL,
    fired_at REAL NOT NULL,
    PRIMARY KEY (name, slot)
) WITHOUT ROWID
