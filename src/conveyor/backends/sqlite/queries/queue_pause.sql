INSERT INTO queues (name, paused, updated_at) VALUES (:queue, :paused, :now)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
