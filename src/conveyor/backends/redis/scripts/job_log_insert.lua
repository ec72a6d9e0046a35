-- job_log_insert: append captured log records, bounded per job, with one marker.
-- KEYS[1] base "{prefix}:"
-- ARGV[1] maximum records kept per job   ARGV[2] marker message   ARGV[3] marker logger
-- ARGV[4] JSON array, one entry per job: [job_id, [record JSON, ...], [[attempt, ts], ...]]
--   (attempt and ts of each record as strings, to build the marker without re-encoding)
-- Derived: job:<id>, logs:<id>.
-- At most ARGV[1] records per job; the first record past the bound is replaced by the
-- marker (stored once: afterwards the list holds limit + 1 entries), later ones are
-- skipped. Records of a job that no longer exists are dropped: nothing could read them
-- and nothing would ever expire them. The list takes the job's TTL, so a finished job's
-- logs expire with it (finished() in _lib.lua covers logs written before the finish).
-- Returns the number of records stored, markers excluded.
local limit = tonumber(ARGV[1])
local stored = 0
for _, g in ipairs(cjson.decode(ARGV[4])) do
  local id, recs, meta = g[1], g[2], g[3]
  local job = k_job(id)
  if redis.call('EXISTS', job) == 1 then
    local key = k_logs(id)
    local have = redis.call('LLEN', key)
    local room = math.max(0, limit - have)
    local keep = math.min(room, #recs)
    for i = 1, keep, 1000 do
      redis.call('RPUSH', key, unpack(recs, i, math.min(i + 999, keep)))
    end
    stored = stored + keep
    if #recs > room and have <= limit then
      -- The marker takes the attempt and time of the first record it stands for.
      local m = meta[room + 1]
      redis.call('RPUSH', key, '{"attempt":' .. m[1] .. ',"ts":' .. m[2] ..
        ',"level":"WARNING","logger":' .. cjson.encode(ARGV[3]) .. ',"message":' ..
        cjson.encode(ARGV[2]) .. '}')
    end
    local ttl = redis.call('PTTL', job)
    if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
  end
end
return stored
