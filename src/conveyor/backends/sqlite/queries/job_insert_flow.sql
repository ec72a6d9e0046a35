-- A job with flow-control columns (unique key, parents, limit key).
INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, timeout, lease, unique_key, unique_until, waiting_on, pipe,
                  limit_key, reason, finished_at, headers, expires_at)
VALUES (:id, :task, :queue, :state, :priority, :payload, :max_attempts, :run_at,
        :created_at, :timeout, :lease, :unique_key, :unique_until, :waiting_on, :pipe,
        :limit_key, :reason, :finished_at, :headers, :expires_at)
