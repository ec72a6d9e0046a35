INSERT INTO job_logs (job_id, attempt, ts, level, logger, message)
VALUES (:job_id, :attempt, :ts, :level, :logger, :message)
