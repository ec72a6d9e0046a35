"""Durable jobs on Redis: step records, events and wait deadlines (the
:class:`~conveyor.backends.protocols.Durable` protocol, feature ``steps``).

A mixin of :class:`~conveyor.backends.redis.backend.RedisBackend`. Per job, a hash
``steps:<id>`` (position -> the record as a JSON array, and ``waiting`` -> the event a
parked job waits for) and a list ``events:<id>`` (``[name, payload]`` not consumed yet);
both take the job's TTL when it finishes and go with it. One script per write, each
atomic: ``job_step_save`` (fenced by the token; a worker's concurrent checkpoints go
in one pipelined round trip, ``job_step_save_many``), ``job_event_send``, ``job_event_wait``
(consume, time out or park) and ``job_wake_due`` over the ``waiting`` zset of
deadlines. Weaker than the SQL stores in one way: a consumed event is removed (its
payload lives on in the step record), so no history of consumed events is kept.

Example::

    backend.job_step_list(job_id)   # [StepRecord(job_id, 0, "charge", "succeeded", ...)]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from redis.commands.core import Script

from conveyor.backends.base import (
    STEP_SUCCEEDED,
    STEP_TIMED_OUT,
    STEP_WAITING,
    EventWaitResult,
    JobEventSendParams,
    JobEventWaitParams,
    JobJoinParams,
    JobStepSaveParams,
    JobStepSaveThroughParams,
    StepRecord,
)
from conveyor.backends.redis.connection import Unavailable
from conveyor.backends.redis.keys import Keys
from conveyor.backends.redis.scripts import load_source
from conveyor.errors import ConfigurationError, JobNotFound
from conveyor.states import JobState

#: Where ``job_event_wait`` puts the event's payload in the received record.
_PAYLOAD = "@PAYLOAD@"


def step_json(s: StepRecord) -> str:
    return json.dumps(
        [s.position, s.name, s.state, s.result, s.error, s.attempts, s.started_at, s.finished_at],
        ensure_ascii=False, separators=(",", ":"),
    )  # fmt: skip


def step_from(job_id: str, text: str) -> StepRecord:
    pos, name, state, result, error, attempts, started, finished = json.loads(text)
    return StepRecord(job_id, int(pos), str(name), str(state), result, error, int(attempts),
                      float(started), float(finished))  # fmt: skip


def _save_args(params: JobStepSaveParams) -> list[str | int]:
    s = params.step
    replace = "1" if params.replace else "0"
    return [s.job_id, params.token, s.position, step_json(s), replace]


class _StepScripts:
    def __init__(self, client: Any) -> None:
        self.job_step_save = Script(client, load_source("job_step_save"))
        self.job_event_send = Script(client, load_source("job_event_send"))
        self.job_event_wait = Script(client, load_source("job_event_wait"))
        self.job_wake_due = Script(client, load_source("job_wake_due"))
        self.job_join_mark = Script(client, load_source("job_join_mark"))


class RedisSteps:
    """The Durable protocol on the backend's client, one script per write."""

    keys: Keys
    _client: Any
    _guard: Unavailable
    _step_scripts: _StepScripts | None = None

    def _steps_run(self) -> _StepScripts:
        # Registered on first use: a worker that runs no durable job loads none.
        if self._step_scripts is None:
            self._step_scripts = _StepScripts(self._client)
        return self._step_scripts

    def job_step_list(self, job_id: str) -> list[StepRecord]:
        with self._guard:
            found = self._client.hgetall(self.keys.steps(job_id))
        # fields are positions (negative: published values) and 'waiting'
        steps = [step_from(job_id, v) for k, v in found.items() if str(k).lstrip("-").isdigit()]
        return sorted(steps, key=lambda s: s.position)

    def job_event_list(self, job_id: str) -> list[JobEventSendParams]:
        with self._guard:
            found = self._client.lrange(self.keys.events(job_id), 0, -1)
        events = [json.loads(e) for e in found]  # [name, payload]: no time is kept
        return [JobEventSendParams(job_id, str(name), str(payload)) for name, payload in events]

    def job_step_save(self, params: JobStepSaveParams) -> bool:
        with self._guard:
            return bool(self._steps_run().job_step_save([self.keys.base], _save_args(params)))

    def job_step_save_many(self, params: Sequence[JobStepSaveParams]) -> list[bool]:
        """One pipelined round trip: each checkpoint its own fenced script call."""
        scripts, base = self._steps_run(), [self.keys.base]
        with self._guard:
            pipe = self._client.pipeline(transaction=False)
            for one in params:
                scripts.job_step_save(base, _save_args(one), client=pipe)
            return [bool(reply) for reply in pipe.execute()]

    def job_step_save_through(self, params: JobStepSaveThroughParams) -> bool:
        """No task connection to commit a step's writes through (SQL stores only)."""
        raise ConfigurationError(
            "@app.step(transaction=True) commits a step's writes with its checkpoint on "
            "SQLite and PostgreSQL only"
        )

    def job_event_send(self, params: JobEventSendParams) -> bool:
        k = self.keys
        event = json.dumps([params.name, params.payload], ensure_ascii=False)
        with self._guard:
            done = self._steps_run().job_event_send(
                [k.base, k.counts, k.wake, k.waiting], [params.job_id, params.name, event]
            )
        if int(done) < 0:
            raise JobNotFound(params.job_id)
        return int(done) == 1

    def job_event_wait(self, params: JobEventWaitParams) -> EventWaitResult:
        p, k = params, self.keys
        base = StepRecord(p.job_id, p.position, p.name, STEP_WAITING, json.dumps(p.deadline),
                          None, 1, p.started_at, p.started_at)  # fmt: skip
        received = step_json(_as(base, STEP_SUCCEEDED, _PAYLOAD))
        timed_out = step_json(_as(base, STEP_TIMED_OUT, base.result))
        args: list[str | int] = [
            p.job_id, p.token, p.position, p.event, repr(p.deadline), received, timed_out,
            step_json(base),
        ]  # fmt: skip
        with self._guard:
            status, payload = self._steps_run().job_event_wait([k.base, k.counts, k.waiting], args)
        return EventWaitResult(str(status), None if payload is None else str(payload))

    def job_join_mark(self, params: JobJoinParams) -> JobState | None:
        with self._guard:
            state = self._steps_run().job_join_mark(
                [self.keys.base], [params.job_id, params.joiner]
            )
        if state is None:
            return None
        return JobState(state.decode() if isinstance(state, bytes) else str(state))

    def job_wake_due(self, limit: int) -> int:
        k = self.keys
        with self._guard:
            return int(
                self._steps_run().job_wake_due([k.base, k.counts, k.wake, k.waiting], [limit])
            )


def _as(step: StepRecord, state: str, result: str | None) -> StepRecord:
    return StepRecord(step.job_id, step.position, step.name, state, result, None,
                      step.attempts, step.started_at, step.finished_at)  # fmt: skip
