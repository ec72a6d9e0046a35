"""Durable child jobs: :func:`spawn` (enqueue a child once, as a step) and :func:`join`
(wait durably for its result); docs/durable.md#child-jobs.

Example:
    >>> import conveyor
    >>> app = conveyor.App("memory://")
    >>> @app.task
    ... def child(n: int) -> int:
    ...     return n
    >>> spawn(child, 1).status.value   # outside a job: a plain enqueue
    'queued'
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import (
    JOIN_PREFIX,
    STEP_SUCCEEDED,
    WAIT_PARKED,
    WAIT_REFUSED,
    JobEventSendParams,
    JobEventWaitParams,
    JobFinishParams,
    JobJoinParams,
    StepRecord,
)
from conveyor.codec import decode, encode
from conveyor.context import current_or_none
from conveyor.durable import Parked, Replay, StepLost, replay_of, save_failed
from conveyor.errors import ConveyorError, JobNotFound, Snooze
from conveyor.states import FinishKind

if TYPE_CHECKING:
    from conveyor.backends.records import JobRecord
    from conveyor.job import Job
    from conveyor.task import Task


#: How long a spawned child's unique key holds (a crash between its enqueue and the
#: spawn's checkpoint replays the enqueue, which then finds the same child).
SPAWN_KEY_SECONDS = 30 * 86400.0
#: Seconds after which a parked join looks at its child again all the same (a safety
#: net: the child's end wakes it).
JOIN_LOOK = 60.0


def spawn(task: Task[..., Any], *args: Any, **kwargs: Any) -> Job[Any]:
    """Enqueue a child job once, as a step: a replay returns the same child's handle.
    The enqueue carries a unique key of this job and position (``on_conflict="keep"``),
    so a crash between the enqueue and its checkpoint finds the child it made. Outside a
    job: a plain ``task.enqueue``."""
    replay = replay_of(current_or_none())
    if replay is None:
        return task.enqueue(*args, **kwargs)
    name = f"spawn:{task.name}"
    position, saved = replay.next(name)
    if saved is not None and saved.state == STEP_SUCCEEDED:
        return task.app.job(str(decode(saved.result)))
    started = time.time()
    key = f"spawn:{replay.job.id}:{position}"
    once = task.with_options(unique_key=key, unique_for=SPAWN_KEY_SECONDS, on_conflict="keep")
    child = once.enqueue(*args, **kwargs)
    record = StepRecord(replay.job.id, position, name, STEP_SUCCEEDED, json.dumps(child.id),
                        None, 1, started, time.time())  # fmt: skip
    replay.save(record, replace=saved is not None)
    return child


def join(job: Job[Any], poll: float = JOIN_LOOK) -> Any:
    """Wait durably for ``job`` (a :func:`spawn`'s child, or any job) and return its
    result, saved as a step; its failure is raised here (``JobFailed``,
    ``JobCancelled``). While it runs, this job parks (``waiting``, no slot held) and
    its end wakes this job: the store marks the joined job, and whatever way it ends
    (finish, cancel, delete, expiry) queues this one, in the same commit or script.
    ``poll``: a look again after that many seconds all the same (a safety net, not the
    way it is woken). Outside a job: ``job.result()``."""
    ctx = current_or_none()
    replay = replay_of(ctx)
    if ctx is None or replay is None:
        return job.result()
    name = JOIN_PREFIX + job.id
    position, saved = replay.next(name)
    if saved is not None and saved.state == STEP_SUCCEEDED:
        return decode(saved.result)
    started = time.time()
    backend, me = replay.backend, replay.job
    if backend.job_join_mark(JobJoinParams(job.id, me.id)) is None:
        raise JobNotFound(job.id)
    record = job.refresh()  # one read: no waiter (a listener thread) for a finished job
    if record.state.is_finished:
        return _joined(replay, name, position, saved, job, record, started)
    deadline = started + max(poll, 0.0)
    got = backend.job_event_wait(
        JobEventWaitParams(me.id, me.token, position, name, name, deadline, started)
    )
    if got.status == WAIT_REFUSED:
        raise StepLost(f"job {me.id}: join({job.id}) refused, attempt lost")
    if got.status != WAIT_PARKED:  # an event of that name sent by hand, or poll 0
        # The wait saved a record here: replaced by the result, or by a failed one
        # (run again on replay) while the joined job has not ended.
        record = job.refresh()
        if record.state.is_finished:
            return _joined(replay, name, position, _WRITTEN, job, record, started)
        save_failed(replay, name, position, _WRITTEN, Snooze(0.0), 1, started)
        raise Snooze(0.0)
    if job.refresh().state.is_finished:
        # Ended between the mark and the park where the store's finish could not see
        # the mark yet (PostgreSQL reads it in the finish statement's snapshot): wake
        # this job now, as its end would have.
        backend.job_event_send(JobEventSendParams(me.id, name, "null"))
    if replay.on_park is not None:
        replay.on_park(deadline)
    ctx.finished_by_transaction = JobFinishParams(
        me.id, me.token, FinishKind.SNOOZE, replay.worker_id, me.attempt, None, None,
        f"joining job {job.id}", deadline, me.claimed_at, started,
    )  # fmt: skip
    raise Parked(0.0)


#: Stands for "a record is saved at the position" (the wait wrote one): replaced.
_WRITTEN = StepRecord("", 0, "", STEP_SUCCEEDED)


def _joined(
    replay: Replay, name: str, position: int, saved: StepRecord | None, job: Job[Any],
    record: JobRecord, started: float,
) -> Any:  # fmt: skip
    """The joined job has ended: its result (or failure) saved as the join's step."""
    try:
        value = job._outcome(record)
    except ConveyorError as exc:
        save_failed(replay, name, position, saved, exc, 1, started)
        raise
    return _save_value(replay, name, position, saved, value, started)


def _save_value(
    replay: Replay, name: str, position: int, saved: StepRecord | None, value: Any,
    started: float,
) -> Any:  # fmt: skip
    text = encode(value, f"the result of {name}")
    record = StepRecord(replay.job.id, position, name, STEP_SUCCEEDED, text, None, 1,
                        started, time.time())  # fmt: skip
    replay.save(record, replace=saved is not None)
    return decode(text)
