"""The Redis backend (``redis://``, ``rediss://``). See ``backend.py`` and ``docs/redis.md``.

Importing this package does not import redis-py: only ``backend`` does, so
``conveyor.backends.redis.retrying`` stays usable without the extra installed.
"""
