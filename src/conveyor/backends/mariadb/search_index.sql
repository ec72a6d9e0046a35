-- conveyor MariaDB search index (mariadb/search.py): run by `conveyor search-index on`
-- (off by default), after the FULLTEXT index is added; each statement is idempotent.
-- `off` drops what this makes (search.py OFF). The twin of SQLite's search_index.sql.
--
-- Indexed after the fact: an insert, a finish, a retry or a delete appends the job's id
-- to job_search_pending (the row triggers below, which exist only while the index is
-- on, so a store with the index off runs not one statement more per write), and the
-- indexer (search.py search_index_catch_up: the workers' search-indexer service, and
-- each search before it reads) indexes the pending jobs in batches.
DROP TRIGGER IF EXISTS job_search_insert;
CREATE TRIGGER job_search_insert AFTER INSERT ON jobs FOR EACH ROW
    INSERT INTO job_search_pending (lo, hi) VALUES (NEW.id, NEW.id);
-- MariaDB has no UPDATE OF: the trigger runs on every update (a claim's too) and
-- compares. A finish that adds no text (a null result, no error: what most jobs end
-- with) notes nothing: the job's entry is already right (search_match.py treats a null
-- result as no text). Log lines are noted as they are written (sql/logs.py).
DROP TRIGGER IF EXISTS job_search_update;
CREATE TRIGGER job_search_update AFTER UPDATE ON jobs FOR EACH ROW
    IF NOT (NEW.task <=> OLD.task AND NEW.queue <=> OLD.queue
            AND NEW.payload <=> OLD.payload AND NEW.headers <=> OLD.headers
            AND COALESCE(NEW.error, '') <=> COALESCE(OLD.error, '')
            AND COALESCE(NULLIF(NEW.result, 'null'), '') <=> COALESCE(NULLIF(OLD.result, 'null'), ''))
    THEN INSERT INTO job_search_pending (lo, hi) VALUES (NEW.id, NEW.id); END IF;
DROP TRIGGER IF EXISTS job_search_delete;
CREATE TRIGGER job_search_delete AFTER DELETE ON jobs FOR EACH ROW
    INSERT INTO job_search_pending (lo, hi) VALUES (OLD.id, OLD.id);
