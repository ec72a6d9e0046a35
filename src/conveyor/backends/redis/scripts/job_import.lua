-- job_import: insert whole jobs copied from another store (conveyor migrate), keeping
-- their state, attempt count, errors, attempt history and logs.
-- KEYS[1] base "{prefix}:"   KEYS[2] jobs (id index zset)   KEYS[3] scheduled zset
-- KEYS[4] expiry zset        KEYS[5] counts hash          KEYS[6] wake list
-- ARGV[1] result TTL seconds (a finished job's TTL starts again at the import)
-- ARGV[2] JSON array, one entry per job: [id, queue, state, priority, run_at,
--   [field, value, ...] (the hash; absent = NULL), [attempt JSON, ...], [log JSON, ...],
--   [parent id, ...] (workflow edges, in depends_on order), [[position, step JSON], ...],
--   [event JSON [name, payload], ...] (not consumed yet, oldest first),
--   the event a parked job waits for (false: not parked by a wait_for)]
-- Derived: job:<id>, attempts:<id>, logs:<id>, ready:<queue>, expiring, and the unique hash
-- (_flow.lua) for a job's unique_key.
-- Idempotent: an id that exists already is skipped, so a rerun after an interruption
-- never duplicates. States are checked by the caller (params.check_importable)
-- before anything is written. Returns the ids inserted.
local t = now()
local ttl = tonumber(ARGV[1])
local inserted = {}
local woken = 0
local joiners, ended = {}, {} -- parked joins {id, 'join:<child>'}, jobs imported ended
-- The unique key an imported job keeps: its own, unless another job holds it here (then
-- it comes without: two jobs never hold one key, and skipping the job would lose it). A
-- finished holder past its window gives the key up, as at an insert (_flow.lua).
local function import_unique(id, key)
  local f = redis.call('HMGET', key, 'task', 'unique_key')
  if not f[2] then return end
  local field = unique_field(f[1], f[2])
  local holder = redis.call('HGET', K_UNIQUE, field)
  if holder and holder ~= id then
    local h = redis.call('HMGET', k_job(holder), 'state', 'unique_until')
    if h[1] and not (is_final(h[1]) and (not h[2] or tonumber(h[2]) <= t)) then
      redis.call('HDEL', key, 'unique_key')
      return
    end
    if h[1] then redis.call('HDEL', k_job(holder), 'unique_key', 'unique_until') end
  end
  redis.call('HSET', K_UNIQUE, field, id)
end
local function push_all(key, items)
  for i = 1, #items, 1000 do
    redis.call('RPUSH', key, unpack(items, i, math.min(i + 999, #items)))
  end
end
for _, j in ipairs(cjson.decode(ARGV[2])) do
  local id, queue, state, priority, run_at = j[1], j[2], j[3], j[4], j[5]
  local key = k_job(id)
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, unpack(j[6]))
    import_unique(id, key)
    redis.call('ZADD', KEYS[2], 0, id)
    if #j[7] > 0 then push_all(k_attempts(id), j[7]) end
    if #j[8] > 0 then push_all(k_logs(id), j[8]) end
    if j[10] and #j[10] > 0 then -- durable steps, before finished() gives them its TTL
      for _, s in ipairs(j[10]) do redis.call('HSET', k_steps(id), s[1], s[2]) end
      redis.call('HSET', key, 'durable', '1')
    end
    if j[11] and #j[11] > 0 then -- events not consumed yet: a wait here takes them
      push_all(k_events(id), j[11])
      redis.call('HSET', key, 'durable', '1') -- its finish expires events:<id> too
    end
    -- Workflow edges (as flow_insert writes them): the parents in order, and the job in
    -- the children set of each parent not ended yet, here or still to come in this run.
    if #j[9] > 0 then
      push_all(k_deps(id), j[9])
      for _, parent in ipairs(j[9]) do
        local parent_state = redis.call('HGET', k_job(parent), 'state')
        if not is_final(parent_state) then
          redis.call('SADD', k_children(parent), id)
          if parent_state then redis.call('HSET', k_job(parent), 'flow', '1') end
        end
      end
    end
    if redis.call('EXISTS', k_children(id)) == 1 then redis.call('HSET', key, 'flow', '1') end
    if RULE_EXPIRE_UNCLAIMED[state] then -- in the expiry sweep's index, as at insert
      local expires_at = redis.call('HGET', key, 'expires_at')
      if expires_at then redis.call('ZADD', BASE .. 'expiring', number_or(expires_at, 0), id) end
    end
    if state == 'waiting' and j[12] then
      -- parked by a wait_for or a join, as job_event_wait parks: a send (a join: its
      -- child's end) wakes it, and the deadline sweep (job_wake_due) at run_at
      redis.call('HSET', k_steps(id), 'waiting', j[12])
      redis.call('ZADD', K_WAITING, run_at, id)
      if string.sub(j[12], 1, 5) == 'join:' then joiners[#joiners + 1] = {id, j[12]} end
    elseif state == 'waiting' then
      -- in no index: its last parent's end makes it ready (_flow.lua settle)
    elseif state == 'queued' then
      redis.call('ZADD', k_ready(queue), ready_score(priority, run_at), id)
      woken = woken + 1
    elseif state == 'scheduled' then
      redis.call('ZADD', KEYS[3], run_at, id)
      woken = woken + 1
    else
      finished(KEYS[4], id, state, queue, ttl, t, false)
      ended[#ended + 1] = id
    end
    count(state, queue, 1)
    inserted[#inserted + 1] = id
  end
end
-- Joins across an import (as job_join_mark marks): a joiner marks its child again, or is
-- woken when the child here has ended; a job imported ended wakes the joiners an earlier
-- import marked it with (count() above already counted each as waiting).
for _, pair in ipairs(joiners) do
  local child = string.sub(pair[2], 6)
  local child_state = redis.call('HGET', k_job(child), 'state')
  if is_final(child_state) then
    if wake_waiting(pair[1], pair[2], t) then woken = woken + 1 end
  else
    redis.call('SADD', k_children(child), 'join:' .. pair[1])
    if child_state then redis.call('HSET', k_job(child), 'flow', '1') end
  end
end
for _, id in ipairs(ended) do
  for _, mark in ipairs(redis.call('SMEMBERS', k_children(id))) do
    if string.sub(mark, 1, 5) == 'join:' and wake_waiting(string.sub(mark, 6), 'join:' .. id, t) then
      woken = woken + 1
    end
  end
end
flush_counts(KEYS[5])
wake(KEYS[6], woken)
return inserted
