-- conveyor SQLite schema, version 9 (flow control by key): additive over version 8.
-- Applied once inside BEGIN IMMEDIATE; IF NOT EXISTS makes a re-run a no-op.

-- Sequences (@app.task(sequence_key=...)): the last job enqueued with each key. A new
-- job of the key waits on it (a job_deps edge), so the key's jobs run one at a time in
-- enqueue order. Written under the insert's write lock, read by the next insert only.
CREATE TABLE IF NOT EXISTS sequences (
    "key" TEXT PRIMARY KEY,
    tail  TEXT NOT NULL
) WITHOUT ROWID;

-- Limits changed while running (conveyor limits set): an operator's values, which win
-- over the code's (limits) until reset. NULL: that part keeps the code's value.
CREATE TABLE IF NOT EXISTS limit_overrides (
    "key"       TEXT PRIMARY KEY,
    concurrency INTEGER,
    rate_count  INTEGER,
    rate_period REAL
) WITHOUT ROWID;

-- Fair queues (@app.task(fair_key=...)): each key's last place in its queue's round. A
-- new job of the key is placed one step (FAIR_STEP / weight) after it, or at the
-- queue's head when the key has fallen behind, so keys take turns (rules.fair_place).
CREATE TABLE IF NOT EXISTS fair_keys (
    queue   TEXT NOT NULL,
    "key"   TEXT NOT NULL,
    last_at REAL NOT NULL,
    PRIMARY KEY (queue, "key")
) WITHOUT ROWID;
