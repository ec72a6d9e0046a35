-- conveyor SQLite schema, version 5 (expires): additive over version 4.
-- Applied once inside BEGIN IMMEDIATE; an ADD COLUMN whose column already exists is
-- skipped by the migrator, so re-running is a no-op.

-- When a job may no longer start (epoch seconds, NULL: never): a claimed job past it is
-- finished 'expired' by its worker without running (rules.is_expired); the promoter
-- sweeps queued/scheduled ones nobody claimed. Read by the claim and job views.
ALTER TABLE jobs ADD COLUMN expires_at REAL;

-- The sweep's index: only unstarted jobs that carry an expiry enter it (the hot path's
-- rows without one never do).
CREATE INDEX IF NOT EXISTS jobs_expiring ON jobs (expires_at)
    WHERE expires_at IS NOT NULL AND state IN ('queued', 'scheduled', 'waiting')
