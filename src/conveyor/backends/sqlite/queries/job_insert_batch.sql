-- job_insert with positional parameters (the batch fast path): id, payload, headers,
-- then the fields every job of the batch shares.
INSERT INTO jobs (id, payload, headers, task, queue, state, priority, max_attempts, run_at,
                  created_at, timeout, lease, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
