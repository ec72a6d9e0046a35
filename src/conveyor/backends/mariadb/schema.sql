-- conveyor MariaDB/MySQL schema, version 1: the same tables and columns as PostgreSQL's
-- (postgres/schema.sql), one for one, so records, tools and `conveyor migrate` read
-- every SQL store alike. InnoDB (row locks, FOR UPDATE SKIP LOCKED), utf8mb4.
-- Applied by the backend under GET_LOCK (connection.py); each statement ends with ';'
-- at the end of a line. Print it with `conveyor migrate-schema --sql`.
--
-- What differs from PostgreSQL, and why:
-- * Text that is indexed is VARCHAR (InnoDB indexes no TEXT without a prefix), at most
--   255 characters (ids are 26; queue, task and key names are short by design).
-- * Every table is utf8mb4_bin: ids, queues and keys compare and sort as bytes, as on
--   the other stores (PostgreSQL's COLLATE "C"), so the primary key serves listing
--   order and paging, and task "A" is not task "a" in the unique index.
-- * No partial indexes: each index leads with the state it serves instead.
-- * The column `key` of limits is spelled `key` in backquotes: KEY is a reserved word.
-- Times are epoch seconds (DOUBLE), as records carry them; payload, result and error
-- are JSON text (LONGTEXT), handed back byte for byte.

CREATE TABLE IF NOT EXISTS jobs (
    id               VARCHAR(255) NOT NULL PRIMARY KEY,
    task             VARCHAR(255) NOT NULL,
    queue            VARCHAR(255) NOT NULL,
    state            VARCHAR(16) NOT NULL,
    priority         INT NOT NULL DEFAULT 0,
    payload          LONGTEXT NOT NULL,
    attempt          INT NOT NULL DEFAULT 0,
    max_attempts     INT NOT NULL,
    rescues          INT NOT NULL DEFAULT 0,
    token            BIGINT NOT NULL DEFAULT 0,
    run_at           DOUBLE NOT NULL,
    created_at       DOUBLE NOT NULL,
    timeout          DOUBLE,
    lease            DOUBLE NOT NULL,
    worker_id        VARCHAR(255),
    lease_until      DOUBLE,
    cancel_requested INT NOT NULL DEFAULT 0,
    result           LONGTEXT,
    error            LONGTEXT,
    reason           TEXT,
    started_at       DOUBLE,
    finished_at      DOUBLE,
    progress         DOUBLE,
    progress_message TEXT,
    unique_key       VARCHAR(255),
    unique_until     DOUBLE,
    waiting_on       INT NOT NULL DEFAULT 0,
    pipe             INT NOT NULL DEFAULT 0,
    limit_key        VARCHAR(255),
    headers          TEXT,
    expires_at       DOUBLE,
    -- The claim: ready jobs per queue in priority order (PostgreSQL's jobs_ready).
    INDEX jobs_ready (state, queue, priority DESC, run_at, id),
    -- The promoter: scheduled jobs by due time; the expiry sweep and retention by state.
    INDEX jobs_scheduled (state, run_at),
    INDEX jobs_expiring (state, expires_at),
    INDEX jobs_finished (state, finished_at),
    -- Lease extension and rescue: running jobs by worker.
    INDEX jobs_running (state, worker_id),
    -- At most one holder per (task, unique_key); NULL keys never collide.
    UNIQUE INDEX jobs_unique (task, unique_key),
    INDEX jobs_limit_running (limit_key, state),
    -- the dashboard's sort by task (job_keys) and its task filter; InnoDB's secondary
    -- entries hold the primary key, so this is (task, id)
    INDEX jobs_task (task)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS attempts (
    job_id      VARCHAR(255) NOT NULL,
    token       BIGINT NOT NULL,
    attempt     INT NOT NULL,
    worker_id   VARCHAR(255),
    started_at  DOUBLE,
    finished_at DOUBLE,
    outcome     VARCHAR(32) NOT NULL,
    error       LONGTEXT,
    PRIMARY KEY (job_id, token)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS workers (
    id            VARCHAR(255) NOT NULL PRIMARY KEY,
    host          VARCHAR(255) NOT NULL,
    pid           INT NOT NULL,
    pid_started   DOUBLE,
    started_at    DOUBLE NOT NULL,
    heartbeat_at  DOUBLE NOT NULL,
    last_fetch_at DOUBLE,
    queues        TEXT NOT NULL,
    concurrency   INT NOT NULL,
    pool          VARCHAR(32) NOT NULL,
    running       INT NOT NULL DEFAULT 0
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS queues (
    name       VARCHAR(255) NOT NULL PRIMARY KEY,
    paused     INT NOT NULL DEFAULT 0,
    updated_at DOUBLE NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- seq orders a job's records as they were stored (SQLite's rowid).
CREATE TABLE IF NOT EXISTS job_logs (
    seq     BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id  VARCHAR(255) NOT NULL,
    attempt INT NOT NULL,
    ts      DOUBLE NOT NULL,
    level   VARCHAR(32) NOT NULL,
    logger  VARCHAR(255) NOT NULL,
    message LONGTEXT NOT NULL,
    INDEX job_logs_job (job_id, seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_deps (
    parent_id VARCHAR(255) NOT NULL,
    child_id  VARCHAR(255) NOT NULL,
    position  INT NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    INDEX job_deps_child (child_id, position)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS limits (
    `key`       VARCHAR(255) NOT NULL PRIMARY KEY,
    concurrency INT,
    rate_count  INT,
    rate_period DOUBLE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
CREATE TABLE IF NOT EXISTS limit_hits (
    `key` VARCHAR(255) NOT NULL,
    at    DOUBLE NOT NULL,
    INDEX limit_hits_key (`key`, at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Sequences: the last job enqueued with each key (SQLite's schema_007.sql).
CREATE TABLE IF NOT EXISTS sequences (
    `key` VARCHAR(255) NOT NULL PRIMARY KEY,
    tail  VARCHAR(255) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
-- Fair queues: each key's last place in its queue's round (rules.fair_place).
CREATE TABLE IF NOT EXISTS fair_keys (
    queue   VARCHAR(255) NOT NULL,
    `key`   VARCHAR(255) NOT NULL,
    last_at DOUBLE NOT NULL,
    PRIMARY KEY (queue, `key`)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
-- Limits changed while running: an operator's values win over the code's until reset.
CREATE TABLE IF NOT EXISTS limit_overrides (
    `key`       VARCHAR(255) NOT NULL PRIMARY KEY,
    concurrency INT,
    rate_count  INT,
    rate_period DOUBLE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS periodic_schedules (
    name          VARCHAR(255) NOT NULL PRIMARY KEY,
    spec          TEXT NOT NULL,
    last_slot     DOUBLE,
    last_fired_at DOUBLE,
    last_job_id   VARCHAR(255),
    next_slot     DOUBLE,
    -- schedules steered by operators (SQLite's schema_007.sql, PostgreSQL's 003)
    paused           TINYINT NOT NULL DEFAULT 0,
    run_requested_at DOUBLE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
-- Exactly once per slot: whichever worker inserts the row first enqueues the job.
CREATE TABLE IF NOT EXISTS periodic_slots (
    name     VARCHAR(255) NOT NULL,
    slot     DOUBLE NOT NULL,
    job_id   VARCHAR(255) NOT NULL,
    fired_at DOUBLE NOT NULL,
    PRIMARY KEY (name, slot)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Who did what from the dashboard and the CLI (conveyor audit, the dashboard's /audit);
-- the twin of SQLite's schema_006.sql and PostgreSQL's schema_002.sql. Written once per
-- action, read newest first by id, never updated. job_ids: a JSON array of at most
-- MAX_ACTION_IDS ids.
CREATE TABLE IF NOT EXISTS action_log (
    id      BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at      DOUBLE NOT NULL,
    actor   TEXT NOT NULL,
    source  TEXT NOT NULL,
    action  TEXT NOT NULL,
    count   INT NOT NULL DEFAULT 0,
    job_ids TEXT NOT NULL,
    detail  TEXT NOT NULL,
    host    TEXT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Version 2 (durable jobs): the twins of SQLite's schema_007.sql. No partial index:
-- the waiting steps' index leads with the state.
CREATE TABLE IF NOT EXISTS job_steps (
    job_id      VARCHAR(255) NOT NULL,
    pos         INT NOT NULL,
    name        VARCHAR(255) NOT NULL,
    state       VARCHAR(16) NOT NULL,
    result      LONGTEXT,
    error       LONGTEXT,
    attempts    INT NOT NULL DEFAULT 1,
    started_at  DOUBLE,
    finished_at DOUBLE,
    PRIMARY KEY (job_id, pos),
    INDEX job_steps_waiting (state, job_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_events (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id      VARCHAR(255) NOT NULL,
    name        VARCHAR(255) NOT NULL,
    payload     LONGTEXT NOT NULL,
    sent_at     DOUBLE NOT NULL,
    consumed_at DOUBLE,
    INDEX job_events_job (job_id, name, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Version 5 (search indexed after the fact; the twins of SQLite's schema_010.sql and
-- PostgreSQL's schema_006.sql; what reads and fills them is mariadb/search.py). Empty
-- and unread until `conveyor search-index on` (mariadb/search_index.sql): off by
-- default, and with it off no write notes anything (its triggers exist only while on).
-- Written since indexed: each row an inclusive range of job ids to index again (one
-- job's: lo = hi, noted by a row trigger; `on` adds one range over every job).
CREATE TABLE IF NOT EXISTS job_search_pending (
    n  BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    lo VARCHAR(255) NOT NULL,
    hi VARCHAR(255) NOT NULL,
    INDEX job_search_pending_lo (lo)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
-- One row while the index is on.
CREATE TABLE IF NOT EXISTS job_search_on (
    since DOUBLE NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
-- Each indexed job's text (task, queue, arguments, result, error, headers, log lines),
-- and whether the index may miss its words (wide: not ASCII, or a word over 84
-- characters, InnoDB's longest token; always a candidate). Case-insensitive: the
-- FULLTEXT index `on` adds (job_search_docs_ft) then folds case as the language does.
CREATE TABLE IF NOT EXISTS job_search_docs (
    job_id VARCHAR(255) NOT NULL PRIMARY KEY,
    doc    LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL,
    wide   TINYINT NOT NULL,
    INDEX job_search_docs_wide (wide, job_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
