-- job_promote_due: scheduled jobs whose run_at has come become ready.
-- KEYS[1] base "{prefix}:"   KEYS[2] scheduled zset   KEYS[3] counts hash
-- KEYS[4] wake list
-- ARGV[1] maximum number promoted by this call (the caller loops while it is reached)
-- Derived: job:<id>, ready:<queue>.
-- Returns {promoted, scanned}: scanned == ARGV[1] means more may be due.
local promoted, scanned = promote_due(KEYS[2], now(), tonumber(ARGV[1]))
flush_counts(KEYS[3])
wake(KEYS[4], promoted)
return {promoted, scanned}
