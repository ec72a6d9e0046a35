"""Running one batch call: decode each member job, call the body once with the list of
:class:`~conveyor.batch.BatchItem`, and turn what it returned into one outcome per job.

A call is gathered by the worker (``batching.py``) and runs in the slot of its first
job (the *leader*, the job the executor was given); its other jobs (*riders*) get their
outcomes in :attr:`BatchCall.outcomes`, written when the leader's slot reports back. A
batch task's job run without a gathered call (a one-slot inline worker, the testing
modes, ``task.execute``, a process pool) is a call of one.

A member that cannot run (undecodable, unknown payload shape) ends dead on its own
without being in the call; the body raising fails every item in it (each retried as its
own attempts allow); a returned exception instance fails that item only.

Example:
    >>> import conveyor
    >>> from conveyor.backends.base import ClaimedJob
    >>> from conveyor.context import context_of
    >>> from conveyor.worker.runner import run_sync
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(name="sq", batch=conveyor.Batch(size=10))
    ... def sq(items: list[conveyor.BatchItem[[int]]]) -> list[int]:
    ...     return [i.args[0] ** 2 for i in items]
    >>> jobs = [ClaimedJob(f"j{n}", "sq", "q", f'{{"args":[{n}],"kwargs":{{}}}}', 1, 3, 1,
    ...                    None, 30.0, 0.0, 0.0, 0, 0) for n in (2, 3)]
    >>> ctx = context_of(jobs[0])
    >>> ctx._batch = call = BatchCall([(jobs[0], ctx), (jobs[1], context_of(jobs[1]))])
    >>> run_sync(app, jobs[0], ctx).result, call.outcomes["j3"].result
    ('4', '9')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import ClaimedJob
from conveyor.batch import BatchItem, split
from conveyor.context import JobContext
from conveyor.errors import Snooze
from conveyor.worker.outcome import Outcome
from conveyor.worker.runner import prepare, success

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.task import Task

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
