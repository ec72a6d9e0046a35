-- conveyor PostgreSQL schema, version 5 (flow control by key): additive over version 4.
-- Run by connection.migrate under the migration lock, with search_path = the schema.
-- The twin of SQLite's schema_009.sql (see there for what each table is for).

-- Sequences: the last job enqueued with each key (locked by the insert that appends).
CREATE TABLE IF NOT EXISTS sequences (
    key  text PRIMARY KEY,
    tail text COLLATE "C" NOT NULL
);

-- Limits changed while running: an operator's values win over the code's until reset.
CREATE TABLE IF NOT EXISTS limit_overrides (
    key         text PRIMARY KEY,
    concurrency integer,
    rate_count  integer,
    rate_period double precision
);

-- Fair queues: each key's last place in its queue's round (rules.fair_place).
CREATE TABLE IF NOT EXISTS fair_keys (
    queue   text NOT NULL,
    key     text NOT NULL,
    last_at double precision NOT NULL,
    PRIMARY KEY (queue, key)
);
