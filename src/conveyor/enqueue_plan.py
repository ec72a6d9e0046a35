"""The one enqueue plan every enqueue method of a task goes through.

:class:`Planner` checks and encodes a task's calls (``TypeError`` / ``EncodeError``
before anything is written), builds what to write (one shared
:class:`JobInsertBatchParams` for plain jobs, the fast path; one
:class:`JobInsertParams` each when a job has flow fields) and writes it with the
backend's one ``job_insert_many`` (or the caller's connection inside
``conveyor.transaction``). The public enqueue methods are task.py's ``Enqueuer``.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def add(a: int, b: int) -> int:
    ...     return a + b
    >>> plan = add._plan([call_of(Args(1, 2)), call_of((3, 4))], None)
    >>> (plan.task.rsplit('.', 1)[-1], len(plan.ids))
    ('add', 2)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from conveyor import fair, limits, options, sequences, transactions, unique
from conveyor import headers as job_headers
from conveyor.aio import to_thread
from conveyor.backends.base import (
    JobInsertBatchParams,
    JobInsertParams,
    flow_features_of,
    require_feature,
)
from conveyor.codec import encode_payload
from conveyor.errors import ConfigurationError
from conveyor.ids import new_id, new_ids
from conveyor.middleware import NewJob
from conveyor.task_options import Resolved

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.job import Job
    from conveyor.task import Task

P = ParamSpec("P")
R = TypeVar("R")


class Args(Generic[P]):
    """Arguments for one job of ``enqueue_many``: ``Args(1, 2, key="v")``.

    Plain tuples/lists (positional) and dicts (keywords) work too. Type checkers check
    ``Args(...)`` items against the task's parameters (mypy everywhere; pyright when the
    ``Args(...)`` is written in the call, as in ``enqueue_many(Args(i) for i in ids)``);
    tuples and dicts are checked only when enqueued.
    """

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: P.args, **kwargs: P.kwargs) -> None:
        self.args = args
        self.kwargs = kwargs


_NO_KWARGS: Mapping[str, Any] = {}


def call_of(
    item: Args[Any] | Sequence[Any] | Mapping[str, Any],
) -> tuple[Sequence[Any], Mapping[str, Any]]:
    """(args, kwargs) of one ``enqueue_many`` item."""
    if type(item) is tuple or type(item) is list:  # the common case, checked first
        return item, _NO_KWARGS
    if isinstance(item, Args):
        return item.args, item.kwargs
    if isinstance(item, Mapping):
        return (), item
    if isinstance(item, (list, tuple)):
        return item, _NO_KWARGS
    raise TypeError(
        "enqueue_many items must be Args(...), a tuple/list of positional "
        f"arguments or a dict of keyword arguments, got {type(item).__name__}"
    )


Calls = Sequence[tuple[Sequence[Any], Mapping[str, Any]]]
#: What ``_write`` writes: one batch of plain jobs, or one params record per job.
Plan = JobInsertBatchParams | list[JobInsertParams]


_JOB: list[type[Job[Any]]] = []


def job_class() -> type[Job[Any]]:
    """:class:`~conveyor.job.Job`, imported on first use (job.py imports this module)
    and then kept: an ``import`` statement per enqueue costs more than the lookup."""
    if not _JOB:
        from conveyor.job import Job

        _JOB.append(Job)
    return _JOB[0]


class Planner(Generic[P, R]):
    """A task and its per-call overrides, and the plan they enqueue by.

    Every enqueue method (task.py's ``Enqueuer``) goes through :meth:`_plan`, then
    :meth:`_write` (or :meth:`_awrite`, its asyncio twin).
    """

    def __init__(self, task: Task[P, R], overrides: Mapping[str, Any]) -> None:
        self._task = task
        self._overrides = dict(overrides)
        self._options: Resolved | None = None  # resolved on first use (Task sets options late)

    @staticmethod
    def _job(app: App, job_id: str, task: Task[Any, Any] | None) -> Job[Any]:
        """A handle on a job just written (a workflow's steps get theirs here too)."""
        return job_class()(app, job_id, task)

    def _resolved(self) -> Resolved:
        if self._options is None:
            caps = self._task.app.settings.queue_concurrency
            self._options = Resolved(self._task.options, self._overrides, caps)
        return self._options

    # -- the plan ------------------------------------------------------------------------

    def _plan(
        self, calls: Calls, run_at: float | None
    ) -> JobInsertBatchParams | list[JobInsertParams]:
        """Check and encode ``calls`` (``TypeError`` / ``EncodeError`` before anything is
        written) and build the insert. Everything not per call is hoisted out of the loop
        (``enqueue_many`` spends its time per item; measured in BENCHMARKS.md)."""
        task, r = self._task, self._resolved()
        check, max_bytes = task.check_arguments, task.app.max_payload_bytes
        check_types = task.check_types
        if run_at is None:
            run_at = r.run_at()
        stamping = bool(r.headers) or bool(task.app.middleware.enqueue)
        if r.plain:
            payloads = []
            sealer = task.sealer
            for args, kwargs in calls:
                check(*args, **kwargs)
                if sealer is not None:
                    if check_types is not None:
                        check_types(args, kwargs, 0)
                    args, kwargs = sealer.seal(args, kwargs)
                payloads.append(encode_payload(args, kwargs, max_bytes=max_bytes))
                if check_types is not None and sealer is None:  # after encoding: what
                    check_types(args, kwargs, 0)  # cannot be stored says so first
            ids = new_ids(len(payloads))
            return JobInsertBatchParams(
                task=task.options.name,
                queue=r.queue,
                ids=ids,
                payloads=payloads,
                priority=r.priority,
                run_at=run_at,
                max_attempts=r.max_attempts,
                timeout=r.timeout,
                lease=task.options.lease,
                headers=[self._headers(r, i, run_at) for i in ids] if stamping else None,
                expires_at=r.expires_at(),
            )
        return [self._job_params(r, args, kwargs, run_at) for args, kwargs in calls]

    def _headers(self, r: Resolved, job_id: str, run_at: float | None) -> str | None:
        """The stored headers of one job: ``with_options(headers=)`` first, then each
        middleware's ``on_enqueue`` (in the order added) may change them; the bounds
        are checked on the result (conveyor/headers.py)."""
        hooks = self._task.app.middleware.enqueue
        given = dict(r.headers) if r.headers else {}
        if not hooks:
            return job_headers.encode(given)
        job = NewJob(job_id, self._task.options.name, r.queue, r.priority, run_at, given)
        self._task.app.middleware.call(hooks, job)
        return job_headers.encode(job_headers.check(job.headers))

    def _job_params(
        self, r: Resolved, args: Sequence[Any], kwargs: Mapping[str, Any], run_at: float | None
    ) -> JobInsertParams:
        """One job as its own params record (flow fields, workflow steps, periodic slots)."""
        task = self._task
        # A workflow step gets its parents' result(s) first: check with a stand-in.
        task.check_arguments(*((None,) if r.pipe else ()), *args, **kwargs)
        if task.check_types is not None:  # the stand-in is not checked
            task.check_types((None, *args) if r.pipe else args, kwargs, 1 if r.pipe else 0)
        stored_args, stored_kwargs = (
            (args, kwargs) if task.sealer is None else task.sealer.seal(args, kwargs)
        )
        payload = encode_payload(stored_args, stored_kwargs, max_bytes=task.app.max_payload_bytes)
        job_id = new_id()
        stamping = bool(r.headers) or bool(task.app.middleware.enqueue)
        return JobInsertParams(
            id=job_id,
            task=task.options.name,
            queue=r.queue,
            payload=payload,
            priority=r.priority,
            run_at=run_at,
            max_attempts=r.max_attempts,
            timeout=r.timeout,
            lease=task.options.lease,
            headers=self._headers(r, job_id, run_at) if stamping else None,
            expires_at=r.expires_at(),
            **self._flow_fields(r, args, kwargs),
        )

    def _one(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> JobInsertParams:
        """The params of one job enqueued now with these options (workflows, periodic)."""
        r = self._resolved()
        return self._job_params(r, args, kwargs, r.run_at())

    def _flow_fields(
        self, r: Resolved, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Unique key, parents and limit of one job (the parts that depend on its args)."""
        opts = self._task.options
        fields: dict[str, Any] = {}
        if r.unique_key is not None:
            key = unique.key_for(r.unique_key, args, kwargs)
            if key is not None:
                options.check_name("unique key", key)  # a function's answer, per job
                fields["unique_key"] = key
                fields["on_conflict"] = r.on_conflict
                fields["unique_until"] = (
                    None if r.unique_for is None else time.time() + unique.seconds(r.unique_for)
                )
                if r.max_wait is not None:
                    fields["max_wait"] = r.max_wait
        if r.depends_on:
            fields["depends_on"] = r.depends_on
            fields["pipe"] = r.pipe
        if opts.sequence_key is not None:
            key = sequences.key_for(opts.name, opts.sequence_key, args, kwargs)
            if key is not None:
                if r.depends_on:
                    raise ConfigurationError(
                        f"{opts.name} is in a sequence: it cannot also wait on depends_on"
                    )
                options.check_name("sequence key", key)
                fields["sequence_key"] = key
                fields["pipe"] = sequences.PIPES[opts.on_failure or "block"]
        if opts.fair_key is not None:
            fair_key = fair.key_for(opts.fair_key, args, kwargs)
            if fair_key is not None:
                options.check_name("fair key", fair_key)
                fields["fair_key"] = fair_key
                fields["fair_weight"] = fair.weight_for(opts.fair_weights, fair_key)
        if r.limit:
            fields["limit"] = (
                limits.limit_for(
                    opts.name, opts.concurrency, opts.rate, opts.limit_key, args, kwargs
                )
                or r.queue_cap
            )
        return fields

    def _write(self, plan: Plan) -> list[Job[R]]:
        """Write a plan in one ``job_insert_many`` (all or nothing) and hand back Jobs.

        The one place every enqueue passes after its plan: inside
        ``conveyor.transaction(conn)`` it goes through the caller's connection, unless
        the app runs on a store put in place of its own (``App.on_store``: a testing
        mode's), which takes every write."""
        app = self._task.app
        joined = transactions.active() if app.substitute is None else None
        if joined is not None:
            transactions.store_of(app)  # opened first, with the reason if it cannot be
        if not self._checked(plan):
            return []
        if joined is not None:
            return self._written(plan, transactions.insert(app, joined, plan))
        return self._written(plan, app.backend.job_insert_many(plan))

    async def _awrite(self, plan: Plan) -> list[Job[R]]:
        """:meth:`_write` for the asyncio twins: the store's own insert in a thread (the
        loop never blocks on it); the caller's connection on the caller's terms."""
        app = self._task.app
        joined = transactions.active() if app.substitute is None else None
        if joined is None:
            return await to_thread(self._write, plan)
        transactions.store_of(app)
        if not self._checked(plan):
            return []
        return self._written(plan, await transactions.insert_async(app, joined, plan))

    def _checked(self, plan: Plan) -> bool:
        """False for an empty plan; raises when the store lacks a feature the plan uses."""
        if not isinstance(plan, JobInsertBatchParams):
            if not plan:
                return False
            backend = self._task.app.backend
            for feature in flow_features_of(plan):
                require_feature(backend, feature)
            if any(p.expires_at is not None for p in plan):
                require_feature(backend, "expires")
        elif plan.expires_at is not None:
            require_feature(self._task.app.backend, "expires")
        return True

    def _written(self, plan: Plan, ids: Sequence[str]) -> list[Job[R]]:
        """The handles of a written plan, after the enqueue hooks (metrics) saw it."""
        job = job_class()
        task = self._task
        app = task.app
        return [job(app, i, task) for i in ids]

    def _enqueue(self, calls: Calls, run_at: float | None) -> list[Job[R]]:
        return self._write(self._plan(calls, run_at)) if calls else []
