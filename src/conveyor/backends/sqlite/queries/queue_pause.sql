-- queue_pause: pause or resume a queue (an upsert of its flag), stamped :now.
INSERT INTO queues (name, paused, updated_at) VALUES (:queue, :paused, :now)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
