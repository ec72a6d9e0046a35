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

from conveyor.backends.base import STEP_SUCCEEDED, StepRecord
from conveyor.codec import decode, encode
from conveyor.context import current_or_none
from conveyor.durable import Replay, replay_of, save_failed
from conveyor.errors import ConveyorError, Snooze

if TYPE_CHECKING:
    from conveyor.job import Job
    from conveyor.task import Task


#: How long a spawned child's unique key holds (a crash between its enqueue and the
#: spawn's checkpoint replays the enqueue, which then finds the same child).
SPAWN_KEY_SECONDS = 30 * 86400.0


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


def join(job: Job[Any], poll: float = 1.0) -> Any:
    """Wait durably for ``job`` (a :func:`spawn`'s child, or any job) and return its
    result, saved as a step; its failure is raised here (``JobFailed``,
    ``JobCancelled``). While it runs, this job leaves its slot and looks again every
    ``poll`` seconds (a snooze: no attempt spent). Outside a job: ``job.result()``."""
    replay = replay_of(current_or_none())
    if replay is None:
        return job.result()
    name = f"join:{job.id}"
    position, saved = replay.next(name)
    if saved is not None and saved.state == STEP_SUCCEEDED:
        return decode(saved.result)
    started = time.time()
    record = job.refresh()  # one read: no waiter (a listener thread) for a finished job
    if not record.state.is_finished:
        raise Snooze(poll)
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
