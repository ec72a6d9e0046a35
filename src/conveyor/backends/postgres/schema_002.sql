-- conveyor PostgreSQL schema, version 2 (operator actions log): additive over version 1.
-- Run by connection.migrate under the migration lock, with search_path = the schema.

-- Who did what from the dashboard and the CLI (conveyor audit, the dashboard's /audit);
-- the twin of SQLite's schema_006.sql. Written once per action, read newest first by
-- id, never updated. job_ids: a JSON array of at most MAX_ACTION_IDS ids.
CREATE TABLE IF NOT EXISTS action_log (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      double precision NOT NULL,
    actor   text    NOT NULL,
    source  text    NOT NULL,
    action  text    NOT NULL,
    count   integer NOT NULL DEFAULT 0,
    job_ids text    NOT NULL DEFAULT '[]',
    detail  text    NOT NULL DEFAULT '',
    host    text    NOT NULL DEFAULT ''
);
