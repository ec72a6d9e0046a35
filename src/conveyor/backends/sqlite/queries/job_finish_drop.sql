DELETE FROM jobs WHERE id = :id AND token = :token AND state = 'running'
