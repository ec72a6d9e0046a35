-- periodic_fire: enqueue the slots of one schedule that no worker fired yet.
-- KEYS[1] base "{prefix}:"
-- ARGV[1] schedule name   ARGV[2] spec   ARGV[3] next_slot ('' = NULL)
-- ARGV[4] slot retention seconds   ARGV[5] result TTL seconds
-- ARGV[6] JSON array of [slot (decimal string), job object as in job_insert_flow]
-- ARGV[7] the "run now" request time the caller read ('' = none)
-- ARGV[8] JSON job object of that run ('' = none)
-- Derived: periodic (set of schedule names), periodic:<name> (hash: spec, last_slot,
--   last_fired_at, last_job_id, next_slot, paused, run_requested_at), slots:<name>
--   (zset slot -> slot: the slots fired), and the keys job_insert_flow writes.
-- A paused schedule (paused = '1', periodic_control.lua) fires no slot: the due ones
-- become its last_slot, so a resume does not catch them up. A pending "run now" whose
-- time is ARGV[7] is enqueued once (the field is deleted here), paused or not.
-- Exactly once per (schedule, slot): ZADD NX of the slot and the insert of its job are
-- this one script, so however many workers fire the same slot, one job is made, and a
-- worker killed at any moment leaves either both or neither. Slots older than the
-- oldest one fired minus the retention are pruned (only slots after the schedule's
-- last one are ever fired again). Returns the slots fired (decimal strings).
local t = now()
local name = ARGV[1]
local slots_key = BASE .. 'slots:' .. name
local record = BASE .. 'periodic:' .. name
local ttl = tonumber(ARGV[5])
local items = cjson.decode(ARGV[6])
local jobs = {}
for i, item in ipairs(items) do jobs[i] = item[2] end
local run = nil
if ARGV[8] ~= '' then
  run = cjson.decode(ARGV[8])
  jobs[#jobs + 1] = run
end
local bad = flow_validate(jobs)
if bad then return bad end
local fired, lowest, last = {}, nil, nil
local paused = redis.call('HGET', record, 'paused') == '1'
if paused then
  for _, item in ipairs(items) do
    local prev = redis.call('HGET', record, 'last_slot')
    if not prev or tonumber(prev) < tonumber(item[1]) then
      redis.call('HSET', record, 'last_slot', item[1])
    end
  end
  items = {}
end
for _, item in ipairs(items) do
  local slot, job = item[1], item[2]
  if redis.call('ZADD', slots_key, 'NX', slot, slot) == 1 then
    flow_insert(job, {}, t, ttl)
    fired[#fired + 1] = slot
    if not lowest or tonumber(slot) < lowest then lowest = tonumber(slot) end
    if not last or tonumber(slot) > tonumber(last[1]) then last = {slot, job.id} end
  end
end
redis.call('SADD', BASE .. 'periodic', name)
hset_nullable(record, {'spec', ARGV[2], 'next_slot', opt_num(ARGV[3])})
if lowest then
  redis.call('ZREMRANGEBYSCORE', slots_key, '-inf', '(' .. fmt(lowest - tonumber(ARGV[4])))
end
if last then
  local prev = redis.call('HGET', record, 'last_slot')
  if not prev or tonumber(prev) < tonumber(last[1]) then
    redis.call('HSET', record, 'last_slot', last[1], 'last_fired_at', fmt(t),
      'last_job_id', last[2])
  end
end
local requested = redis.call('HGET', record, 'run_requested_at')
if run and requested and tonumber(requested) == tonumber(ARGV[7]) then
  redis.call('HDEL', record, 'run_requested_at')
  flow_insert(run, {}, t, ttl)
  redis.call('HSET', record, 'last_fired_at', fmt(t), 'last_job_id', run.id)
end
flush_counts(K_COUNTS)
wake(K_WAKE, flow_woken)
return fired
