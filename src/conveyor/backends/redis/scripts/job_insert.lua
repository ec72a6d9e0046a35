-- job_insert: insert a batch of jobs, all or nothing.
-- KEYS[1] base "{prefix}:"   KEYS[2] jobs (id index zset)   KEYS[3] scheduled zset
-- KEYS[4] counts hash        KEYS[5] wake list
-- ARGV[1]: JSON array with one array per job: [id, task, queue, payload,
--       priority (int), run_at (decimal string, '' = now), max_attempts (int),
--       timeout (decimal string, '' = NULL), lease (decimal string)]
--       (one JSON string instead of 9 arguments per job: cjson decodes in C, and
--       redis-py packs one argument instead of thousands)
-- Derived: job:<id>, ready:<queue>.
-- Returns the number inserted, or an error "DUPLICATE <id>" before writing anything.
local t = now()
local ts = fmt(t)
local jobs = cjson.decode(ARGV[1])
local n = #jobs
local seen = {}
for i = 1, n do
  local id = jobs[i][1]
  if seen[id] or redis.call('EXISTS', k_job(id)) == 1 then
    return redis.error_reply('DUPLICATE ' .. id)
  end
  seen[id] = true
end
local index, scheduled, ready, ready_queues = {}, {}, {}, {}
local woken = 0
for i = 1, n do
  local j = jobs[i]
  local id, queue, prio, run_at = j[1], j[3], string.format('%d', j[5]), j[6]
  local state = 'queued'
  if run_at == '' then run_at = ts elseif tonumber(run_at) > t then state = 'scheduled' end
  local fields = {
    'id', id, 'task', j[2], 'queue', queue, 'state', state, 'priority', prio,
    'payload', j[4], 'attempt', '0', 'max_attempts', string.format('%d', j[7]),
    'rescues', '0', 'token', '0', 'run_at', run_at, 'created_at', ts, 'lease', j[9],
    'cancel_requested', '0'}
  if j[8] ~= '' then
    fields[#fields + 1] = 'timeout'
    fields[#fields + 1] = j[8]
  end
  redis.call('HSET', k_job(id), unpack(fields))
  index[#index + 1] = '0'
  index[#index + 1] = id
  if state == 'scheduled' then
    scheduled[#scheduled + 1] = run_at
    scheduled[#scheduled + 1] = id
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
  count(state, queue, 1)
end
zadd_many(KEYS[2], index)
zadd_many(KEYS[3], scheduled)
for _, queue in ipairs(ready_queues) do zadd_many(k_ready(queue), ready[queue]) end
flush_counts(KEYS[4])
wake(KEYS[5], woken)
return n
