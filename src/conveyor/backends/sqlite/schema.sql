-- conveyor SQLite schema, version 1. Applied once per file inside BEGIN IMMEDIATE.
-- Times are epoch seconds (REAL). Payload, result and error are JSON text, so every
-- argument, result and error is queryable with json_extract.
CREATE TABLE IF NOT EXISTS jobs (
    id               TEXT PRIMARY KEY,
    task             TEXT NOT NULL,
    queue            TEXT NOT NULL,
    state            TEXT NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    payload          TEXT NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    rescues          INTEGER NOT NULL DEFAULT 0,
    token            INTEGER NOT NULL DEFAULT 0,
    run_at           REAL NOT NULL,
    created_at       REAL NOT NULL,
    timeout          REAL,
    lease            REAL NOT NULL,
    worker_id        TEXT,
    lease_until      REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    result           TEXT,
    error            TEXT,
    reason           TEXT,
    started_at       REAL,
    finished_at      REAL
) WITHOUT ROWID;

-- The claim reads only this partial index: ready jobs per queue in priority order.
CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (queue, priority DESC, run_at, id)
    WHERE state = 'queued';
-- The promoter reads only this one: scheduled jobs by due time.
CREATE INDEX IF NOT EXISTS jobs_scheduled ON jobs (run_at) WHERE state = 'scheduled';
-- Lease extension and rescue read running jobs by worker.
CREATE INDEX IF NOT EXISTS jobs_running ON jobs (worker_id) WHERE state = 'running';

CREATE TABLE IF NOT EXISTS attempts (
    job_id      TEXT NOT NULL,
    token       INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    worker_id   TEXT,
    started_at  REAL,
    finished_at REAL,
    outcome     TEXT NOT NULL,
    error       TEXT,
    PRIMARY KEY (job_id, token)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS workers (
    id            TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    pid_started   REAL,
    started_at    REAL NOT NULL,
    heartbeat_at  REAL NOT NULL,
    last_fetch_at REAL,
    queues        TEXT NOT NULL,
    concurrency   INTEGER NOT NULL,
    pool          TEXT NOT NULL,
    running       INTEGER NOT NULL DEFAULT 0
);
