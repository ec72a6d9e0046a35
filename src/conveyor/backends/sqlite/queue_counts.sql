-- Kept counts (`conveyor queue-counts on`, sqlite/counts.py): not a schema step, run
-- on demand in one write transaction; IF NOT EXISTS makes a re-run a no-op.

-- Jobs per (queue, state), kept by the triggers below in the transaction of every write
-- to jobs, so `conveyor status`, `conveyor queues` and the dashboard read a few rows
-- instead of counting a million (BENCHMARKS.md). Off by default: each trigger costs
-- every insert, claim and finish some microseconds (python -m bench.count_cost). A count
-- back at 0 stays as a row: readers skip it, and the next job of the queue reuses it.
CREATE TABLE IF NOT EXISTS queue_counts (
    queue TEXT NOT NULL,
    state TEXT NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (queue, state)
) WITHOUT ROWID;

INSERT OR IGNORE INTO queue_counts (queue, state, n)
SELECT queue, state, COUNT(*) FROM jobs GROUP BY queue, state;

-- The oldest ready job per queue (status' "oldest ready") by one index step per queue;
-- jobs_ready leads with priority, so its order cannot answer MIN(run_at).
CREATE INDEX IF NOT EXISTS jobs_queued_since ON jobs (queue, run_at) WHERE state = 'queued';

-- The delete trigger comes last: its presence says the counts are whole (counts.py).
CREATE TRIGGER IF NOT EXISTS queue_counts_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO queue_counts (queue, state, n) VALUES (new.queue, new.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS queue_counts_update AFTER UPDATE OF state, queue ON jobs
WHEN old.state IS NOT new.state OR old.queue IS NOT new.queue BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;
    INSERT INTO queue_counts (queue, state, n) VALUES (new.queue, new.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS queue_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;
END;
