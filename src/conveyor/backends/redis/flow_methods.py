"""The flow-control methods of the Redis backend (kept apart so backend.py stays small).

Snooze is one more finish kind inside ``job_finish.lua``; progress, unique jobs,
workflows and periodic slots are scripts of their own here (``job_progress.lua``,
``job_insert_flow.lua``, ``periodic_fire.lua``), sharing ``scripts/_flow.lua``. Limits
are applied inside ``job_claim.lua`` (``scripts/_limits.lua``). Each is one atomic
script, as every other transition of the backend.

Example:
    >>> b = RedisBackend("redis://localhost:6379/0?prefix=demo")  # doctest: +SKIP
    >>> b.job_progress_many([JobProgressParams("j1", 1, 0.5, "half")])  # doctest: +SKIP
    ['j1']
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import redis.exceptions
from redis.commands.core import Script

from conveyor.backends import decoding
from conveyor.backends.base import (
    Dependency,
    JobAgeParams,
    JobDependenciesParams,
    JobInsertParams,
    JobProgressParams,
    LimitOverrideParams,
    LimitRecord,
    PeriodicFireParams,
    PeriodicRecord,
    SequencePruneParams,
    SequenceReleaseParams,
)
from conveyor.backends.redis.hashes import num
from conveyor.backends.redis.scripts import load_source
from conveyor.errors import ConveyorError, JobNotFound

if TYPE_CHECKING:
    from conveyor.backends.redis.connection import Unavailable
    from conveyor.backends.redis.keys import Keys

#: Fired slots kept before the oldest slot being fired (seconds), as SQLite's
#: SLOT_RETENTION: slack for a worker that stalls between reading a schedule and firing.
SLOT_RETENTION = 86400.0
_PERIODIC_FIELDS = (
    "spec",
    "last_slot",
    "last_fired_at",
    "last_job_id",
    "next_slot",
    "paused",
    "run_requested_at",
)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class FlowScripts:
    """The flow-control scripts, registered on one client (loaded on first use)."""

    def __init__(self, client: Any) -> None:
        self.job_insert_flow = Script(client, load_source("job_insert_flow"))
        self.job_progress = Script(client, load_source("job_progress"))
        self.periodic_fire = Script(client, load_source("periodic_fire"))
        self.sequence_release = Script(client, load_source("sequence_release"))
        self.sequence_prune = Script(client, load_source("sequence_prune"))
        self.job_age = Script(client, load_source("job_age"))


def flow_job(p: JobInsertParams) -> dict[str, object]:
    """One job of a ``job_insert_flow`` batch (times as decimal strings; see the script)."""
    limit = p.limit
    return {
        "id": p.id,
        "task": p.task,
        "queue": p.queue,
        "payload": p.payload,
        "priority": str(int(p.priority)),
        "run_at": num(p.run_at) or "",
        "max_attempts": str(int(p.max_attempts)),
        "timeout": num(p.timeout),
        "lease": repr(float(p.lease)),
        "unique_key": p.unique_key,
        "unique_until": num(p.unique_until),
        "on_conflict": p.on_conflict,
        "max_wait": num(p.max_wait),
        "depends_on": list(p.depends_on),
        "pipe": p.pipe,
        "sequence_key": p.sequence_key,
        "fair_key": p.fair_key,
        "fair_weight": repr(float(p.fair_weight)),
        "limit": None
        if limit is None
        else [
            limit.key,
            None if limit.concurrency is None else str(limit.concurrency),
            None if limit.rate_count is None else str(limit.rate_count),
            num(limit.rate_period),
        ],
        "headers": p.headers,
        "expires_at": num(p.expires_at),
    }


def _limit_parts(text: str) -> tuple[int | None, int | None, float | None]:
    """ "concurrency|rate_count|rate_period" ('' = none) as values."""
    c, n, p = [*text.split("|"), "", "", ""][:3]
    return (int(c) if c else None, int(n) if n else None, float(p) if p else None)


def raise_insert_error(exc: redis.exceptions.ResponseError) -> None:
    """Turn the insert scripts' error replies into conveyor's errors (else re-raise)."""
    text = str(exc)
    if "NOTFOUND " in text:
        raise JobNotFound(text.rsplit("NOTFOUND ", 1)[-1]) from None
    if "DUPLICATE " in text:
        job_id = text.rsplit("DUPLICATE ", 1)[-1]
        raise ConveyorError(f"a job with id {job_id!r} already exists") from None
    raise exc


class RedisFlowMixin:
    """Flow-control methods; mixed into :class:`RedisBackend`."""

    if TYPE_CHECKING:
        keys: Keys
        _client: Any
        _guard: Unavailable
        _ttl: int

    @functools.cached_property
    def _flow(self) -> FlowScripts:
        return FlowScripts(self._client)

    def job_dependencies_many(self, params: JobDependenciesParams) -> list[Dependency]:
        ids = sorted(set(params.ids))  # SQLite orders by child id, then position
        with self._guard:
            pipe = self._client.pipeline(transaction=False)
            for job_id in ids:
                pipe.lrange(self.keys.base + "deps:" + job_id, 0, -1)
            found = pipe.execute()
        return [
            Dependency(child, parent, position)
            for child, parents in zip(ids, found, strict=True)
            for position, parent in enumerate(parents)
        ]

    def _insert_flow(self, params: Sequence[JobInsertParams]) -> list[str]:
        if not params:
            return []
        batch = _json([flow_job(p) for p in params])
        try:
            with self._guard:
                reply = self._flow.job_insert_flow([self.keys.base], [self._ttl, batch])
        except redis.exceptions.ResponseError as exc:
            raise_insert_error(exc)
        return [standing for standing, _inserted, _replaced in json.loads(reply)]

    def job_progress_many(self, params: Sequence[JobProgressParams]) -> list[str]:
        if not params:
            return []
        batch = [[p.id, p.token, num(p.fraction), p.message] for p in params]
        with self._guard:
            refused: list[str] = self._flow.job_progress([self.keys.base], [_json(batch)])
        return refused

    def periodic_fire(self, params: PeriodicFireParams) -> list[float]:
        args: list[str | int] = [
            params.name,
            params.spec,
            "" if params.next_slot is None else repr(float(params.next_slot)),
            repr(SLOT_RETENTION),
            self._ttl,
            _json([[repr(float(slot)), flow_job(job)] for slot, job in params.slots]),
            "" if params.run is None else repr(float(params.run[0])),
            "" if params.run is None else _json(flow_job(params.run[1])),
        ]
        try:
            with self._guard:
                fired: list[str] = self._flow.periodic_fire([self.keys.base], args)
        except redis.exceptions.ResponseError as exc:
            raise_insert_error(exc)
        return [float(s) for s in fired]

    def sequence_release_many(self, params: SequenceReleaseParams) -> list[str]:
        ids = sorted(set(params.ids))
        if not ids:
            return []
        with self._guard:
            reply = self._flow.sequence_release([self.keys.base], [_json(ids)])
        return [str(i) for i in json.loads(reply)]

    def sequence_prune(self, params: SequencePruneParams) -> int:
        # HSCAN a page of keys, then one script checks each is still that tail (an
        # insert may have moved it on) and drops it if that job succeeded or is gone.
        base, gone, cursor = self.keys.base, 0, 0
        while gone < params.limit:
            with self._guard:
                cursor, page = self._client.hscan(base + "sequences", cursor, count=500)
                pairs = [[str(k), str(v)] for k, v in page.items()]
                if pairs:
                    gone += int(self._flow.sequence_prune([base], [_json(pairs)]))
            if not cursor:
                break
        return gone

    def job_age_many(self, params: JobAgeParams) -> int:
        args = [params.queue, repr(float(params.step)), str(int(params.ceiling))]
        with self._guard:
            return int(self._flow.job_age([self.keys.base], args))

    def limit_list(self) -> list[LimitRecord]:
        base = self.keys.base
        with self._guard:
            code = self._client.hgetall(base + "limits")
            overrides = self._client.hgetall(base + "limit_overrides")
            keys = sorted(code)
            pipe = self._client.pipeline(transaction=False)
            for key in keys:
                pipe.smembers(base + "limit:run:" + key)
            members = pipe.execute()
            pipe = self._client.pipeline(transaction=False)
            for held in members:
                for job_id in sorted(held):
                    pipe.hmget(base + "job:" + job_id, ("state", "limit_key"))
            states = iter(pipe.execute())
        found = []
        for key, held in zip(keys, members, strict=True):
            running = sum(1 for _ in held if next(states) == ["running", key])
            over = overrides.get(key)
            found.append(
                LimitRecord(
                    key,
                    *_limit_parts(code[key]),
                    None if over is None else _limit_parts(over),
                    running,
                )
            )
        return found

    def limit_override(self, params: LimitOverrideParams) -> None:
        field = self.keys.base + "limit_overrides"
        with self._guard:
            if params.values is None:
                self._client.hdel(field, params.key)
            else:
                c, n, p = params.values
                parts = (
                    "" if c is None else str(int(c)),
                    "" if n is None else str(int(n)),
                    num(p) or "",
                )
                text = "|".join(parts)
                self._client.hset(field, params.key, text)

    def periodic_list(self) -> list[PeriodicRecord]:
        base = self.keys.base
        with self._guard:
            names = sorted(self._client.smembers(base + "periodic"))
            pipe = self._client.pipeline(transaction=False)
            for name in names:
                pipe.hmget(base + "periodic:" + name, _PERIODIC_FIELDS)
            found = pipe.execute()

        return [  # a hash written around the API is read, not raised (decoding)
            decoding.periodic_record([name, *v])
            for name, v in zip(names, found, strict=True)
            if v[0] is not None
        ]
