-- conveyor SQLite search index (sqlite/search.py): made by `conveyor search-index on`
-- (off by default); every statement is IF NOT
-- EXISTS or idempotent. `off` drops what this makes (sqlite/search.py drop_index).
--
-- Indexed after the fact: an insert, a finish, a retry or a delete appends the job's id
-- to job_search_pending (the triggers below, which exist only while the index is on, so
-- a store with the index off pays not one statement for it), and an indexer
-- (sqlite/search.py index_pending: the workers' search-indexer service, and each search
-- before it reads) indexes the pending jobs in batches, in the order they were
-- written. A search reads the index for every job not pending and matches the pending
-- ones (the short tail) row by row, so its answers are complete.

-- Each indexed job's integer rowid (jobs is WITHOUT ROWID; FTS5 needs one), given once
-- when the job is first indexed, so the index's rowid order is the order jobs were
-- written, and a re-indexed job keeps its place.
CREATE TABLE IF NOT EXISTS job_search_ids (
    n  INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE
);
-- An FTS5 index of each job's task, queue, arguments (payload), result, error (type,
-- message, traceback), headers and log lines. It keeps its own copy of the text: a job
-- is re-indexed by its rowid after the text it was indexed with is gone from jobs.
-- Tokenizer: unicode61 with '_' inside words, so identifiers (user_id, send_welcome)
-- are one word and dotted names (billing.total) a phrase; case and accents folded.
CREATE VIRTUAL TABLE IF NOT EXISTS job_search USING fts5(
    task, queue, args, result, error, headers, logs,
    tokenize="unicode61 tokenchars '_'"
);
-- A claim writes none of these columns: UPDATE OF keeps the hot path's claim free of
-- it. A finish that adds no text (a result of null, no error: what most jobs end with)
-- notes nothing: the job's entry is already right (search_match.py treats a null
-- result as no text). Log lines are noted as they are written (sql/logs.py). The insert
-- trigger costs enqueue_many ~20% while the index is on (a range row per transaction,
-- written by the insert's own code, cost less, but every store paid a statement per
-- enqueue for it, index on or off: the index is opt-in, so the cost is the opt-in's).
CREATE TRIGGER IF NOT EXISTS job_search_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_search_pending (lo, hi) VALUES (NEW.id, NEW.id);
END;
CREATE TRIGGER IF NOT EXISTS job_search_update
AFTER UPDATE OF task, queue, payload, result, error, headers ON jobs
WHEN NEW.task IS NOT OLD.task OR NEW.queue IS NOT OLD.queue
    OR NEW.payload IS NOT OLD.payload OR NEW.headers IS NOT OLD.headers
    OR coalesce(NEW.error, '') IS NOT coalesce(OLD.error, '')
    OR coalesce(nullif(NEW.result, 'null'), '') IS NOT coalesce(nullif(OLD.result, 'null'), '')
BEGIN
    INSERT INTO job_search_pending (lo, hi) VALUES (NEW.id, NEW.id);
END;
CREATE TRIGGER IF NOT EXISTS job_search_delete AFTER DELETE ON jobs BEGIN
    INSERT INTO job_search_pending (lo, hi) VALUES (OLD.id, OLD.id);
END;
-- The jobs already there (all of them, after an `off`) pending as one range, then on;
-- both only when it was off, so a second `on` is a no-op.
INSERT INTO job_search_pending (lo, hi) SELECT min(id), max(id) FROM jobs
    HAVING min(id) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM job_search_on);
INSERT INTO job_search_on (since) SELECT (julianday('now') - 2440587.5) * 86400.0
    WHERE NOT EXISTS (SELECT 1 FROM job_search_on)
