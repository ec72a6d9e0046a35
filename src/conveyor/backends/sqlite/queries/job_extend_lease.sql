UPDATE jobs SET lease_until = :now + lease
WHERE id = :id AND token = :token AND state = 'running'
