-- job_extend_leases: renew the leases a worker still holds; report lost claims.
-- KEYS[1] base "{prefix}:"
-- ARGV: pairs of id, token
-- Derived: job:<id>.
-- A lease is renewed (lease_until = server now + lease) only while the job is running
-- under that token. Returns, per pair, {held 0/1, cancel_requested 0/1}, flattened.
local t = now()
local out = {}
for b = 1, #ARGV, 2 do
  local id, token = ARGV[b], ARGV[b + 1]
  local key = k_job(id)
  local f = redis.call('HMGET', key, 'state', 'token', 'lease', 'cancel_requested')
  local held = 0
  if f[1] == 'running' and f[2] == token then
    local lease_until = fmt(t + number_or(f[3], 0)) -- an odd lease: due for rescue now
    redis.call('HSET', key, 'lease_until', lease_until)
    held = 1
  end
  out[#out + 1] = held
  out[#out + 1] = (f[4] == '1') and 1 or 0
end
return out
