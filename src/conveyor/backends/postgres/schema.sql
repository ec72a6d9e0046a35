-- conveyor PostgreSQL schema, version 1. The same tables and columns as the SQLite
-- schema (sqlite/schema*.sql), one for one, so records, tools and `conveyor migrate`
-- read both alike. Applied by the backend inside one transaction holding
-- pg_advisory_xact_lock (connection.py), with search_path set to the URL's ?schema=,
-- so every name below is bare. Print it with `conveyor migrate-schema --sql`.
--
-- Times are epoch seconds (double precision), as records and params carry them.
-- Payload, result and error are JSON text (text, not jsonb: the stored value is handed
-- back byte for byte, and the hot path pays no JSON parse). Flags are integers 0/1 as in
-- SQLite.
--
-- Every job id (jobs.id and each column holding one: attempts.job_id, job_logs.job_id,
-- job_deps.parent_id and child_id, periodic_schedules.last_job_id, periodic_slots.job_id)
-- is text COLLATE "C": ids compare and sort as bytes, as on SQLite and Redis, whatever
-- collation the database was created with, so the primary key's index serves listing
-- order and --after paging, and the claim breaks ties in the same order as SQLite. All
-- of them alike: the planner uses an index only for a comparison in the index's own
-- collation, so a join of a "C" id with a default-collation one would scan.

CREATE TABLE IF NOT EXISTS jobs (
    id               text COLLATE "C" PRIMARY KEY,
    task             text NOT NULL,
    queue            text NOT NULL,
    state            text NOT NULL,
    priority         integer NOT NULL DEFAULT 0,
    payload          text NOT NULL,
    attempt          integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    rescues          integer NOT NULL DEFAULT 0,
    token            bigint NOT NULL DEFAULT 0,
    run_at           double precision NOT NULL,
    created_at       double precision NOT NULL,
    timeout          double precision,
    lease            double precision NOT NULL,
    worker_id        text,
    lease_until      double precision,
    cancel_requested integer NOT NULL DEFAULT 0,
    result           text,
    error            text,
    reason           text,
    started_at       double precision,
    finished_at      double precision,
    -- progress reported by a running task (throttled by the worker)
    progress         double precision,
    progress_message text,
    -- unique jobs: the key holds while active, and after it finished until unique_until
    unique_key       text,
    unique_until     double precision,
    -- workflows: parents not yet succeeded; how parent results become arguments
    waiting_on       integer NOT NULL DEFAULT 0,
    pipe             integer NOT NULL DEFAULT 0,
    -- limits: the concurrency / rate key this job counts against
    limit_key        text,
    -- a job's headers: one JSON object of strings (conveyor/headers.py), NULL when none;
    -- text, not jsonb, like payload: handed back byte for byte, never filtered on
    headers          text,
    -- when it may no longer start (epoch seconds, NULL: never): a claimed job past it is
    -- finished 'expired' by its worker, unrun; the pruner sweeps unstarted ones
    expires_at       double precision
) WITH (fillfactor = 90);  -- room on each page for HOT updates of the state columns

-- The claim reads only this partial index: ready jobs per queue in priority order.
CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (queue, priority DESC, run_at, id)
    WHERE state = 'queued';
-- The promoter reads only this one: scheduled jobs by due time.
CREATE INDEX IF NOT EXISTS jobs_scheduled ON jobs (run_at) WHERE state = 'scheduled';
-- Lease extension and rescue read running jobs by worker.
CREATE INDEX IF NOT EXISTS jobs_running ON jobs (worker_id) WHERE state = 'running';
-- The expiry sweep (job_expire_due) reads only unstarted jobs that carry an expiry.
CREATE INDEX IF NOT EXISTS jobs_expiring ON jobs (expires_at)
    WHERE expires_at IS NOT NULL AND state IN ('queued', 'scheduled', 'waiting');
-- Retention and purge read finished jobs by state and age.
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (state, finished_at)
    WHERE finished_at IS NOT NULL;
-- At most one holder per (task, unique_key); the insert settles conflicts on it.
CREATE UNIQUE INDEX IF NOT EXISTS jobs_unique ON jobs (task, unique_key)
    WHERE unique_key IS NOT NULL;
-- Running jobs per limit key (the claim counts them).
CREATE INDEX IF NOT EXISTS jobs_limit_running ON jobs (limit_key)
    WHERE state = 'running' AND limit_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS attempts (
    job_id      text COLLATE "C" NOT NULL,
    token       bigint NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text,
    started_at  double precision,
    finished_at double precision,
    outcome     text NOT NULL,
    error       text,
    PRIMARY KEY (job_id, token)
);

CREATE TABLE IF NOT EXISTS workers (
    id            text PRIMARY KEY,
    host          text NOT NULL,
    pid           integer NOT NULL,
    pid_started   double precision,
    started_at    double precision NOT NULL,
    heartbeat_at  double precision NOT NULL,
    last_fetch_at double precision,
    queues        text NOT NULL,
    concurrency   integer NOT NULL,
    pool          text NOT NULL,
    running       integer NOT NULL DEFAULT 0
);

-- Pause flags. A queue without a row is running; the claim reads this by primary key.
CREATE TABLE IF NOT EXISTS queues (
    name       text PRIMARY KEY,
    paused     integer NOT NULL DEFAULT 0,
    updated_at double precision NOT NULL
);

-- Captured log records of tasks, per job and attempt. seq stands in for SQLite's rowid:
-- it orders a job's records as they were stored.
CREATE TABLE IF NOT EXISTS job_logs (
    seq     bigint GENERATED ALWAYS AS IDENTITY,
    job_id  text COLLATE "C" NOT NULL,
    attempt integer NOT NULL,
    ts      double precision NOT NULL,
    level   text NOT NULL,
    logger  text NOT NULL,
    message text NOT NULL
);
CREATE INDEX IF NOT EXISTS job_logs_job ON job_logs (job_id, seq);

-- Workflow edges: child waits on parent; position orders a child's parents.
CREATE TABLE IF NOT EXISTS job_deps (
    parent_id text COLLATE "C" NOT NULL,
    child_id  text COLLATE "C" NOT NULL,
    position  integer NOT NULL,
    PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX IF NOT EXISTS job_deps_child ON job_deps (child_id, position);

-- Declared limits; the claim locks a key's row while it counts, so two workers never
-- both take the last slot.
CREATE TABLE IF NOT EXISTS limits (
    key         text PRIMARY KEY,
    concurrency integer,
    rate_count  integer,
    rate_period double precision
);
CREATE TABLE IF NOT EXISTS limit_hits (
    key text NOT NULL,
    at  double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS limit_hits_key ON limit_hits (key, at);

CREATE TABLE IF NOT EXISTS periodic_schedules (
    name          text PRIMARY KEY,
    spec          text NOT NULL,
    last_slot     double precision,
    last_fired_at double precision,
    last_job_id   text COLLATE "C",
    next_slot     double precision
);
-- Exactly once per slot: whichever worker inserts the row first enqueues the job.
CREATE TABLE IF NOT EXISTS periodic_slots (
    name     text NOT NULL,
    slot     double precision NOT NULL,
    job_id   text COLLATE "C" NOT NULL,
    fired_at double precision NOT NULL,
    PRIMARY KEY (name, slot)
);
