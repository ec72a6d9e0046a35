-- job_insert_flow: insert jobs with unique keys, parents or limits; all or nothing.
-- KEYS[1] base "{prefix}:"
-- ARGV[1] result TTL seconds (for a job inserted cancelled: its parent already failed)
-- ARGV[2] JSON array of objects {id, task, queue, payload, priority, run_at ('' = now),
--   max_attempts, timeout (null), lease, unique_key (null), unique_until (null),
--   on_conflict ('keep' | 'replace'), depends_on [ids], pipe (0-3),
--   limit (null | [key, concurrency, rate_count, rate_period], null = none),
--   headers (JSON object text | null)};
--   numbers as decimal strings (Lua keeps 14 significant digits only)
-- Derived: job:<id>, deps:<id>, children:<id>, ready:<queue>, jobs, scheduled, expiry,
--   counts, wake, unique, limits (see _flow.lua).
-- The unique check and the insert are this one script, so two processes enqueueing
-- the same key at the same instant make one job. Errors "DUPLICATE <id>" and
-- "NOTFOUND <parent id>" are raised before anything is written.
-- Returns a JSON array of [id that stands, inserted (bool), replaced (bool)].
local t = now()
local jobs = cjson.decode(ARGV[2])
local bad = flow_validate(jobs)
if bad then return bad end
local ttl = tonumber(ARGV[1])
local standing, out = {}, {}
for i, p in ipairs(jobs) do out[i] = flow_insert(p, standing, t, ttl) end
flush_counts(K_COUNTS)
wake(K_WAKE, flow_woken)
return cjson.encode(out)
