"""Durable jobs: steps whose results survive crashes, sleeps that free the slot, waits
for events (``@app.step``, :func:`sleep`, :func:`wait_for`; child jobs in
:mod:`conveyor.durable_children`; docs/durable.md).

A job whose body calls steps is replayed from the top on each attempt (a retry, a rescue
after a crash, the end of a sleep or of a wait). Each step call takes the next position;
a step saved at that position returns its saved result without running, any other runs
and is saved before it returns (one fenced statement; on SQLite and Redis concurrent
jobs' share a commit: worker/checkpointer.py). The saved steps are read once per attempt,
at the first step call, so a job that calls none costs nothing more. A name that differs
from the saved one at a position ends the job dead with :class:`~conveyor.errors.NonDeterministic`.

Outside a job a step is a plain call, :func:`sleep` is ``time.sleep`` and :func:`wait_for`
refuses. In a process or interpreter pool the child runs them through its own connection
to the store, fenced by the job's claim token (``worker/executors/wire.py``).

Example:
    >>> import conveyor
    >>> app = conveyor.App("memory://")
    >>> @app.step(max_attempts=3)
    ... def charge(order_id: int) -> str:
    ...     return f"r-{order_id}"
    >>> charge(7)   # outside a job: a plain call
    'r-7'
"""

from __future__ import annotations

import datetime
import functools
import inspect
import json
import threading
import time
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from conveyor.backends.base import (
    NO_DEADLINE,
    PUBLISH_PREFIX,
    STEP_FAILED,
    STEP_SUCCEEDED,
    STEP_TIMED_OUT,
    WAIT_PARKED,
    WAIT_RECEIVED,
    WAIT_TIMED_OUT,
    JobEventWaitParams,
    JobFinishParams,
    JobStepSaveParams,
    StepRecord,
)
from conveyor.codec import decode, encode
from conveyor.context import JobContext, current_or_none
from conveyor.durable_tx import commit_checkpoint, step_transaction
from conveyor.errors import ConfigurationError, ConveyorError, NonDeterministic, Snooze
from conveyor.extensions import provide
from conveyor.retry import Backoff
from conveyor.states import FinishKind

if TYPE_CHECKING:
    from concurrent.futures import Future  # not at run time: cold start

    from conveyor.backends.base import Backend
    from conveyor.backends.records import ClaimedJob

#: The feature a store declares for durable jobs.
FEATURE = "steps"
SLEEP = "sleep"


class Checkpoints(Protocol):  # a worker's group commit (worker/checkpointer.py)
    def save(self, params: JobStepSaveParams) -> bool: ...
    def submit(self, params: JobStepSaveParams) -> Future[bool]: ...


class StepLost(ConveyorError):
    """The attempt no longer holds its job (rescued or cancelled meanwhile): a step's
    checkpoint was refused, so this stale run stops here."""


class Parked(Snooze):
    """Raised by :func:`wait_for` after the store parked the job (``waiting``): the
    attempt ends, and the worker writes nothing more for it."""


class StepTally:
    """A worker's counts of durable work, read by its metrics: ``run`` steps run and
    checkpointed, ``replayed`` saved steps served without running, ``replays``
    attempts that served at least one (a job resumed by replay).

    >>> tally = StepTally()
    >>> tally.add(run=2, replayed=1)
    >>> tally.run, tally.replayed, tally.replays
    (2, 1, 0)
    """

    __slots__ = ("_lock", "replayed", "replays", "run")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # steps of many threads' jobs count here
        self.run = self.replayed = self.replays = 0

    def add(self, run: int = 0, replayed: int = 0, replays: int = 0) -> None:
        with self._lock:
            self.run += run
            self.replayed += replayed
            self.replays += replays


class Replay:
    """One attempt's view of its job's saved steps (loaded once) and the next position."""

    __slots__ = (
        "backend", "checkpoints", "job", "on_park", "position", "saved", "served", "sleeps",
        "tally", "worker_id",
    )  # fmt: skip

    def __init__(
        self,
        backend: Backend,
        job: ClaimedJob,
        worker_id: str,
        sleeps: bool = True,
        on_park: Callable[[float], None] | None = None,
        tally: StepTally | None = None,
        checkpoints: Checkpoints | None = None,
    ) -> None:
        if FEATURE not in backend.features:
            raise ConfigurationError(f"the {backend.name} store does not keep durable steps")
        self.backend, self.job, self.worker_id = backend, job, worker_id
        #: False in the testing modes: a durable sleep is skipped (saved, not waited)
        self.sleeps = sleeps
        #: told the deadline when a wait parks the job (the worker's deadlines service)
        self.on_park = on_park
        #: the worker's counts (its metrics), None: nobody counts
        self.tally = tally
        #: the worker's group commit (worker/checkpointer.py); None: each alone
        self.checkpoints = checkpoints
        self.saved = {s.position: s for s in backend.job_step_list(job.id)}
        self.position = 0
        self.served = 0  # saved steps this attempt served without running

    def next(self, name: str) -> tuple[int, StepRecord | None]:
        """The next position and what is saved there (None: nothing yet)."""
        position = self.position
        self.position += 1
        saved = self.saved.get(position)
        if saved is not None and saved.name != name:
            raise NonDeterministic(self.job.id, position, saved.name, name)
        if saved is not None and saved.replayable and self.tally is not None:
            self.served += 1
            self.tally.add(replayed=1, replays=1 if self.served == 1 else 0)
        return position, saved

    def save(self, step: StepRecord, replace: bool) -> None:
        """Save ``step`` (committed when this returns), fenced by the attempt's token."""
        params, group = JobStepSaveParams(step, self.job.token, replace), self.checkpoints
        self._saved(step, self.backend.job_step_save(params) if group is None else
                    group.save(params))  # fmt: skip

    async def asave(self, step: StepRecord, replace: bool) -> None:
        """:meth:`save` for an async step: the event loop runs on while it is written."""
        if self.checkpoints is None:
            return self.save(step, replace)
        import asyncio  # lazily: a worker of sync jobs never loads it

        params = JobStepSaveParams(step, self.job.token, replace)
        self._saved(step, await asyncio.wrap_future(self.checkpoints.submit(params)))

    def _saved(self, step: StepRecord, saved: bool) -> None:
        if not saved:
            raise StepLost(f"job {self.job.id}: step {step.position} refused, attempt lost")
        self.kept(step)

    def kept(self, step: StepRecord) -> None:
        """``step`` is saved (by :meth:`save`, or with a transactional step's commit)."""
        self.saved[step.position] = step
        if self.tally is not None and step.position >= 0:
            self.tally.add(run=1)

    def publish(self, key: str, value: Any) -> None:
        """Save ``value`` as the job's published ``key`` (``current_job().publish``):
        a record ``publish:KEY`` at a negative position, replaced by each publish,
        fenced like a step (a stale attempt publishes nothing)."""
        name = PUBLISH_PREFIX + key
        text = encode(value, f"the value published as {key!r}")
        position = publish_slot(self.saved, name)
        now = time.time()
        record = StepRecord(self.job.id, position, name, STEP_SUCCEEDED, text, None, 1,
                            now, now)  # fmt: skip
        self.save(record, replace=position in self.saved)


def publish_slot(saved: dict[int, StepRecord], name: str) -> int:
    """The negative position of the published value ``name`` (``publish:KEY``): where
    it is saved already, else a free one derived from the name (probing on down past
    another name's), outside the replayed positions 0, 1, ...

    >>> publish_slot({}, "publish:progress") < 0
    True
    """
    position = -1 - (zlib.crc32(name.encode()) & 0x3FFFFFFF)
    while position in saved and saved[position].name != name:
        position -= 1
    return position


def link(
    backend: Backend, job: ClaimedJob, worker_id: str, sleeps: bool = True
) -> Callable[[JobContext], Replay]:
    """What a runner sets as ``ctx._durable``: the replay of ``job``, made on first use
    (``sleeps=False``: the testing modes', where time is skipped)."""
    return lambda ctx: Replay(backend, job, worker_id, sleeps)


def replay_of(ctx: JobContext | None) -> Replay | None:
    """The running job's replay (loaded on its first step); None outside a job. Inside a
    job no runner linked to a store (a context made by hand), a step refuses rather
    than run unsaved."""
    if ctx is None:
        return None
    replay: Replay | None = ctx._replay
    if replay is None:
        if ctx._durable is None:
            raise ConfigurationError(
                f"job {ctx.id}: durable steps, conveyor.sleep and conveyor.wait_for run in "
                "a job a worker or a testing mode runs, not in a job context made by hand"
            )
        replay = ctx._replay = ctx._durable(ctx)
    return replay


class Step:
    """A checkpointed function (``@app.step``): see the module docstring."""

    def __init__(
        self, fn: Callable[..., Any], name: str, max_attempts: int, retry: Backoff,
        transaction: bool = False,
    ) -> None:  # fmt: skip
        if max_attempts < 1:
            raise ConfigurationError(f"step {name}: max_attempts must be >= 1")
        self.fn, self.name, self.max_attempts, self.retry = fn, name, max_attempts, retry
        self.is_async = inspect.iscoroutinefunction(fn)
        #: commit the step's writes with its checkpoint (conveyor/durable_tx.py)
        self.transaction = transaction
        if transaction and self.is_async:
            raise ConfigurationError(f"step {name}: transaction=True takes a sync function")
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        replay = replay_of(current_or_none())
        if replay is None:
            return self.fn(*args, **kwargs)
        position, saved = replay.next(self.name)
        if saved is not None and saved.state == STEP_SUCCEEDED:
            return _served(saved, self.is_async)
        if self.is_async:
            return self._run_async(replay, position, saved, args, kwargs)
        started = time.time()
        for attempt in range(1, self.max_attempts + 1):
            try:
                if self.transaction:
                    return self._committed(replay, position, saved, args, kwargs, attempt)
                value = self.fn(*args, **kwargs)
            except StepLost:
                raise
            except Exception as exc:
                if attempt >= self.max_attempts:
                    save_failed(replay, self, position, saved, exc, attempt, started)
                    raise
                time.sleep(self.retry.delay(attempt))
                continue
            return _save_result(replay, self, position, saved, value, attempt, started)
        raise AssertionError("unreachable")  # pragma: no cover

    def _committed(
        self, replay: Replay, position: int, saved: StepRecord | None, args: Any, kwargs: Any,
        attempt: int,
    ) -> Any:  # fmt: skip
        """One run of a transactional step: its writes and checkpoint in one commit."""
        ctx, started, backend = current_or_none(), time.time(), replay.backend
        assert ctx is not None  # a replay exists only inside a job
        with step_transaction(backend, ctx, self.name) as conn:
            text = encode(self.fn(*args, **kwargs), f"the result of step {self.name}")
            record = StepRecord(replay.job.id, position, self.name, STEP_SUCCEEDED, text,
                                None, attempt, started, time.time())  # fmt: skip
            save = JobStepSaveParams(record, replay.job.token, saved is not None)
            if not commit_checkpoint(backend, conn, save):
                raise StepLost(f"job {replay.job.id}: step {position} refused, attempt lost")
        replay.kept(record)
        return decode(text)

    async def _run_async(
        self, replay: Replay, position: int, saved: StepRecord | None, args: Any, kwargs: Any
    ) -> Any:
        started = time.time()
        for attempt in range(1, self.max_attempts + 1):
            try:
                value = await self.fn(*args, **kwargs)
            except Exception as exc:
                if attempt >= self.max_attempts:
                    await replay.asave(_failed(replay, self.name, position, exc, attempt,
                                               started), saved is not None)  # fmt: skip
                    raise
                import asyncio  # lazily: a worker of sync jobs never loads it

                await asyncio.sleep(self.retry.delay(attempt))
                continue
            text = encode(value, f"the result of step {self.name}")
            await replay.asave(_succeeded(replay, self.name, position, text, attempt, started),
                               saved is not None)  # fmt: skip
            return decode(text)
        raise AssertionError("unreachable")  # pragma: no cover


def _served(saved: StepRecord, is_async: bool) -> Any:
    value = decode(saved.result)
    if not is_async:
        return value

    async def ready() -> Any:
        return value

    return ready()


def _save_result(
    replay: Replay, step: Step, position: int, saved: StepRecord | None,
    value: Any, attempt: int, started: float,
) -> Any:  # fmt: skip
    text = encode(value, f"the result of step {step.name}")
    record = _succeeded(replay, step.name, position, text, attempt, started)
    replay.save(record, replace=saved is not None)
    # What a replay would return (JSON round trip): the same value on every run.
    return decode(text)


def save_failed(
    replay: Replay, step: Step | str, position: int, saved: StepRecord | None,
    exc: BaseException, attempt: int, started: float,
) -> None:  # fmt: skip
    name = step if isinstance(step, str) else step.name
    record = _failed(replay, name, position, exc, attempt, started)
    replay.save(record, replace=saved is not None)


def _succeeded(replay: Replay, name: str, pos: int, text: str, n: int, t0: float) -> StepRecord:
    return StepRecord(replay.job.id, pos, name, STEP_SUCCEEDED, text, None, n, t0, time.time())


def _failed(
    replay: Replay, name: str, pos: int, exc: BaseException, n: int, t0: float
) -> StepRecord:
    error = json.dumps({"type": type(exc).__qualname__, "message": str(exc)})
    return StepRecord(replay.job.id, pos, name, STEP_FAILED, None, error, n, t0, time.time())


def seconds_of(duration: float | datetime.timedelta) -> float:
    """Seconds from a number or a ``timedelta``.

    >>> seconds_of(datetime.timedelta(minutes=2)), seconds_of(1.5)
    (120.0, 1.5)
    """
    value = duration.total_seconds() if isinstance(duration, datetime.timedelta) else duration
    if value < 0:
        raise ValueError(f"a duration must be >= 0, got {duration!r}")
    return float(value)


def sleep(duration: float | datetime.timedelta) -> None:
    """Sleep durably: the wake time is saved, the job leaves its slot (``scheduled``, the
    attempt given back) and resumes by replay at that time. Outside a job: ``time.sleep``;
    in the testing modes (``app.testing``, ``task.execute``) time is skipped.

    Raises :class:`~conveyor.errors.Snooze` to end the attempt: do not catch it.
    """
    seconds = seconds_of(duration)
    replay = replay_of(current_or_none())
    if replay is None:
        time.sleep(seconds)
        return
    position, saved = replay.next(SLEEP)
    now = time.time()
    if saved is None:
        wake = now + seconds
        record = StepRecord(replay.job.id, position, SLEEP, STEP_SUCCEEDED, json.dumps(wake),
                            None, 1, now, now)  # fmt: skip
        replay.save(record, replace=False)
    else:
        wake = float(decode(saved.result))
    if wake > now and replay.sleeps:
        raise Snooze(wake - now)


def wait_for(name: str, timeout: float | datetime.timedelta | None = None) -> Any:
    """Wait durably for the event ``name`` sent to this job (``app.job(id).send(name,
    payload)``, ``conveyor send``); returns its payload. The job parks (``waiting``, no
    slot) until the event comes or ``timeout`` passes: then ``TimeoutError`` is raised
    here (on every replay too). Each event is consumed once, oldest first."""
    ctx = current_or_none()
    replay = replay_of(ctx)
    if ctx is None or replay is None:
        raise ConfigurationError("conveyor.wait_for() works inside a running job only")
    step_name = f"wait_for:{name}"
    position, saved = replay.next(step_name)
    now = time.time()
    if saved is not None and saved.state == STEP_SUCCEEDED:
        return decode(saved.result)
    if saved is not None and saved.state == STEP_TIMED_OUT:
        raise TimeoutError(f"no event {name!r} came before its timeout")
    if saved is not None:  # waiting: the deadline of the first call stands
        deadline = float(decode(saved.result))
    else:
        deadline = NO_DEADLINE if timeout is None else now + seconds_of(timeout)
    job = replay.job
    got = replay.backend.job_event_wait(
        JobEventWaitParams(job.id, job.token, position, step_name, name, deadline, now)
    )
    if got.status == WAIT_RECEIVED:
        return decode(got.payload)
    if got.status == WAIT_TIMED_OUT:
        raise TimeoutError(f"no event {name!r} came before its timeout")
    if got.status != WAIT_PARKED:
        raise StepLost(f"job {job.id}: wait_for({name!r}) refused, attempt lost")
    if replay.on_park is not None and deadline < NO_DEADLINE:
        replay.on_park(deadline)
    # The store has ended this attempt (parked, attempt given back): no finish to write.
    ctx.finished_by_transaction = JobFinishParams(
        job.id, job.token, FinishKind.SNOOZE, replay.worker_id, job.attempt, None, None,
        f"waiting for {name!r}", deadline, job.claimed_at, now,
    )  # fmt: skip
    raise Parked(0.0)


def step(
    fn: Callable[..., Any] | None = None, *, name: str | None = None,
    max_attempts: int = 1, retry: Backoff | None = None, transaction: bool = False,
) -> Any:  # fmt: skip
    """``@app.step`` (see :meth:`conveyor.App.step`): a :class:`Step` of ``fn``."""

    def wrap(func: Callable[..., Any]) -> Step:
        label = name or f"{func.__module__}.{func.__qualname__}"
        backoff = retry or Backoff(base=0.5, max=30.0)
        return Step(func, label, max_attempts, backoff, transaction)

    return wrap if fn is None else wrap(fn)


provide("step", step)
