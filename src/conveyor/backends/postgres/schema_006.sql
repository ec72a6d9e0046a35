-- conveyor PostgreSQL schema, version 6 (search indexed after the fact): additive over
-- version 5. Run by connection.migrate under the migration lock, with search_path = the
-- schema. The twin of SQLite's schema_010.sql; what reads and fills these tables is
-- postgres/search.py. The index stays off until `conveyor search-index on` (its
-- trigram index needs the pg_trgm extension, which a role may not be allowed to create).

-- The former index (before version 6): a GIN on an expression of the hot jobs table,
-- kept by PostgreSQL in every write (E1 +93%). It goes; the new one is on its own table.
DROP INDEX IF EXISTS jobs_search_trgm;
DROP INDEX IF EXISTS jobs_search_wide;

-- Written since indexed: each row an inclusive range of job ids to index again. An
-- insert statement adds one row (its lowest and highest id: a statement trigger over
-- its rows), a finish, retry or other change of a searched column one row per job, a
-- delete one row per job. Rows are taken by the indexer and deleted by their n, so a
-- transaction that committed after a higher n was taken is still seen.
CREATE TABLE IF NOT EXISTS job_search_pending (
    n  bigserial PRIMARY KEY,
    lo text COLLATE "C" NOT NULL,
    hi text COLLATE "C" NOT NULL
);
-- One row while the index is on (`conveyor search-index on|off`).
CREATE TABLE IF NOT EXISTS job_search_on (
    since double precision NOT NULL
);
-- The indexed text of each job (postgres/search.py DOC: lower case, '_' removed, log
-- lines included), and whether it is ASCII (wide: not, so always a candidate).
CREATE TABLE IF NOT EXISTS job_search_docs (
    id   text COLLATE "C" PRIMARY KEY,
    doc  text NOT NULL,
    wide boolean NOT NULL
);
CREATE INDEX IF NOT EXISTS job_search_docs_wide ON job_search_docs (id) WHERE wide;

CREATE OR REPLACE FUNCTION job_search_note_insert() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_search_on) THEN
        INSERT INTO job_search_pending (lo, hi)
            SELECT min(id), max(id) FROM new_rows HAVING min(id) IS NOT NULL;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION job_search_note_update() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_search_on) THEN
        INSERT INTO job_search_pending (lo, hi) VALUES (NEW.id, NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION job_search_note_delete() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_search_on) THEN
        INSERT INTO job_search_pending (lo, hi) SELECT id, id FROM old_rows;
    END IF;
    RETURN NULL;
END $$;
-- Once per insert statement (a batch is one statement): not a row trigger per job.
DROP TRIGGER IF EXISTS job_search_insert ON jobs;
CREATE TRIGGER job_search_insert AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION job_search_note_insert();
-- A claim writes none of these columns. A finish that adds no text (a null result, no
-- error: what most jobs end with) does not even call the function: the job's entry is
-- already right (search_match.py treats a null result as no text); log lines are noted
-- as they are written (sql/logs.py). SQLite's search_index.sql: the same rule.
DROP TRIGGER IF EXISTS job_search_update ON jobs;
CREATE TRIGGER job_search_update AFTER UPDATE OF task, queue, payload, result, error, headers
    ON jobs FOR EACH ROW
    WHEN (OLD.task IS DISTINCT FROM NEW.task OR OLD.queue IS DISTINCT FROM NEW.queue
          OR OLD.payload IS DISTINCT FROM NEW.payload OR OLD.headers IS DISTINCT FROM NEW.headers
          OR coalesce(NEW.error, '') IS DISTINCT FROM coalesce(OLD.error, '')
          OR coalesce(nullif(NEW.result, 'null'), '')
             IS DISTINCT FROM coalesce(nullif(OLD.result, 'null'), ''))
    EXECUTE FUNCTION job_search_note_update();
DROP TRIGGER IF EXISTS job_search_delete ON jobs;
CREATE TRIGGER job_search_delete AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION job_search_note_delete();
