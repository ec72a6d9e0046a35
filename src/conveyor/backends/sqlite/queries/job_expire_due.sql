-- job_expire_due: jobs nobody started before their expires_at end 'expired' (the sweep;
-- rules.EXPIRE_UNCLAIMED). Reads the jobs_expiring partial index (schema_005.sql) only.
-- The dependants of the ids returned are settled by the caller in this transaction.
UPDATE jobs
SET state = 'expired', reason = :reason, finished_at = :now, waiting_on = 0
WHERE id IN (
    SELECT id FROM jobs
    WHERE expires_at <= :now AND state IN ('queued', 'scheduled', 'waiting')
    ORDER BY expires_at
    LIMIT :limit
  )
RETURNING id
