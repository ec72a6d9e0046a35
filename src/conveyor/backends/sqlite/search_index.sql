-- conveyor SQLite search index: not a schema version, created on demand by
-- `conveyor search-index on` (sqlite/search.py build_index) inside one write
-- transaction, dropped by `off`; every statement is IF NOT EXISTS (a re-run indexes
-- only what is missing). Off by default: it costs every insert and finish (docs/search.md).

-- An FTS5 index of each job's task, queue, arguments (payload), result, error and
-- headers (conveyor jobs --search, app.search: sqlite/search.py). jobs is WITHOUT ROWID,
-- so job_search_ids gives each job the integer rowid FTS5 needs; the index is
-- external-content (it keeps only its terms) over job_search_source. Tokenizer:
-- unicode61 with '_' inside words, so identifiers (user_id, send_welcome) are one word
-- and dotted names (billing.total) a phrase; case and accents folded.
CREATE TABLE IF NOT EXISTS job_search_ids (
    n  INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE
);
CREATE VIEW IF NOT EXISTS job_search_source AS
    SELECT s.n AS n, j.task AS task, j.queue AS queue, j.payload AS args,
           j.result AS result, j.error AS error, j.headers AS headers
    FROM job_search_ids s JOIN jobs j ON j.id = s.id;
CREATE VIRTUAL TABLE IF NOT EXISTS job_search USING fts5(
    task, queue, args, result, error, headers,
    content='job_search_source', content_rowid='n',
    tokenize="unicode61 tokenchars '_'"
);
-- Kept by triggers, so every write path (inserts, finishes, imports, the transactional
-- enqueue on the caller's connection) keeps it without code of its own. A claim writes
-- none of these columns: UPDATE OF keeps the hot path's claim free of it.
CREATE TRIGGER IF NOT EXISTS job_search_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_search_ids (id) VALUES (NEW.id);
    INSERT INTO job_search (rowid, task, queue, args, result, error, headers)
        VALUES (last_insert_rowid(), NEW.task, NEW.queue, NEW.payload, NEW.result,
                NEW.error, NEW.headers);
END;
CREATE TRIGGER IF NOT EXISTS job_search_update
AFTER UPDATE OF task, queue, payload, result, error, headers ON jobs BEGIN
    INSERT INTO job_search (job_search, rowid, task, queue, args, result, error, headers)
        SELECT 'delete', n, OLD.task, OLD.queue, OLD.payload, OLD.result, OLD.error,
               OLD.headers FROM job_search_ids WHERE id = OLD.id;
    INSERT INTO job_search (rowid, task, queue, args, result, error, headers)
        SELECT n, NEW.task, NEW.queue, NEW.payload, NEW.result, NEW.error, NEW.headers
        FROM job_search_ids WHERE id = NEW.id;
END;
CREATE TRIGGER IF NOT EXISTS job_search_delete AFTER DELETE ON jobs BEGIN
    INSERT INTO job_search (job_search, rowid, task, queue, args, result, error, headers)
        SELECT 'delete', n, OLD.task, OLD.queue, OLD.payload, OLD.result, OLD.error,
               OLD.headers FROM job_search_ids WHERE id = OLD.id;
    DELETE FROM job_search_ids WHERE id = OLD.id;
END;
-- Jobs written before this version: numbered, then indexed in one pass.
INSERT INTO job_search_ids (id) SELECT id FROM jobs WHERE id NOT IN (SELECT id FROM job_search_ids);
INSERT INTO job_search (job_search) VALUES ('rebuild')
