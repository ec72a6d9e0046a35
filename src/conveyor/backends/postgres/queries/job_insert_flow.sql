-- A job with flow-control columns (unique key, parents, limit key).
-- Differs from SQLite's: ON CONFLICT DO NOTHING on the jobs_unique index, because two
-- transactions may insert one key at once here (SQLite's write lock excludes that); the
-- engine reads a row count of 0 as "another transaction holds the key" (sql/flow.py).
INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, timeout, lease, unique_key, unique_until, waiting_on, pipe,
                  limit_key, reason, finished_at, headers, expires_at)
VALUES (%(id)s, %(task)s, %(queue)s, %(state)s, %(priority)s, %(payload)s, %(max_attempts)s,
        %(run_at)s, %(created_at)s, %(timeout)s, %(lease)s, %(unique_key)s, %(unique_until)s,
        %(waiting_on)s, %(pipe)s, %(limit_key)s, %(reason)s, %(finished_at)s,
        %(headers)s, %(expires_at)s)
ON CONFLICT (task, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
