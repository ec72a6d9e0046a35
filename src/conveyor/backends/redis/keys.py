"""Key layout of the Redis backend: every key under one prefix and one hash tag.

All keys share the hash tag ``{<prefix>}``, so on a Redis Cluster they hash to one slot
and every script can touch all of them atomically. Scripts receive the fixed keys in
``KEYS``; per-job, per-queue and per-worker keys are derived inside the scripts from
``KEYS[1]`` (the base, ``{<prefix>}:``), because a claim cannot know in advance which
jobs it will take. Same slot, so this is valid on a Cluster; ``docs/redis.md`` lists it.

Example:
    >>> k = Keys("conveyor")
    >>> k.job("j1"), k.ready("default")
    ('{conveyor}:job:j1', '{conveyor}:ready:default')
"""

from __future__ import annotations

from conveyor.errors import ConfigurationError


class Keys:
    """Builds every key name of one prefix. Mirror of the helpers in ``scripts/_lib.lua``."""

    def __init__(self, prefix: str) -> None:
        if not prefix or "{" in prefix or "}" in prefix:
            raise ConfigurationError(f"invalid Redis key prefix {prefix!r}: no braces, not empty")
        self.prefix = prefix
        #: passed as KEYS[1] to every script; scripts derive per-job keys from it
        self.base = "{" + prefix + "}:"
        #: zset of every job id, score 0: the lexical index behind job_list paging
        self.jobs = self.base + "jobs"
        #: zset id -> run_at of scheduled jobs (delays, retries with backoff)
        self.scheduled = self.base + "scheduled"
        #: set of worker ids that hold in-flight jobs (where rescue looks)
        self.holders = self.base + "holders"
        #: zset "state:len(queue):queue" + id -> expiry of finished jobs (index pruning)
        self.expiry = self.base + "expiry"
        #: zset id -> expires_at of jobs inserted with one (job_expire_due's index; an
        #: entry goes when its time has come, whatever its job became)
        self.expiring = self.base + "expiring"
        #: hash "state:queue" -> number of jobs (queue_stats without scanning)
        self.counts = self.base + "counts"
        #: zset worker id -> last heartbeat (server time)
        self.workers = self.base + "workers"
        #: list of wake tokens that inserts, releases and rescues push (LTRIM-bounded)
        self.wake = self.base + "wake"
        #: set of paused queue names (``conveyor queues pause``); the claim skips them
        self.paused = self.base + "paused"
        #: zset id -> deadline of jobs parked by conveyor.wait_for (job_wake_due's index;
        #: an entry goes when its job is woken or found no longer waiting)
        self.waiting = self.base + "waiting"

    def job(self, job_id: str) -> str:
        """Hash with the same fields as the SQLite ``jobs`` row (absent field = NULL)."""
        return f"{self.base}job:{job_id}"

    def attempts(self, job_id: str) -> str:
        """List of JSON attempt entries, oldest first (same TTL as the job)."""
        return f"{self.base}attempts:{job_id}"

    def logs(self, job_id: str) -> str:
        """List of JSON log records of a job (bounded; same TTL as the job)."""
        return f"{self.base}logs:{job_id}"

    def steps(self, job_id: str) -> str:
        """Hash position -> JSON step record of a durable job, and ``waiting`` -> the
        event it is parked on (same TTL as the job)."""
        return f"{self.base}steps:{job_id}"

    def events(self, job_id: str) -> str:
        """List of JSON ``[name, payload]`` events sent to a job and not consumed yet."""
        return f"{self.base}events:{job_id}"

    def done(self, job_id: str) -> str:
        """Short-lived list that gets one element when the job finishes (job_wait)."""
        return f"{self.base}done:{job_id}"

    def ready(self, queue: str) -> str:
        """Zset of ready jobs, score = -priority * 1e13 + run_at in ms, ties by id."""
        return f"{self.base}ready:{queue}"

    def inflight(self, worker_id: str) -> str:
        """Set of job ids a worker holds right now."""
        return f"{self.base}inflight:{worker_id}"

    def worker(self, worker_id: str) -> str:
        """Hash with the same fields as the SQLite ``workers`` row."""
        return f"{self.base}worker:{worker_id}"
