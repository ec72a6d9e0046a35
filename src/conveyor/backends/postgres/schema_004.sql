-- conveyor PostgreSQL schema, version 4 (durable jobs): additive over version 3.
-- Run by connection.migrate under the migration lock, with search_path = the schema.
-- The twin of SQLite's schema_008.sql (see it for what each table holds).

CREATE TABLE IF NOT EXISTS job_steps (
    job_id      text COLLATE "C" NOT NULL,
    pos         integer NOT NULL,
    name        text NOT NULL,
    state       text NOT NULL,
    result      text,
    error       text,
    attempts    integer NOT NULL DEFAULT 1,
    started_at  double precision,
    finished_at double precision,
    PRIMARY KEY (job_id, pos)
);
CREATE INDEX IF NOT EXISTS job_steps_waiting ON job_steps (job_id) WHERE state = 'waiting';

CREATE TABLE IF NOT EXISTS job_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      text COLLATE "C" NOT NULL,
    name        text NOT NULL,
    payload     text NOT NULL,
    sent_at     double precision NOT NULL,
    consumed_at double precision
);
CREATE INDEX IF NOT EXISTS job_events_job ON job_events (job_id, name, id);
