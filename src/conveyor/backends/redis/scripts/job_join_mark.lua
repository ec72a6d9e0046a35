-- job_join_mark: a job joins another (conveyor.join): mark it among the joined job's
-- dependants, so that its end, whatever it is, wakes the joiner in its join step.
-- KEYS[1] base "{prefix}:"
-- ARGV[1] id of the joined job   ARGV[2] id of the joining job
-- Derived: job:<id>, children:<id>.
-- The member 'join:<joiner>' of children:<id> is read by settle (_flow.lua), which every
-- script ending a job with field flow = '1' runs: only a joined job pays at its end.
-- Returns the joined job's state (marked only while it has not ended), false if gone.
local key = k_job(ARGV[1])
local state = redis.call('HGET', key, 'state')
if not state then return false end
if not is_final(state) then
  redis.call('SADD', k_children(ARGV[1]), 'join:' .. ARGV[2])
  redis.call('HSET', key, 'flow', '1')
end
return state
