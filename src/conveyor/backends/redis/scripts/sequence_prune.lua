-- sequence_prune: forget sequence keys with no active job (the pruner's sweep).
-- KEYS[1] base "{prefix}:"
-- ARGV[1] JSON array of [key, tail] pairs read by HSCAN of <base>sequences
-- A key goes while its tail is still the one read and that job succeeded or is gone
-- (expired with its result_ttl, purged): the next job of the key waits on nothing either
-- way. A tail that ended dead, cancelled or expired keeps the key (it may block the
-- next job). Returns how many keys went.
local seqs = BASE .. 'sequences'
local gone = 0
for _, pair in ipairs(cjson.decode(ARGV[1])) do
  local key, tail = pair[1], pair[2]
  if redis.call('HGET', seqs, key) == tail then
    local state = redis.call('HGET', k_job(tail), 'state')
    if not state or state == 'succeeded' then
      redis.call('HDEL', seqs, key)
      gone = gone + 1
    end
  end
end
return gone
