-- conveyor SQLite schema, version 6 (operator actions log): additive over version 5.
-- Applied once inside BEGIN IMMEDIATE; IF NOT EXISTS makes a re-run a no-op.

-- Who did what from the dashboard and the CLI (conveyor audit, the dashboard's /audit).
-- Written once per action, read newest first by id; never updated. job_ids is a JSON
-- array of at most MAX_ACTION_IDS ids (count says how many jobs were acted on).
CREATE TABLE IF NOT EXISTS action_log (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL    NOT NULL,
    actor   TEXT    NOT NULL,
    source  TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    count   INTEGER NOT NULL DEFAULT 0,
    job_ids TEXT    NOT NULL DEFAULT '[]',
    detail  TEXT    NOT NULL DEFAULT '',
    host    TEXT    NOT NULL DEFAULT ''
)
