-- queue_pause: pause or resume a queue (an upsert of its flag). The same statement as
-- SQLite's, but stamped with the server's clock (every worker agrees on it), so
-- :now is not read here.
INSERT INTO queues (name, paused, updated_at)
VALUES (%(queue)s, %(paused)s, extract(epoch from clock_timestamp())::float8)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
