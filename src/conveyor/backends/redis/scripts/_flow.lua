-- _flow.lua: unique jobs and workflows, shared by job_insert_flow, periodic_fire and
-- the scripts that end jobs (job_finish, job_cancel, job_rescue, job_delete), so a
-- dependant moves in the same script as its parent's end (as SQLite's one transaction).
-- Prepended after _lib.lua; defines locals only (a script gets those it names).
--
-- Derived keys (same hash tag as KEYS[1]):
--   deps:<id>      list of the job's parent ids, in depends_on order
--   children:<id>  set of jobs waiting on this one (only while it is unfinished)
--   unique         hash "len(task):task" .. unique_key -> id of the job holding the key
--   limits         hash limit key -> "concurrency|rate_count|rate_period" ('' = none)
--   sequences      hash sequence key -> the last job enqueued with it (the next waits on it)
--   fair           hash "len(queue):queue" .. fair key -> the key's last place (run_at)
-- Job hash fields added: waiting_on, pipe, unique_key, unique_until, limit_key,
-- progress, progress_message, and flow = '1' on a job with parents or children (its
-- deps/children keys then get the job's result TTL when it finishes).

local function k_deps(id) return BASE .. 'deps:' .. id end
local function k_children(id) return BASE .. 'children:' .. id end
local K_UNIQUE, K_LIMITS = BASE .. 'unique', BASE .. 'limits'
local K_SEQUENCES, K_FAIR = BASE .. 'sequences', BASE .. 'fair'

-- A ready job's place in its queue's round (rule_fair_place: one step after its key's
-- last place, never before the job the claim takes next); the key's place moves there.
local function fair_place(queue, key, weight, t)
  local field = #queue .. ':' .. queue .. key
  local last = redis.call('HGET', K_FAIR, field)
  local head = redis.call('ZRANGE', k_ready(queue), 0, 0)[1]
  local head_at = head and redis.call('HGET', k_job(head), 'run_at')
  local at = rule_fair_place(last and tonumber(last), head_at and tonumber(head_at), t,
    tonumber(weight) or 1)
  redis.call('HSET', K_FAIR, field, fmt(at))
  return fmt(at)
end
local K_JOBS, K_SCHEDULED, K_EXPIRY = BASE .. 'jobs', BASE .. 'scheduled', BASE .. 'expiry'
local K_COUNTS, K_WAKE = BASE .. 'counts', BASE .. 'wake'
local K_WAITING = BASE .. 'waiting'
local flow_woken = 0 -- jobs made ready by this script (the caller wakes workers)

-- A job parked in the step that waits for `event` goes back to its queue: a sent
-- event's wait_for (job_event_send), or a join woken by the end of the job it joins
-- (settle: event 'join:<id>'). True when woken; the caller flushes counts, wakes workers.
local function wake_waiting(id, event, t)
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'queue', 'priority')
  if f[1] ~= 'waiting' or redis.call('HGET', k_steps(id), 'waiting') ~= event then
    return false
  end
  local ts = fmt(t)
  redis.call('HSET', key, 'state', 'queued', 'run_at', ts)
  redis.call('HDEL', k_steps(id), 'waiting')
  redis.call('ZREM', K_WAITING, id)
  redis.call('ZADD', k_ready(f[2]), ready_score(f[3], ts), id)
  count('waiting', f[2], -1)
  count('queued', f[2], 1)
  return true
end

local function is_final(state)
  return RULE_FINISHED[state] == true -- the finished states of conveyor/states.py
end

-- Put a JSON value first in a payload's args. Payloads are written by conveyor's codec
-- as {"args":[...],"kwargs":{...}}: splice the text, so numbers and empty containers
-- survive byte for byte (a cjson round trip would turn [] into {} and round floats).
local function prepend_arg(payload, value)
  local head = '{"args":['
  if string.sub(payload, 1, #head) == head then
    local rest = string.sub(payload, #head + 1)
    if string.sub(rest, 1, 1) == ']' then return head .. value .. rest end
    return head .. value .. ',' .. rest
  end
  local data = cjson.decode(payload)
  table.insert(data.args, 1, cjson.decode(value))
  return cjson.encode(data)
end

-- The parents' results for a child: pipe 1 the one result, pipe 2 the list in order.
local function piped_results(child, pipe)
  local parents = redis.call('LRANGE', k_deps(child), 0, -1)
  local results = {}
  for i, parent in ipairs(parents) do
    results[i] = redis.call('HGET', k_job(parent), 'result') or 'null'
  end
  if pipe == '1' then return results[1] or 'null' end
  return '[' .. table.concat(results, ',') .. ']'
end

-- The error an on_failure handler of `parent` is given: the parent's own, or for a parent
-- cancelled behind a failed dependency, that dependency's, followed back to the job that
-- failed (conveyor/rules.py failure_error; `seen` guards against a cycle).
local function failure_error(parent)
  local current, seen = parent, {}
  while current and not seen[current] do
    seen[current] = true
    local f = redis.call('HMGET', k_job(current), 'state', 'reason', 'error')
    if f[3] and f[3] ~= '' then return f[3] end
    if f[1] ~= 'cancelled' then return nil end
    current = rule_failed_dependency(f[2])
  end
  return nil
end

-- What happened to a failed parent, first argument of its on_failure handler.
local function failure_info(parent, why)
  local f = redis.call('HMGET', k_job(parent), 'state', 'reason')
  return '{"job_id":' .. cjson.encode(parent) .. ',"state":' .. cjson.encode(f[1] or 'deleted')
    .. ',"reason":' .. cjson.encode(f[2] or why) .. ',"error":' .. (failure_error(parent) or 'null')
    .. '}'
end

-- A job with parents or children ended: its workflow keys expire with it.
local function flow_expire(id, ttl)
  redis.call('EXPIRE', k_deps(id), ttl)
  redis.call('EXPIRE', k_children(id), ttl)
end

-- A waiting job whose wait is over: scheduled if its run_at is ahead, else ready.
local function ready_up(id, key, queue, priority, run_at, t)
  count('waiting', queue, -1)
  if number_or(run_at, 0) > t then
    redis.call('HSET', key, 'state', 'scheduled', 'waiting_on', '0')
    redis.call('ZADD', K_SCHEDULED, run_at, id)
    count('scheduled', queue, 1)
  else
    redis.call('HSET', key, 'state', 'queued', 'waiting_on', '0')
    redis.call('ZADD', k_ready(queue), ready_score(priority, run_at), id)
    count('queued', queue, 1)
  end
  flow_woken = flow_woken + 1
end

local function cancel_waiting(id, key, queue, reason, t, ttl, watched)
  redis.call('HSET', key, 'state', 'cancelled', 'reason', reason, 'finished_at', fmt(t),
    'waiting_on', '0')
  count('waiting', queue, -1)
  count('cancelled', queue, 1)
  finished(K_EXPIRY, id, 'cancelled', queue, ttl, t, watched)
  flow_expire(id, ttl)
end

-- Apply one parent's end (why nil: it succeeded) to one child, as rule_child_effect
-- (conveyor/rules.py CHILD_EFFECT) says; a child cancelled here joins `pending`.
local function child_of_ended(parent, child, why, t, ttl, pending)
  local key = k_job(child)
  local f = redis.call('HMGET', key, 'state', 'pipe', 'queue', 'priority', 'run_at',
    'payload', 'watched')
  if f[1] ~= 'waiting' then return end
  local effect = rule_child_effect(f[2], why == nil)
  if effect == 'count_down' then
    if redis.call('HINCRBY', key, 'waiting_on', -1) <= 0 then
      if f[2] == '1' or f[2] == '2' then
        redis.call('HSET', key, 'payload', prepend_arg(f[6], piped_results(child, f[2])))
      end
      ready_up(child, key, f[3], f[4], f[5], t)
    end
  elseif effect == 'release' then
    redis.call('HSET', key, 'payload', prepend_arg(f[6], failure_info(parent, why)))
    ready_up(child, key, f[3], f[4], f[5], t)
  elseif effect == 'hold' then
    redis.call('HSET', key, 'reason', rule_sequence_blocked_reason(parent, why))
  else
    local reason = why and rule_cancelled_reason(parent, why) or rule_not_needed_reason(parent)
    cancel_waiting(child, key, f[3], reason, t, ttl, f[7])
    pending[#pending + 1] = {child, RULE_WAS_CANCELLED}
  end
end

-- A workflow child moves; a job joining the ended one (member 'join:<id>' of its
-- children set, conveyor.join) is woken in its join step, however the job ended.
local function dependant_of_ended(parent, child, why, t, ttl, pending)
  if string.sub(child, 1, 5) == 'join:' then
    if wake_waiting(string.sub(child, 6), 'join:' .. parent, t) then
      flow_woken = flow_woken + 1
    end
    return
  end
  child_of_ended(parent, child, why, t, ttl, pending)
end

-- Move the dependants of ended parents (the same walk as SQLite's flow_writes.settle):
-- `succeeded` parents first, then the `failed` ({id, why} pairs: dead, cancelled,
-- dropped, deleted) and every child cancelled on the way, transitively.
local function settle(succeeded, failed, t, ttl)
  local pending = {}
  for _, item in ipairs(failed) do pending[#pending + 1] = item end
  for _, parent in ipairs(succeeded) do
    for _, child in ipairs(redis.call('SMEMBERS', k_children(parent))) do
      dependant_of_ended(parent, child, nil, t, ttl, pending)
    end
  end
  while #pending > 0 do
    local item = table.remove(pending)
    for _, child in ipairs(redis.call('SMEMBERS', k_children(item[1]))) do
      dependant_of_ended(item[1], child, item[2], t, ttl, pending)
    end
  end
end

-- Unique keys: the holder's field in the unique hash.
local function unique_field(task, ukey) return #task .. ':' .. task .. ukey end

-- Settle a unique conflict for job params p (see job_insert_flow.lua for the fields).
-- Returns nil when the key is free (an ended holder past its window gives it up), or
-- {holder id, replaced} when a job holds it.
local function unique_conflict(p, run_at, t)
  local field = unique_field(p.task, p.unique_key)
  local holder = redis.call('HGET', K_UNIQUE, field)
  if not holder then return nil end
  local key = k_job(holder)
  local f = redis.call('HMGET', key, 'state', 'unique_until', 'queue', 'priority', 'run_at',
    'created_at')
  local state = f[1]
  if not state or (is_final(state) and (not f[2] or number_or(f[2], 0) <= t)) then
    redis.call('HDEL', K_UNIQUE, field)
    if state then redis.call('HDEL', key, 'unique_key', 'unique_until') end
    return nil
  end
  if p.on_conflict ~= 'replace' or not (state == 'queued' or state == 'scheduled'
      or state == 'waiting') then
    return {holder, false}
  end
  -- Debounce: the newest arguments and run time win (the run time capped by max_wait
  -- from the first enqueue); a waiting job keeps waiting.
  if p.max_wait and p.max_wait ~= cjson.null then
    run_at = fmt(rule_debounced_run_at(tonumber(run_at), tonumber(f[6]), tonumber(p.max_wait)))
  end
  local new_state = state
  if state ~= 'waiting' then
    new_state = (tonumber(run_at) > t) and 'scheduled' or 'queued'
    if state == 'queued' then redis.call('ZREM', k_ready(f[3]), holder)
    else redis.call('ZREM', K_SCHEDULED, holder) end
    if new_state == 'queued' then
      redis.call('ZADD', k_ready(f[3]), ready_score(f[4], run_at), holder)
      flow_woken = flow_woken + 1
    else
      redis.call('ZADD', K_SCHEDULED, run_at, holder)
    end
    count(state, f[3], -1)
    count(new_state, f[3], 1)
  end
  local until_ = p.unique_until
  if until_ == cjson.null then until_ = false end
  hset_nullable(key, {'payload', p.payload, 'run_at', run_at, 'state', new_state,
    'unique_until', until_})
  return {holder, true}
end

-- Check a batch before writing anything (scripts do not roll back): no id twice, no id
-- that exists, every parent earlier in the batch or stored. Returns an error reply or nil.
local function flow_validate(jobs)
  local seen = {}
  for _, p in ipairs(jobs) do
    if seen[p.id] or redis.call('EXISTS', k_job(p.id)) == 1 then
      return redis.error_reply('DUPLICATE ' .. p.id)
    end
    for _, parent in ipairs(p.depends_on) do
      if not seen[parent] and redis.call('EXISTS', k_job(parent)) == 0 then
        return redis.error_reply('NOTFOUND ' .. parent)
      end
    end
    seen[p.id] = true
  end
  return nil
end

local function opt(v) if v == cjson.null or v == '' then return false end return v end

-- Insert one validated job (unique key, parents, limit); `standing` maps ids asked for
-- to the ids that stand (unique conflicts earlier in the batch). Returns {id, inserted,
-- replaced}, like InsertResult.
local function flow_insert(p, standing, t, ttl)
  local ts = fmt(t)
  local run_at = opt(p.run_at) or ts
  if opt(p.unique_key) then
    local conflict = unique_conflict(p, run_at, t)
    if conflict then
      standing[p.id] = conflict[1]
      return {conflict[1], false, conflict[2]}
    end
  end
  local state = (tonumber(run_at) > t) and 'scheduled' or 'queued'
  if opt(p.fair_key) and state == 'queued' and #p.depends_on == 0
      and not opt(p.sequence_key) then
    run_at = fair_place(p.queue, p.fair_key, p.fair_weight, t) -- queued whatever its place
  end
  local payload, reason, finished_at, waiting = p.payload, false, false, 0
  local pipe = tostring(p.pipe or 0)
  local parents, states = {}, {}
  for i, d in ipairs(p.depends_on) do
    parents[i] = standing[d] or d
    states[i] = redis.call('HGET', k_job(parents[i]), 'state')
  end
  local held = false -- a sequence's job behind a failed one, on_failure "block"
  if opt(p.sequence_key) then
    -- The key's last job is the one this waits on (none, or deleted: ready now).
    local tail = redis.call('HGET', K_SEQUENCES, p.sequence_key)
    redis.call('HSET', K_SEQUENCES, p.sequence_key, p.id)
    local tail_state = tail and redis.call('HGET', k_job(tail), 'state')
    if tail_state then parents[1], states[1] = tail, tail_state end
  end
  if #parents > 0 then
    -- Parents that ended already act as they would have when ending (rule_child_effect);
    -- conveyor/rules.py insert_decision is the same walk for SQLite.
    local failed
    for i, s in ipairs(states) do
      if RULE_ENDED_AT_INSERT[s] then failed = failed or i end
      if s ~= 'succeeded' then waiting = waiting + 1 end
    end
    local effect
    if pipe == RULE_PIPE_FAILURE then
      if states[1] == 'succeeded' then effect = rule_child_effect(pipe, true)
      elseif failed then effect = rule_child_effect(pipe, false) end
    elseif failed then
      effect = rule_child_effect(pipe, false)
    end
    if effect == 'hold' then
      state, held = 'waiting', true
      reason = rule_sequence_blocked_reason(parents[1], RULE_ENDED_AT_INSERT[states[1]])
    elseif effect == 'count_down' then
      waiting = 0 -- a sequence that skips failures: the failed job is passed over
    elseif effect == 'cancel' then
      state, waiting, finished_at = 'cancelled', 0, ts
      if pipe == RULE_PIPE_FAILURE then reason = rule_not_needed_reason(parents[1])
      else reason = rule_cancelled_reason(parents[failed], RULE_ENDED_AT_INSERT[states[failed]]) end
    elseif effect == 'release' then
      waiting = 0
      payload = prepend_arg(payload, failure_info(parents[1], RULE_FAILED_AT_INSERT))
    elseif waiting > 0 then
      state = 'waiting'
    elseif pipe == '1' or pipe == '2' then
      local results = {}
      for i, parent in ipairs(parents) do
        results[i] = redis.call('HGET', k_job(parent), 'result') or 'null'
      end
      payload = prepend_arg(payload, pipe == '1' and results[1]
        or '[' .. table.concat(results, ',') .. ']')
    end
  end
  local key = k_job(p.id)
  local limit = opt(p.limit)
  hset_nullable(key, {'id', p.id, 'task', p.task, 'queue', p.queue, 'state', state,
    'priority', p.priority, 'payload', payload, 'attempt', '0',
    'max_attempts', p.max_attempts, 'rescues', '0', 'token', '0', 'run_at', run_at,
    'created_at', ts, 'lease', p.lease, 'cancel_requested', '0', 'timeout', opt(p.timeout),
    'unique_key', opt(p.unique_key), 'unique_until', opt(p.unique_until),
    'waiting_on', tostring(waiting), 'pipe', pipe, 'limit_key', limit and limit[1],
    'reason', reason, 'finished_at', finished_at, 'flow', #parents > 0 and '1',
    'headers', opt(p.headers), 'expires_at', opt(p.expires_at)})
  if opt(p.expires_at) then redis.call('ZADD', BASE .. 'expiring', p.expires_at, p.id) end
  redis.call('ZADD', K_JOBS, 0, p.id)
  count(state, p.queue, 1)
  if state == 'queued' then
    redis.call('ZADD', k_ready(p.queue), ready_score(p.priority, run_at), p.id)
    flow_woken = flow_woken + 1
  elseif state == 'scheduled' then
    redis.call('ZADD', K_SCHEDULED, run_at, p.id)
    flow_woken = flow_woken + 1 -- a worker re-reads the earliest due time
  elseif state == 'cancelled' then
    finished(K_EXPIRY, p.id, 'cancelled', p.queue, ttl, t, false)
  end
  if #parents > 0 then
    redis.call('RPUSH', k_deps(p.id), unpack(parents))
    for i, parent in ipairs(parents) do
      -- An ended parent has settled its dependants already: only live ones are told
      -- (and a failed one a job is held behind: retried by hand, its success frees it).
      if held or not is_final(states[i]) then
        redis.call('SADD', k_children(parent), p.id)
        redis.call('HSET', k_job(parent), 'flow', '1')
      end
    end
    if state == 'cancelled' then flow_expire(p.id, ttl) end
  end
  if opt(p.unique_key) then
    redis.call('HSET', K_UNIQUE, unique_field(p.task, p.unique_key), p.id)
  end
  if limit then
    local conf = {}
    for i = 2, 4 do conf[i - 1] = opt(limit[i]) or '' end
    redis.call('HSET', K_LIMITS, limit[1], table.concat(conf, '|'))
  end
  standing[p.id] = p.id
  return {p.id, true, false}
end

-- Let a held job of a blocked sequence go on (sequence_release.lua): ready when it is
-- waiting behind a failed job with on_failure "block"; true if it was released.
local function sequence_release(id, t)
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'pipe', 'reason', 'queue', 'priority', 'run_at')
  if f[1] ~= 'waiting' or f[2] ~= RULE_PIPE_SEQUENCE then return false end
  if not f[3] or string.sub(f[3], 1, #RULE_SEQUENCE_BLOCKED) ~= RULE_SEQUENCE_BLOCKED then
    return false
  end
  redis.call('HDEL', key, 'reason')
  ready_up(id, key, f[4], f[5], f[6], t)
  return true
end
