-- conveyor SQLite schema, version 8 (durable jobs): additive over version 7.
-- Applied once inside BEGIN IMMEDIATE; IF NOT EXISTS makes a re-run a no-op.

-- One checkpoint per step call of a durable job (@app.step, conveyor.sleep,
-- conveyor.wait_for), by its position in the job body. Written by one fenced statement
-- per step; read once per replay; deleted with the job.
CREATE TABLE IF NOT EXISTS job_steps (
    job_id      TEXT NOT NULL,
    pos         INTEGER NOT NULL,
    name        TEXT NOT NULL,
    state       TEXT NOT NULL,
    result      TEXT,
    error       TEXT,
    attempts    INTEGER NOT NULL DEFAULT 1,
    started_at  REAL,
    finished_at REAL,
    PRIMARY KEY (job_id, pos)
) WITHOUT ROWID;
-- What jobs wait for an event (few rows): the send's wake-up and the deadline sweep.
CREATE INDEX IF NOT EXISTS job_steps_waiting ON job_steps (job_id) WHERE state = 'waiting';

-- Events sent to jobs (job.send): consumed oldest first by the job's wait_for(name);
-- a consumed event keeps its row (consumed_at) until its job is deleted.
CREATE TABLE IF NOT EXISTS job_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      TEXT NOT NULL,
    name        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    sent_at     REAL NOT NULL,
    consumed_at REAL
);
CREATE INDEX IF NOT EXISTS job_events_job ON job_events (job_id, name, id);
