"""The insert path of the Redis backend: plain jobs in one script call per batch.

``job_insert_many`` formats each job as one row of strings (a batch's shared fields
once) and hands the batch to ``job_insert.lua`` as one JSON argument; jobs with flow
fields (unique keys, parents, limits) go to the flow scripts (flow_methods.py).

Example:
    >>> b = RedisBackend("redis://localhost:6379/0?prefix=demo")  # doctest: +SKIP
    >>> b.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])  # doctest: +SKIP
    ['j1']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import redis.exceptions

from conveyor.backends.base import (
    JobInsertBatchParams,
    JobInsertParams,
)
from conveyor.backends.params import insert_by_kind
from conveyor.backends.redis.connection import Unavailable
from conveyor.backends.redis.hashes import json_text, num
from conveyor.backends.redis.keys import Keys
from conveyor.backends.redis.scripts import Scripts
from conveyor.errors import ConveyorError


class RedisInsertMixin:
    """The insert methods; mixed into :class:`RedisBackend`."""

    if TYPE_CHECKING:
        keys: Keys
        _guard: Unavailable
        _scripts: Scripts

        def _insert_flow(self, params: Sequence[JobInsertParams]) -> list[str]: ...

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        return insert_by_kind(params, self._insert_batch, self._insert_flow, self._insert_each)

    def _insert_each(self, params: Sequence[JobInsertParams]) -> list[str]:
        """Plain jobs, each with its own options."""
        self._insert_rows(
            [
                [
                    p.id,
                    p.task,
                    p.queue,
                    p.payload,
                    str(int(p.priority)),
                    num(p.run_at) or "",
                    str(int(p.max_attempts)),
                    num(p.timeout) or "",
                    repr(float(p.lease)),
                    p.headers or "",
                    num(p.expires_at) or "",
                ]
                for p in params
            ]
        )
        return [p.id for p in params]

    def _insert_batch(self, params: JobInsertBatchParams) -> None:
        if not params.ids:
            return
        # The shared fields are formatted once, not once per job.
        task, queue = params.task, params.queue
        priority, run_at = str(int(params.priority)), num(params.run_at) or ""
        attempts, timeout = str(int(params.max_attempts)), num(params.timeout) or ""
        lease = repr(float(params.lease))
        expires = num(params.expires_at) or ""
        if params.headers is None and not expires:
            rows = [
                [i, task, queue, p, priority, run_at, attempts, timeout, lease]
                for i, p in zip(params.ids, params.payloads, strict=True)
            ]
        else:
            headers = params.headers or [None] * len(params.ids)
            rows = [
                [i, task, queue, p, priority, run_at, attempts, timeout, lease, h or "", expires]
                for i, p, h in zip(params.ids, params.payloads, headers, strict=True)
            ]
        self._insert_rows(rows)

    def _insert_rows(self, batch: list[list[str]]) -> None:
        try:
            with self._guard:
                # One key: redis-py packs each argument in Python (~0.6 µs apiece
                # without hiredis); the script names the others from it.
                self._scripts.job_insert([self.keys.base], [json_text(batch)])
        except redis.exceptions.ResponseError as exc:
            if "DUPLICATE" in str(exc):
                job_id = str(exc).rsplit("DUPLICATE ", 1)[-1]
                raise ConveyorError(f"a job with id {job_id!r} already exists") from None
            raise
