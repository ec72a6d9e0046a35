"""Running one claimed job: resolve the registered task, decode, call, capture.

Only registered tasks run: a job naming an unknown task, or whose payload cannot be
decoded for the task's signature, is unrunnable (it goes to ``dead`` with the reason);
nothing is ever imported by name from job data. A task that returns what the codec
cannot encode (a ``set``, NaN) is refused (``dead`` at once, not retried: every run
would return the same).

Example:
    >>> import conveyor
    >>> from conveyor.backends.base import ClaimedJob
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(name="double")
    ... def double(x: int) -> int:
    ...     return 2 * x
    >>> job = ClaimedJob("j", "double", "q", '{"args":[21],"kwargs":{}}', 1, 3, 1, None,
    ...                  30.0, 0.0, 0.0, 0, 0)
    >>> run_sync(app, job, JobContext("j", "double", "q", 1, 3)).result
    '42'
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import ClaimedJob
from conveyor.codec import encode
from conveyor.context import JobContext, reset_current, set_current
from conveyor.errors import ConfigurationError, DecodeError, EncodeError, Snooze
from conveyor.secrets import SecretKeyError, sealed_arguments
from conveyor.worker.outcome import Outcome

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.batch import BatchItem
    from conveyor.task import Task


class JobTimeout(TimeoutError):
    """Raised inside a task that ran past its ``timeout``."""


def prepare(
    app: App, job: ClaimedJob
) -> tuple[Task[Any, Any], list[Any], dict[str, Any]] | Outcome:
    """Find the task and decode its arguments, or the unrunnable outcome."""
    refused = refusal(job, app.max_payload_bytes)
    if refused is not None:
        return Outcome.unrunnable(refused)
    task = app.tasks.get(job.task)
    if task is None:
        return Outcome.unrunnable(f"unknown task {job.task!r}: not registered in this worker")
    if not valid_timeout(job.timeout):
        return Outcome.unrunnable(invalid_timeout(job.timeout))
    payload = job.payload
    if task.sealer is not None:  # secret arguments are opened here, in the worker only
        try:
            payload = task.sealer.open_payload(payload)
        except (SecretKeyError, ConfigurationError, ValueError) as exc:
            return Outcome.unrunnable(str(exc), exc)
    elif sealed := sealed_arguments(payload):  # never call a task with ciphertext
        return Outcome.unrunnable(
            f"{', '.join(sealed)} sealed (secret) but task {job.task!r} declares no secret "
            "parameters in this worker: deploy the same task definition as the producer"
        )
    try:
        args, kwargs = task.decoder.arguments(payload)
        # The task's compiled twin of its signature (conveyor.arity): the same TypeError
        # as Signature.bind, ~1 µs instead of ~10 on every job.
        task.check_arguments(*args, **kwargs)
    except (DecodeError, TypeError) as exc:
        return Outcome.unrunnable(f"undecodable payload: {exc}", exc)
    return task, args, kwargs


def valid_timeout(timeout: object) -> bool:
    """True for no timeout (``None``, or 0 as older rows have it) or a finite number > 0:
    a row written around the API must not reach the watchdog with ``"abc"``.

    >>> [valid_timeout(t) for t in (None, 0, 2.5, "abc", -1, float("nan"), True)]
    [True, True, True, False, False, False, False]
    """
    if timeout is None:
        return True
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        return False
    return timeout == 0 or (math.isfinite(timeout) and timeout > 0)


def invalid_timeout(timeout: object) -> str:
    """The reason a job with an unusable ``timeout`` goes dead."""
    return f"invalid timeout {timeout!r}: must be a finite number of seconds > 0"


def refusal(job: ClaimedJob, max_payload_bytes: int) -> str | None:
    """Why a claimed row is refused before anything decodes it: what the claim found
    wrong with its columns (a BLOB payload, invalid UTF-8, a number that is text), or a
    payload over ``max_payload_bytes`` (a row written outside the API: enqueue refuses
    those). None for a runnable row.

    >>> from conveyor.backends.base import ClaimedJob
    >>> big = ClaimedJob("j", "t", "q", "x" * 2000, 1, 3, 1, None, 30.0, 0.0, 0.0, 0, 0)
    >>> refusal(big, 1024)
    'payload too large (2000 bytes > 1024)'
    """
    if job.problem is not None:
        return job.problem
    if len(job.payload) * 4 > max_payload_bytes:  # a character is at most 4 bytes
        size = len(job.payload.encode("utf-8", "surrogatepass"))
        if size > max_payload_bytes:
            return f"payload too large ({size} bytes > {max_payload_bytes})"
    return None


def success(value: Any, task: Task[Any, Any]) -> Outcome:
    """The outcome of a body that returned ``value`` (encoded unless not stored)."""
    if not task.options.store_result:  # nothing to keep: not even encoded
        return Outcome.ok(None)
    if value is None:  # most jobs return nothing: skip the encoder's walk (~5 µs)
        return Outcome.ok("null")
    try:
        return Outcome.ok(encode(value))
    except EncodeError as exc:  # a set, NaN, nested too deep: the same on every run
        return Outcome.refused(exc)
    except Exception as exc:  # raised by the value's own code (a model's serializer)
        return Outcome.failed(exc)


def run_sync(app: App, job: ClaimedJob, ctx: JobContext) -> Outcome:
    """Run a job in the calling thread (an ``async def`` task gets its own loop); a
    batch task's job runs its gathered call (or, alone, a call of one: the end of this module)."""
    task = app.tasks.get(job.task)
    if task is not None and task.options.batch is not None:
        return run_batch(app, job, ctx, lambda t, a: _invoke_sync(app, t, a, {}, job, ctx))
    prepared = prepare(app, job)
    if isinstance(prepared, Outcome):
        return prepared
    task, args, kwargs = prepared
    value, failed = _invoke_sync(app, task, args, kwargs, job, ctx)
    return failed if failed is not None else success(value, task)


def _invoke_sync(
    app: App,
    task: Task[Any, Any],
    args: list[Any],
    kwargs: dict[str, Any],
    job: ClaimedJob,
    ctx: JobContext,
) -> tuple[Any, Outcome | None]:
    """Call the body: ``(value, None)``, or ``(None, outcome)`` when it raised."""
    if task.sealer is not None:  # for reporters that must not send them (contrib.sentry)
        ctx._secrets = task.sealer.values(args, kwargs)
    token = set_current(ctx)
    around = app.middleware.around
    try:
        if task.is_async:
            import asyncio  # only async tasks need it: importing it costs ~25 ms of start-up

            if around:  # entered in this thread; the loop's task copies its context
                value = app.middleware.execute(
                    ctx, lambda: asyncio.run(_call_async(task, args, kwargs, job.timeout))
                )
            else:
                value = asyncio.run(_call_async(task, args, kwargs, job.timeout))
        elif around:  # middlewares' around_execute (an error entering one fails the attempt)
            value = app.middleware.execute(ctx, lambda: task.fn(*args, **kwargs))
        else:
            value = task.fn(*args, **kwargs)
    except Snooze as snooze:
        return None, Outcome.snoozed(snooze.seconds)
    except BaseException as exc:  # the job's failure, whatever it is, is data
        # SystemExit, KeyboardInterrupt, GeneratorExit raised by the task included: the
        # slot's thread must live on to serve the next job (a real ^C is delivered to the
        # main thread, never here).
        if isinstance(exc, JobTimeout) and not exc.args:  # raised by the thread watchdog
            exc = JobTimeout(f"task {task.name} timed out after {job.timeout} s")
        return None, Outcome.failed(exc)
    finally:
        reset_current(token)
    return value, None


async def _call_async(
    task: Task[Any, Any], args: list[Any], kwargs: dict[str, Any], timeout: float | None
) -> Any:
    import asyncio

    try:
        async with asyncio.timeout(timeout):
            return await task.fn(*args, **kwargs)
    except TimeoutError:
        raise JobTimeout(f"task {task.name} timed out after {timeout} s") from None


async def run_async(
    app: App,
    job: ClaimedJob,
    ctx: JobContext,
    offload: Callable[..., Awaitable[Any]] | None = None,
) -> Outcome:
    """Run a job on the current event loop: async tasks directly (cancellable, timed out
    with ``asyncio.timeout``), sync tasks in a thread (``offload``, by default
    ``asyncio.to_thread``)."""
    task = app.tasks.get(job.task)
    if task is not None and task.options.batch is not None:

        async def invoke(t: Task[Any, Any], a: list[Any]) -> tuple[Any, Outcome | None]:
            return await _invoke_async(app, t, a, {}, job, ctx, offload)

        return await run_batch_async(app, job, ctx, invoke)
    prepared = prepare(app, job)
    if isinstance(prepared, Outcome):
        return prepared
    task, args, kwargs = prepared
    value, failed = await _invoke_async(app, task, args, kwargs, job, ctx, offload)
    return failed if failed is not None else success(value, task)


async def _invoke_async(
    app: App,
    task: Task[Any, Any],
    args: list[Any],
    kwargs: dict[str, Any],
    job: ClaimedJob,
    ctx: JobContext,
    offload: Callable[..., Awaitable[Any]] | None,
) -> tuple[Any, Outcome | None]:
    """Call the body on the loop: ``(value, None)``, or ``(None, outcome)``."""
    import asyncio

    if task.sealer is not None:  # for reporters that must not send them (contrib.sentry)
        ctx._secrets = task.sealer.values(args, kwargs)
    token = set_current(ctx)
    mws = app.middleware
    try:
        if task.is_async:
            if mws.around:
                value = await mws.execute_async(
                    ctx, lambda: _call_async(task, args, kwargs, job.timeout)
                )
            else:
                value = await _call_async(task, args, kwargs, job.timeout)
        else:
            run = offload or asyncio.to_thread
            if mws.around:  # entered in this asyncio task; to_thread copies its context
                value = await mws.execute_async(ctx, lambda: run(task.fn, *args, **kwargs))
            else:
                value = await run(task.fn, *args, **kwargs)
    except asyncio.CancelledError:
        return None, Outcome.cancelled()
    except Snooze as snooze:
        return None, Outcome.snoozed(snooze.seconds)
    except BaseException as exc:  # SystemExit & co. too: they would stop the event loop
        return None, Outcome.failed(exc)
    finally:
        reset_current(token)
    return value, None


# -- batch calls (@app.task(batch=conveyor.Batch(...)), worker/batching.py) -------------
#
# Running one batch call: decode each member job, call the body once with the list of
# :class:`~conveyor.batch.BatchItem`, and turn what it returned into one outcome per job.
#
# A call is gathered by the worker (``batching.py``) and runs in the slot of its first
# job (the *leader*, the job the executor was given); its other jobs (*riders*) get their
# outcomes in :attr:`BatchCall.outcomes`, written when the leader's slot reports back. A
# batch task's job run without a gathered call (a one-slot inline worker, the testing
# modes, ``task.execute``, a process pool) is a call of one.
#
# A member that cannot run (undecodable, unknown payload shape) ends dead on its own
# without being in the call; the body raising fails every item in it (each retried as its
# own attempts allow); a returned exception instance fails that item only.
#
# Example:

#: Calls the body with ``[items]``: ``(value, None)``, or ``(None, outcome)`` if it raised.
Invoke = Callable[["Task[Any, Any]", list[Any]], tuple[Any, Outcome | None]]
AsyncInvoke = Callable[["Task[Any, Any]", list[Any]], Awaitable[tuple[Any, Outcome | None]]]


class BatchCall:
    """The jobs of one call, leader first, and their outcomes once it ran."""

    __slots__ = ("members", "number", "outcomes")

    def __init__(self, members: list[tuple[ClaimedJob, JobContext]], number: int = 0) -> None:
        self.members = members
        #: this worker's count of calls (the event log names it: "batch 12 of 100")
        self.number = number
        self.outcomes: dict[str, Outcome] = {}


def _gather(
    app: App, job: ClaimedJob, ctx: JobContext
) -> tuple[BatchCall, Task[Any, Any] | None, list[BatchItem[Any]]]:
    from conveyor.batch import BatchItem  # only batch tasks pay for its imports

    call: BatchCall = ctx._batch if ctx._batch is not None else BatchCall([(job, ctx)])
    task = None
    items: list[BatchItem[Any]] = []
    for member, member_ctx in call.members:
        prepared = prepare(app, member)
        if isinstance(prepared, Outcome):
            call.outcomes[member.id] = prepared
            continue
        task, args, kwargs = prepared
        items.append(BatchItem(args, kwargs, member_ctx))
    return call, task, items


def _settle(
    call: BatchCall,
    task: Task[Any, Any],
    items: list[BatchItem[Any]],
    value: Any,
    failed: Outcome | None,
) -> None:
    from conveyor.batch import split

    if failed is None:
        try:
            each = split(value, len(items), task.name)
        except TypeError as exc:
            failed = Outcome.failed(exc)
    for index, item in enumerate(items):
        if failed is not None:
            call.outcomes[item.id] = failed
            continue
        answer = each[index]
        if isinstance(answer, Snooze):
            call.outcomes[item.id] = Outcome.snoozed(answer.seconds)
        elif isinstance(answer, BaseException):
            call.outcomes[item.id] = Outcome.failed(answer)
        else:
            call.outcomes[item.id] = success(answer, task)


def run_batch(app: App, job: ClaimedJob, ctx: JobContext, invoke: Invoke) -> Outcome:
    """Run the call ``job`` leads (or a call of one); the leader's outcome."""
    call, task, items = _gather(app, job, ctx)
    if task is not None and items:
        value, failed = invoke(task, [items])
        _settle(call, task, items, value, failed)
    return call.outcomes[job.id]


async def run_batch_async(
    app: App, job: ClaimedJob, ctx: JobContext, invoke: AsyncInvoke
) -> Outcome:
    """:func:`run_batch` on an event loop (the async pool)."""
    call, task, items = _gather(app, job, ctx)
    if task is not None and items:
        value, failed = await invoke(task, [items])
        _settle(call, task, items, value, failed)
    return call.outcomes[job.id]
