-- job_insert: insert a batch of jobs, all or nothing.
-- KEYS[1] base "{prefix}:"; the jobs index zset, scheduled zset, counts hash and wake
--         list are named from it (K_JOBS, ... in _flow.lua: same hash tag, same slot):
--         one key to send instead of five, on the path of every single enqueue
-- ARGV[1]: JSON array with one array per job: [id, task, queue, payload,
--       priority (integer string), run_at (decimal string, '' = now),
--       max_attempts (integer string),
--       timeout (decimal string, '' = NULL), lease (decimal string),
--       headers (JSON object text; optional, absent or '' = none),
--       expires_at (decimal string; optional, absent or '' = never)]
--       (one JSON string instead of 9 arguments per job: cjson decodes in C, and
--       redis-py packs one argument instead of thousands)
-- Derived: job:<id>, ready:<queue>, expiring (jobs with an expires_at).
-- Returns the number inserted, or an error "DUPLICATE <id>" before writing anything.
local t = now()
local ts = fmt(t)
local jobs = cjson.decode(ARGV[1])
local n = #jobs

-- All or nothing: look for existing ids first, one EXISTS per 500 keys (a duplicate is
-- rare, so the slow path that names it may be slow).
local seen = {}
for first = 1, n, 500 do
  local last = math.min(first + 499, n)
  local keys = {}
  for i = first, last do
    local id = jobs[i][1]
    if seen[id] then return redis.error_reply('DUPLICATE ' .. id) end
    seen[id] = true
    keys[#keys + 1] = k_job(id)
  end
  for i = first, last do jobs[i].key = keys[i - first + 1] end
  if redis.call('EXISTS', unpack(keys)) > 0 then
    for i = first, last do
      if redis.call('EXISTS', keys[i - first + 1]) == 1 then
        return redis.error_reply('DUPLICATE ' .. jobs[i][1])
      end
    end
  end
end

local index, scheduled, ready, ready_queues = {}, {}, {}, {}
local woken = 0
-- One field list reused for every job (fewer allocations on big batches); slots 2, 4,
-- 6, ... are overwritten per job. 'timeout' goes last so it can be left out.
local fields = {
  'id', '', 'task', '', 'queue', '', 'state', '', 'priority', '', 'payload', '',
  'attempt', '0', 'max_attempts', '', 'rescues', '0', 'token', '0', 'run_at', '',
  'created_at', ts, 'lease', '', 'cancel_requested', '0', 'timeout', ''}
for i = 1, n do
  local j = jobs[i]
  local id, queue, prio, run_at = j[1], j[3], j[5], j[6]
  local state = 'queued'
  if run_at == '' then run_at = ts elseif tonumber(run_at) > t then state = 'scheduled' end
  fields[2], fields[4], fields[6], fields[8], fields[10] = id, j[2], queue, state, prio
  fields[12], fields[16], fields[22], fields[26] = j[4], j[7], run_at, j[9]
  if j[8] ~= '' then
    fields[30] = j[8]
    redis.call('HSET', j.key, unpack(fields))
  else
    redis.call('HSET', j.key, unpack(fields, 1, 28))
  end
  if j[10] and j[10] ~= '' then redis.call('HSET', j.key, 'headers', j[10]) end
  if j[11] and j[11] ~= '' then
    redis.call('HSET', j.key, 'expires_at', j[11])
    redis.call('ZADD', BASE .. 'expiring', j[11], id) -- the sweep's index
  end
  index[#index + 1] = '0'
  index[#index + 1] = id
  if state == 'scheduled' then
    scheduled[#scheduled + 1] = run_at
    scheduled[#scheduled + 1] = id
    count('scheduled', queue, 1)
  else
    local r = ready[queue]
    if not r then
      r = {}
      ready[queue] = r
      ready_queues[#ready_queues + 1] = queue
    end
    r[#r + 1] = ready_score(prio, run_at)
    r[#r + 1] = id
    woken = woken + 1
  end
end
zadd_many(K_JOBS, index)
zadd_many(K_SCHEDULED, scheduled)
for _, queue in ipairs(ready_queues) do
  zadd_many(k_ready(queue), ready[queue])
  count('queued', queue, #ready[queue] / 2)
end
flush_counts(K_COUNTS)
-- Ready jobs wake that many idle workers; scheduled ones wake one, so it re-reads the
-- earliest due time (it may be sooner than the one it is sleeping towards).
if #scheduled > 0 then woken = woken + 1 end
wake(K_WAKE, woken)
return n
