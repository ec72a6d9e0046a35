-- Scheduled jobs whose time has come become ready (reads the jobs_scheduled index).
UPDATE jobs SET state = 'queued' WHERE state = 'scheduled' AND run_at <= :now
