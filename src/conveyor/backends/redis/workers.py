"""Workers in the Redis backend: heartbeats, the list, and the rescue of the jobs of
workers that stopped beating.

A heartbeat and a deregistration are one script each; the rescue finds a lost worker's
jobs (``job_rescue.lua``), decides where each goes by the rules (``rules.rescue_state``,
poison isolation by ``rules.held_alone``) and moves them (``job_rescue_apply.lua``,
fenced by token, liveness re-checked in the same script).

Example:
    >>> b = RedisBackend("redis://localhost:6379/0?prefix=demo")  # doctest: +SKIP
    >>> [w.id for w in b.worker_list()]  # doctest: +SKIP
    []
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from conveyor.backends import decoding
from conveyor.backends.base import (
    JobRescueParams,
    RescueResult,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.backends.redis import reads
from conveyor.backends.redis.connection import Unavailable
from conveyor.backends.redis.hashes import json_text, opt_num
from conveyor.backends.redis.keys import Keys
from conveyor.backends.redis.scripts import Scripts
from conveyor.rules import (
    WORKER_LOST_ERROR,
    held_alone,
    rescue_charge,
    rescue_gives_back_attempt,
    rescue_state,
)
from conveyor.states import JobState


class RedisWorkersMixin:
    """The worker and rescue methods; mixed into :class:`RedisBackend`."""

    if TYPE_CHECKING:
        keys: Keys
        _client: Any
        _guard: Unavailable
        _scripts: Scripts
        _ttl: int

        def _prune(self) -> None: ...

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        k = self.keys
        # The caller's stale_before becomes an age, re-anchored on the server's clock.
        age = time.time() - params.stale_before
        dead = list(params.dead_worker_ids)
        with self._guard:
            found = self._scripts.job_rescue([k.base, k.holders, k.workers], [repr(age), *dead])
            flat: list[str] = []
            if found:
                # Where each goes is the rules' decision; the apply script re-checks the
                # claim token and the worker's liveness, atomically with the move.
                rows = list(zip(*[iter(found)] * 6, strict=True))
                # Poison isolation: was each the one job its dead worker held? (rules.py)
                alone_flags = held_alone([row[1] for row in rows])
                progressed = self._progressed([str(row[0]) for row in rows])
                decided: list[list[object]] = []
                for (job_id, worker, token, *counts), alone in zip(rows, alone_flags, strict=True):
                    # Counts as a hash written around the API may hold them ('', 'x',
                    # '2.13e+16'; an absent rescues is 0): an odd one buries the job
                    # dead with the problem as its reason, never fails the rescue.
                    attempt, max_attempts, rescues, problem = decoding.rescue_counts(
                        counts[0], counts[1], 0 if counts[2] is None else counts[2]
                    )
                    state = rescue_state(
                        attempt=attempt,
                        max_attempts=max_attempts,
                        rescues=rescues,
                        max_rescues=params.max_rescues,
                        alone=alone,
                        odd=problem is not None,
                        progressed=job_id in progressed,
                    )
                    moved = job_id in progressed
                    give_back = int(rescue_gives_back_attempt(alone=alone and not moved))
                    charge = rescue_charge(progressed=moved)
                    decided.append([job_id, worker, token, state.value, give_back, problem, charge])
                flat = self._scripts.job_rescue_apply(
                    [k.base, k.holders, k.workers, k.counts, k.wake, k.expiry],
                    [repr(age), self._ttl, WORKER_LOST_ERROR, json_text(decided), *dead],
                )
            # Rescue runs every few seconds on every worker: a good place to keep the
            # id index and counters free of expired results, off the hot path.
            self._prune()
        return [
            RescueResult(flat[i], flat[i + 1], JobState(flat[i + 2]))
            for i in range(0, len(flat), 3)
        ]

    def _progressed(self, ids: list[str]) -> set[str]:
        """The durable jobs among ``ids`` that saved a step during their lost attempt
        (rescued uncharged: ``rules.rescue_state``); read only on a rescue."""
        pipe = self._client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hmget(self.keys.job(job_id), "started_at", "durable")
            pipe.hvals(self.keys.steps(job_id))
        answers = pipe.execute()
        found: set[str] = set()
        for job_id, (started, durable), steps in zip(ids, answers[::2], answers[1::2], strict=True):
            if durable is None or started is None:
                continue
            for text in steps:  # redis/steps.py step_json; 'waiting' holds a bare name
                try:
                    step = json.loads(text)
                except ValueError:
                    continue
                body = isinstance(step, list) and len(step) == 8 and int(step[0]) >= 0
                if body and float(step[7] or 0.0) >= float(started):
                    found.add(job_id)
                    break
        return found

    def worker_deregister(self, worker_id: str) -> None:
        with self._guard:
            self._scripts.worker_deregister([self.keys.base, self.keys.workers], [worker_id])

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None:
        w = params.worker
        args: list[str | int] = [
            w.id,
            w.host,
            w.pid,
            opt_num(w.pid_started),
            repr(float(w.started_at)),
            opt_num(params.last_fetch_at),
            json.dumps(list(w.queues)),
            w.concurrency,
            w.pool,
            params.running,
        ]
        with self._guard:
            self._scripts.worker_heartbeat([self.keys.base, self.keys.workers], args)

    def worker_list(self) -> list[WorkerInfo]:
        with self._guard:
            return reads.list_workers(self._client, self.keys)
