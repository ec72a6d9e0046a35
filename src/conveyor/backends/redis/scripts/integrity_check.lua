-- integrity_check: audit one page of jobs, or of one index, atomically. Read-only.
-- KEYS[1] base "{prefix}:"   KEYS[2] jobs (id index zset)   KEYS[3] scheduled zset
-- KEYS[4] expiry zset        KEYS[5] workers zset (heartbeats)   KEYS[6] holders set
-- ARGV[1] mode: 'jobs' (ids of the id index), 'ready' / 'inflight' (members of
--   ready:<ARGV[3]> / inflight:<ARGV[3]>), 'scheduled', 'expiry' (members), 'attempts',
--   'logs', 'hash' (ids taken from key names found by SCAN)
-- ARGV[2] heartbeat TTL seconds   ARGV[3] queue or worker (else '')   ARGV[4..] items
-- Derived: job:<id>, attempts:<id>, logs:<id>, ready:<queue>, inflight:<worker>.
-- The caller lists the items without a lock; every item is re-checked here (still in
-- its index?) so a job that moved meanwhile is not reported. Problem kinds match the
-- SQLite audit where they mean the same; the index kinds are Redis's own.
-- Returns flattened triples {kind, job id, detail}.
local t = now()
local stale = t - tonumber(ARGV[2])
local mode, subject = ARGV[1], ARGV[3]
local out = {}
local function problem(kind, id, detail)
  out[#out + 1] = kind
  out[#out + 1] = id
  out[#out + 1] = detail
end
local KNOWN = {waiting = true, scheduled = true, queued = true, running = true,
  succeeded = true, dead = true, cancelled = true, expired = true}
local FINISHED = RULE_FINISHED

local function audit_job(id)
  local f = redis.call('HMGET', k_job(id), 'state', 'queue', 'worker_id', 'token',
    'finished_at', 'attempt', 'max_attempts', 'waiting_on', 'lease_until')
  local state, queue, worker = f[1], f[2] or '', f[3]
  if not state then
    problem('orphan_index_entry', id, 'id index entry of a missing job')
    return
  end
  if not KNOWN[state] then
    problem('unknown_state', id, "state '" .. state .. "' is not a conveyor state")
  end
  if state == 'running' then
    if not worker or f[4] == '0' then
      problem('running_without_claim', id, 'running with no worker or no token')
    else
      local beat = redis.call('ZSCORE', KEYS[5], worker)
      if not beat then
        problem('claim_without_live_worker', id, 'claimed by ' .. worker ..
          ', which is not registered')
      elseif tonumber(beat) < stale then
        problem('claim_without_live_worker', id, 'claimed by ' .. worker ..
          ', which is silent since its last heartbeat')
      end
      -- The rescue's last resort is an expired lease; an odd one never expires, so if
      -- its worker does not know the job (a lost claim) nothing ever takes it back.
      if number_or(f[9], nil) == nil then
        problem('running_without_lease', id, 'running under ' .. worker ..
          ' with lease_until ' .. (f[9] or 'absent') .. ', which never expires')
      end
      if redis.call('SISMEMBER', k_inflight(worker), id) == 0
          or redis.call('SISMEMBER', KEYS[6], worker) == 0 then
        problem('running_not_in_flight', id, 'running but not in the in-flight set of ' ..
          worker .. ': rescue cannot find it')
      end
    end
  elseif worker then
    problem('not_running_with_worker', id, state .. ' job still names worker ' .. worker)
  end
  if (state == 'queued' or state == 'scheduled') and f[5] then
    problem('active_with_finished_at', id, state .. ' job has finished_at set')
  end
  if FINISHED[state] then
    if not f[5] then
      problem('finished_without_finished_at', id, state .. ' job has no finished_at')
    end
    if not redis.call('ZSCORE', KEYS[4], expiry_member(state, queue, id)) then
      problem('finished_not_indexed', id, state .. ' job missing from the expiry index')
    end
  end
  if number_or(f[6], 0) > number_or(f[7], math.huge) then
    problem('attempts_over_max', id, 'attempt ' .. f[6] .. ' > max_attempts ' .. f[7])
  end
  -- Rows that can never move (docs/state-machine.md): no transition takes them out.
  if state == 'queued' and queue == '' then
    problem('queued_without_queue', id, "queued in queue '', which no worker can consume")
  end
  if state == 'waiting' then
    if number_or(f[8], 0) < 0 then
      problem('waiting_on_negative', id, 'waiting on ' .. f[8] .. ' parents, below zero')
    end
    local alive = false
    for _, parent in ipairs(redis.call('LRANGE', BASE .. 'deps:' .. id, 0, -1)) do
      local ps = redis.call('HGET', k_job(parent), 'state')
      if ps == 'waiting' or ps == 'scheduled' or ps == 'queued' or ps == 'running' then
        alive = true
        -- A parent tells the jobs of its children set when it ends: one missing there
        -- never hears of that end.
        if redis.call('SISMEMBER', BASE .. 'children:' .. parent, id) == 0 then
          problem('waiting_not_linked', id, 'waiting on ' .. parent ..
            ', which does not list it among its children: it never hears of its end')
        end
      end
    end
    -- a durable job parked by conveyor.wait_for waits for an event or its deadline; one
    -- held behind a failed job of its sequence waits on purpose, until released
    local reason = redis.call('HGET', k_job(id), 'reason')
    local held = reason and string.sub(reason, 1, #RULE_SEQUENCE_BLOCKED) == RULE_SEQUENCE_BLOCKED
    if not alive and not held and redis.call('HEXISTS', BASE .. 'steps:' .. id, 'waiting') == 0 then
      problem('waiting_without_parent', id,
        'waiting, but no parent of it can still finish: it never runs')
    end
  end
  local due = state == 'scheduled' and redis.call('ZSCORE', KEYS[3], id)
  if due and (due == 'inf' or tonumber(due) == math.huge) then
    problem('scheduled_never_due', id, 'scheduled at inf, which never comes')
  end
  if state == 'queued' and not redis.call('ZSCORE', k_ready(queue), id) then
    problem('queued_not_ready', id, 'queued but not in ready:' .. queue ..
      ': no worker will claim it')
  elseif state == 'scheduled' and not redis.call('ZSCORE', KEYS[3], id) then
    problem('scheduled_not_indexed', id, 'scheduled but not in the scheduled index: ' ..
      'it will never become due')
  end
end

local function state_of(id) return redis.call('HMGET', k_job(id), 'state', 'queue',
  'worker_id') end

for i = 4, #ARGV do
  local item = ARGV[i]
  if mode == 'jobs' then
    if redis.call('ZSCORE', KEYS[2], item) then audit_job(item) end
  elseif mode == 'ready' then
    if redis.call('ZSCORE', k_ready(subject), item) then
      local f = state_of(item)
      if f[1] ~= 'queued' or f[2] ~= subject then
        problem('orphan_ready_entry', item, 'ready:' .. subject .. ' entry of a ' ..
          (f[1] or 'missing') .. ' job')
      end
    end
  elseif mode == 'scheduled' then
    if redis.call('ZSCORE', KEYS[3], item) and state_of(item)[1] ~= 'scheduled' then
      problem('orphan_scheduled_entry', item, 'scheduled index entry of a job not scheduled')
    end
  elseif mode == 'inflight' then
    if redis.call('SISMEMBER', k_inflight(subject), item) == 1 then
      local f = state_of(item)
      if f[1] ~= 'running' or f[3] ~= subject then
        problem('orphan_in_flight_entry', item, 'in-flight entry of ' .. subject ..
          ' for a job it does not run')
      end
    end
  elseif mode == 'expiry' then
    local score = redis.call('ZSCORE', KEYS[4], item)
    if score then
      local state, queue, id = parse_expiry_member(item)
      local f = state_of(id)
      -- A missing hash whose entry is due is normal: pruning has not reached it yet.
      local moved = f[1] and (f[1] ~= state or f[2] ~= queue)
      if moved or (not f[1] and tonumber(score) > t + 1) then
        problem('orphan_expiry_entry', id, 'expiry entry ' .. state .. ' of a ' ..
          (f[1] or 'missing') .. ' job')
      end
    end
  elseif mode == 'attempts' or mode == 'logs' then
    local key = mode == 'attempts' and k_attempts(item) or k_logs(item)
    if redis.call('EXISTS', key) == 1 and redis.call('EXISTS', k_job(item)) == 0 then
      local kind = mode == 'attempts' and 'orphan_attempt' or 'orphan_log'
      problem(kind, item, redis.call('LLEN', key) .. ' ' .. mode .. ' record(s) of a missing job')
    end
  elseif mode == 'hash' then
    if redis.call('EXISTS', k_job(item)) == 1 and not redis.call('ZSCORE', KEYS[2], item) then
      problem('unindexed_job', item, 'job hash missing from the id index: no list shows it')
    end
  end
end
return out
