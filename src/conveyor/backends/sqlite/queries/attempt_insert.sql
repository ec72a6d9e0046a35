INSERT OR IGNORE INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error)
VALUES (:id, :token, :attempt, :worker_id, :started_at, :finished_at, :outcome, :error)
