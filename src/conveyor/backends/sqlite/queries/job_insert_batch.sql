-- job_insert with positional parameters (the batch fast path): id, payload, then the
-- fields every job of the batch shares.
INSERT INTO jobs (id, payload, task, queue, state, priority, max_attempts, run_at,
                  created_at, timeout, lease)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
