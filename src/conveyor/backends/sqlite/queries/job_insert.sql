INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, timeout, lease)
VALUES (:id, :task, :queue, :state, :priority, :payload, :max_attempts, :run_at,
        :created_at, :timeout, :lease)
