INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, timeout, lease, headers, expires_at)
VALUES (:id, :task, :queue, :state, :priority, :payload, :max_attempts, :run_at,
        :created_at, :timeout, :lease, :headers, :expires_at)
