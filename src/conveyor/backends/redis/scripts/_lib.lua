-- _lib.lua: helpers shared by every script. Its definitions a script names are prepended
-- to it at load time (scripts.py), so every script is self-contained on the server
-- (one SHA per transition).
--
-- Derived keys: KEYS[1] is the base "{<prefix>}:". Per-job ("job:<id>",
-- "attempts:<id>", "done:<id>"), per-queue ("ready:<queue>") and per-worker
-- ("inflight:<worker>", "worker:<worker>") keys are built from it, because a claim or a
-- rescue learns ids and queues only while it runs. They share the hash tag of KEYS[1],
-- so they live in the same Cluster slot as every declared key.
--
-- Conventions: every "now" is the server's TIME (epoch seconds, microseconds). Absent
-- hash fields are SQL NULL. Times are stored as decimal strings, never via Lua
-- tostring (which keeps only 14 significant digits).

local BASE = KEYS[1]
local function k_job(id) return BASE .. 'job:' .. id end
local function k_attempts(id) return BASE .. 'attempts:' .. id end
local function k_logs(id) return BASE .. 'logs:' .. id end
local function k_steps(id) return BASE .. 'steps:' .. id end
local function k_events(id) return BASE .. 'events:' .. id end
local function k_done(id) return BASE .. 'done:' .. id end
local function k_ready(queue) return BASE .. 'ready:' .. queue end
local function k_inflight(worker) return BASE .. 'inflight:' .. worker end
local function k_worker(worker) return BASE .. 'worker:' .. worker end

local function fmt(x) return string.format('%.6f', x) end

local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- A hash written around the API may hold anything in a numeric field ('', 'abc',
-- '2.13e+16', 'nan'). Scripts read such fields only through these two, so an odd value
-- never makes a script fail half-way (Redis does not roll back the writes made before
-- an error): the job moves on, and the client, which decodes the same fields, refuses
-- it dead with a reason naming the field (conveyor/backends/decoding.py).
-- counter: a count (attempt, token, rescues) as a whole number in [0, 1e13), else 0
-- (%.14g, Lua's tostring, stays exact below 1e13).
local function counter(v)
  local n = tonumber(v)
  if not n or n ~= math.floor(n) or n < 0 or n >= 1e13 then return 0 end
  return n
end
-- number_or: any other number (priority, run_at, lease, lease_until); NaN or a
-- non-number is `default`.
local function number_or(v, default)
  local n = tonumber(v)
  if not n or n ~= n then return default end
  return n
end

-- Ready order is (priority DESC, run_at, id): score = -priority * 1e13 + run_at in ms,
-- members of equal score sort by id. Exact in a double while |priority| <= 899 (clamped
-- beyond) and run_at < year 2286; sub-millisecond run_at differences tie and go by id.
-- An odd priority or run_at scores as 0 (the job is claimed, and refused, soon).
local function ready_score(priority, run_at)
  local p = number_or(priority, 0)
  if p > 899 then p = 899 elseif p < -899 then p = -899 end
  local ms = math.floor(number_or(run_at, 0) * 1000)
  if ms < 0 then ms = 0 elseif ms > 9999999999999 then ms = 9999999999999 end
  return string.format('%.0f', -p * 1e13 + ms)
end

-- Optional plain arguments: '' is NULL. NULL becomes false, never nil: Lua tables with
-- nil holes have no reliable length.
local function opt_num(s) if s == '' then return false end return s end

-- Per (state, queue) counters, aggregated in the script and written once at the end.
-- flush_counts also writes the finished-job index entries finished() deferred (every
-- script that finishes a job changes counts, so it flushes both): one ZADD per script
-- call instead of one per job.
local counts = {}
local expiry_pending = {} -- expiry zset key -> {score, member, score, member, ...}
local function count(state, queue, delta)
  local f = state .. ':' .. queue
  counts[f] = (counts[f] or 0) + delta
end
local function flush_counts(key)
  for f, d in pairs(counts) do
    if d ~= 0 then redis.call('HINCRBY', key, f, d) end
  end
  for zkey, items in pairs(expiry_pending) do
    for i = 1, #items, 1000 do
      redis.call('ZADD', zkey, unpack(items, i, math.min(i + 999, #items)))
    end
  end
  expiry_pending = {}
end

-- Wake up to n idle workers blocked in BLPOP on the wake list. A blocked worker takes
-- its token at once, so tokens pile up only while nobody waits (a worker claims before
-- it waits: they would only cause spurious wake-ups). Past 64 the list is cut to its
-- newest 32, so a producer with no worker waiting pays the LTRIM once per 32 pushes
-- rather than on each (one command of a one-job insert's seven).
local function wake(key, n)
  if n <= 0 then return end
  if n > 64 then n = 64 end
  local t = {}
  for i = 1, n do t[i] = '1' end
  if redis.call('LPUSH', key, unpack(t)) > 64 then redis.call('LTRIM', key, 0, 31) end
end

-- Tell job_wait callers the job is finished (or gone). They BLMOVE the list onto itself,
-- so one element wakes every waiter; it expires because waiters re-check the hash first.
-- Only for jobs someone waits on (field "watched", set by job_watch): the common
-- fire-and-forget job pays nothing for it.
local function notify_done(id, watched)
  if not watched then return end
  local d = k_done(id)
  redis.call('RPUSH', d, '1')
  redis.call('EXPIRE', d, 300)
end

local function jstr(s)
  if not s then return 'null' end
  return cjson.encode(s)
end
local function jnum(s)
  if not s or s == '' then return 'null' end
  return s
end

-- One attempt entry, JSON with the fields of AttemptRecord (times kept verbatim; counts
-- through counter, so an odd one cannot make the entry invalid JSON).
local function add_attempt(id, attempt, token, worker, started, finished, outcome, err)
  redis.call('RPUSH', k_attempts(id),
    '{"job_id":' .. cjson.encode(id) .. ',"attempt":' .. string.format('%d', counter(attempt)) ..
    ',"token":' .. string.format('%d', counter(token)) ..
    ',"worker_id":' .. jstr(worker) .. ',"started_at":' .. jnum(started) ..
    ',"finished_at":' .. jnum(finished) .. ',"outcome":"' .. outcome ..
    '","error":' .. jstr(err) .. '}')
end

-- Finished-job index: "state:len(queue):queue" .. id, so pruning an expired hash still
-- knows which counter to decrement.
local function expiry_member(state, queue, id)
  return state .. ':' .. #queue .. ':' .. queue .. id
end
local function parse_expiry_member(m)
  local state, n = string.match(m, '^(%a+):(%d+):')
  local start = #state + #n + 3
  n = tonumber(n)
  return state, string.sub(m, start, start + n - 1), string.sub(m, start + n)
end

-- A job reached a finished state: start its result TTL and wake its waiters. Its
-- finished-job index entry is written by the script's flush_counts. durable: the job's
-- "durable" field (set by its first step or event): false skips the two EXPIREs of its
-- steps and events (the finish's hot path: a plain job pays nothing), nil does them.
local function finished(expiry_key, id, state, queue, ttl, t, watched, durable)
  redis.call('EXPIRE', k_job(id), ttl)
  redis.call('EXPIRE', k_attempts(id), ttl)
  redis.call('EXPIRE', k_logs(id), ttl)
  if durable ~= false then
    redis.call('EXPIRE', k_steps(id), ttl)
    redis.call('EXPIRE', k_events(id), ttl)
  end
  local items = expiry_pending[expiry_key]
  if not items then items = {}; expiry_pending[expiry_key] = items end
  items[#items + 1] = fmt(t + ttl)
  items[#items + 1] = expiry_member(state, queue, id)
  notify_done(id, watched)
end

-- HSET the values of a flat field/value list and HDEL the fields whose value is false.
local function hset_nullable(key, fields)
  local sets, dels = {}, {}
  for i = 1, #fields, 2 do
    local v = fields[i + 1]
    if v == false then dels[#dels + 1] = fields[i]
    else sets[#sets + 1] = fields[i]; sets[#sets + 1] = v end
  end
  if #sets > 0 then redis.call('HSET', key, unpack(sets)) end
  if #dels > 0 then redis.call('HDEL', key, unpack(dels)) end
end

-- ZADD many (score, member) pairs in chunks (Lua's unpack has a stack limit).
local function zadd_many(key, items)
  for i = 1, #items, 1000 do
    local last = math.min(i + 999, #items)
    redis.call("ZADD", key, unpack(items, i, last))
  end
end

-- Scheduled jobs that are due become ready, at most `limit` per call. Returns the number
-- promoted and the number of index entries read (== limit: call again).
local function promote_due(scheduled_key, t, limit)
  local ids = redis.call('ZRANGEBYSCORE', scheduled_key, '-inf', fmt(t), 'LIMIT', 0, limit)
  local promoted = 0
  for _, id in ipairs(ids) do
    local key = k_job(id)
    local f = redis.call('HMGET', key, 'state', 'queue', 'priority', 'run_at')
    if f[1] == 'scheduled' then
      redis.call('HSET', key, 'state', 'queued')
      redis.call('ZADD', k_ready(f[2]), ready_score(f[3], f[4]), id)
      count('scheduled', f[2], -1)
      count('queued', f[2], 1)
      promoted = promoted + 1
    end
  end
  if #ids > 0 then redis.call('ZREM', scheduled_key, unpack(ids)) end
  return promoted, #ids
end
