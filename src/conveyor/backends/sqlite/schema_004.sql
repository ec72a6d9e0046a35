-- conveyor SQLite schema, version 4 (headers): additive over version 3.
-- Applied once inside BEGIN IMMEDIATE; an ADD COLUMN whose column already exists is
-- skipped by the migrator, so re-running is a no-op.

-- A job's headers: one JSON object of strings (conveyor/headers.py), NULL when none.
-- Read by the claim (current_job().headers), job views and export; never filtered on.
ALTER TABLE jobs ADD COLUMN headers TEXT
