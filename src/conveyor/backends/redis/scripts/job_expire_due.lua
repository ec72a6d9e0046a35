-- job_expire_due: jobs nobody started before their expires_at end 'expired' (the sweep;
-- RULE_EXPIRE_UNCLAIMED). Claimed ones are the worker's: it ends them at start.
-- KEYS[1] base "{prefix}:"   KEYS[2] scheduled zset   KEYS[3] expiry zset
-- KEYS[4] counts hash        KEYS[5] expiring zset (id -> expires_at, written at insert)
-- ARGV[1] result TTL seconds   ARGV[2] maximum number read by this call
-- Derived: job:<id>, done:<id>, ready:<queue>; workflow keys of _flow.lua (dependants
-- settled as behind a dead parent). An entry is dropped once read, whatever its job's
-- state: the index only ever holds expiries still to come.
-- Returns {expired, read}: read == ARGV[2] means more may be due.
local t = now()
local ts = fmt(t)
local ttl = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ts, 'LIMIT', 0, tonumber(ARGV[2]))
local ended, expired = {}, 0
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[5], id)
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'queue', 'watched', 'flow')
  local state, queue = f[1], f[2]
  if RULE_EXPIRE_UNCLAIMED[state] and queue then
    if state == 'queued' then
      redis.call('ZREM', k_ready(queue), id)
    elseif state == 'scheduled' then
      redis.call('ZREM', KEYS[2], id)
    end
    if f[4] then
      ended[#ended + 1] = {id, RULE_WAS_EXPIRED}
      flow_expire(id, ttl)
    end
    redis.call('HSET', key, 'state', 'expired', 'reason', RULE_EXPIRED_REASON,
      'finished_at', ts, 'waiting_on', '0')
    count(state, queue, -1)
    count('expired', queue, 1)
    finished(KEYS[3], id, 'expired', queue, ttl, t, f[3])
    expired = expired + 1
  end
end
settle({}, ended, t, ttl)
flush_counts(KEYS[4])
wake(K_WAKE, flow_woken)
return {expired, #due}
