-- conveyor SQLite schema, version 10 (search indexed after the fact): the search
-- index's tables (sqlite/search.py). Applied once inside BEGIN IMMEDIATE; the index
-- itself, search_index.sql, is made by `conveyor search-index on` (off by default).

-- The former on-demand index (`conveyor search-index on` before version 10) kept its
-- FTS5 entries in the write, by triggers: it goes, and search_index.sql makes the new
-- one, filled after the fact by the indexer.
DROP TRIGGER IF EXISTS job_search_insert;
DROP TRIGGER IF EXISTS job_search_update;
DROP TRIGGER IF EXISTS job_search_delete;
DROP TABLE IF EXISTS job_search;
DROP VIEW IF EXISTS job_search_source;
DROP TABLE IF EXISTS job_search_ids;

-- Written since indexed: each row an inclusive range of job ids (lo..hi) to index
-- again. Inserts add one row per write transaction (a batch: its lowest and highest
-- id), finishes, retries and deletes one row per job (a trigger, search_index.sql).
-- The rowid is the order of the writes: SQLite has one writer at a time. Always
-- there, so the inserts' statement always compiles; it gains rows only while the
-- index is on (a row in job_search_on).
CREATE TABLE IF NOT EXISTS job_search_pending (
    n  INTEGER PRIMARY KEY,
    lo TEXT NOT NULL,
    hi TEXT NOT NULL
);
-- One row while the index is on (`conveyor search-index off` deletes it).
CREATE TABLE IF NOT EXISTS job_search_on (
    since REAL NOT NULL
);
