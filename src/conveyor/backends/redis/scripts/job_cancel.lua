-- job_cancel: queued/scheduled/waiting -> cancelled at once; running -> cancel requested.
-- KEYS[1] base "{prefix}:"   KEYS[2] scheduled zset   KEYS[3] expiry zset
-- KEYS[4] counts hash
-- ARGV[1] reason   ARGV[2] result TTL seconds   ARGV[3..] job ids
-- Derived: job:<id>, attempts:<id>, done:<id>, ready:<queue>; workflow keys of _flow.lua
-- (dependants of a cancelled job are cancelled in this script too).
-- A running job keeps running: its worker sees cancel_requested at the next lease
-- extension and finishes it as cancelled (fenced by its token). Unknown ids are skipped.
local t = now()
local ts = fmt(t)
local reason, ttl = ARGV[1], tonumber(ARGV[2])
local ended = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'queue', 'watched', 'flow')
  local state, queue = f[1], f[2]
  if RULE_CANCEL_AT_ONCE[state] then
    if state == 'queued' then
      redis.call('ZREM', k_ready(queue), id)
    elseif state == 'scheduled' then
      redis.call('ZREM', KEYS[2], id)
    end
    if f[4] then
      ended[#ended + 1] = {id, RULE_WAS_CANCELLED}
      flow_expire(id, ttl)
    end
    redis.call('HSET', key, 'state', 'cancelled', 'reason', reason, 'finished_at', ts)
    count(state, queue, -1)
    count('cancelled', queue, 1)
    finished(KEYS[3], id, 'cancelled', queue, ttl, t, f[3])
  elseif state == 'running' then
    redis.call('HSET', key, 'cancel_requested', '1', 'reason', reason)
  end
end
settle({}, ended, t, ttl) -- dependants: cancelled transitively (or failure handlers run)
flush_counts(KEYS[4])
wake(K_WAKE, flow_woken)
return #ARGV - 2
