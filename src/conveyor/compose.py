"""Workflows: chains, groups with a completion callback, and ``depends_on``.

A workflow is stored whole in the backend when it is enqueued (one transaction): every
step is a job, the later ones in state ``waiting`` with their parents recorded. When a
parent succeeds, the backend makes its dependants ready *in the same commit as the
parent's finish*, putting the parent's result first in their arguments; when a parent
ends ``dead`` or ``cancelled`` its dependants (and theirs) become ``cancelled`` with the
reason. Nothing lives in worker memory, so a restart anywhere in the middle resumes.

API (``task.s(...)`` is a signature: a task and its arguments, not enqueued):

- ``conveyor.chain(a.s(1), b.s(), c.s(x=2)).enqueue()`` -> the last job's handle; ``b``
  gets ``a``'s result as its first argument, ``c`` gets ``b``'s.
- ``conveyor.group(a.s(1), a.s(2)).then(total.s()).enqueue()`` -> the callback's
  handle; ``total`` gets the list of results in the group's order.
- ``(a.s(1) | b.s() | c.s(x=2)).enqueue()`` -> the same chain, Celery's spelling
  (``x | y`` is ``x.then(y)`` for signatures, groups and chains).
- ``job.then(b.s())`` -> chain one more step after an enqueued job.
- ``job.on_failure(alert.s())`` -> runs only if ``job`` ends dead or cancelled (on the
  last step of a chain: if any step fails), with what happened as first argument.
- ``task.with_options(depends_on=[job1, job2]).enqueue(...)`` -> waits for both, and
  gets no results passed in.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def fetch(n: int) -> int:
    ...     return n * 10
    >>> @app.task
    ... def total(values: list[int]) -> int:
    ...     return sum(values)
    >>> last = conveyor.group(fetch.s(1), fetch.s(2)).then(total.s()).enqueue()
    >>> last.status
    <JobState.WAITING: 'waiting'>
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from conveyor import transactions
from conveyor.backends.base import JobInsertParams, require_feature
from conveyor.classtask import TaskMarker, as_task
from conveyor.errors import ConfigurationError
from conveyor.rules import PIPE_ALL, PIPE_FAILURE, PIPE_NONE, PIPE_ONE

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.job import Job
    from conveyor.task import Enqueuer


class Signature:
    """A task (or ``task.with_options(...)``) with its arguments, to run later."""

    __slots__ = ("args", "enqueuer", "kwargs")

    def __init__(
        self, enqueuer: Enqueuer[Any, Any], args: Sequence[Any], kwargs: dict[str, Any]
    ) -> None:
        self.enqueuer = enqueuer
        self.args = tuple(args)
        self.kwargs = kwargs

    def __repr__(self) -> str:
        return f"<Signature {self.enqueuer._task.name}{self.args!r}>"

    @property
    def app(self) -> App:
        return self.enqueuer._task.app

    def params(self, parents: Sequence[str] = (), pipe: int = PIPE_NONE) -> JobInsertParams:
        overrides = dict(self.enqueuer._overrides)
        if parents:
            overrides.update(depends_on=tuple(parents), pipe=pipe)
        return self.enqueuer._overridden(overrides)._one(self.args, self.kwargs)

    def enqueue(self) -> Job[Any]:
        """Enqueue this one step on its own."""
        return self.enqueuer._write([self.params()])[0]

    def then(self, *steps: Signature | Group) -> Chain:
        return Chain(self, *steps)

    def __or__(self, other: Signature | Group | Chain) -> Chain:
        """``a.s(1) | b.s()``: the chain ``a.s(1).then(b.s())`` (Celery's spelling)."""
        return _piped(self, other)

    def delay(self) -> Job[Any]:
        """Celery's name for :meth:`enqueue` (the arguments are the signature's)."""
        return self.enqueue()


class Group:
    """Steps that run in parallel; ``.then(callback)`` gets the list of their results."""

    __slots__ = ("steps",)

    def __init__(self, *steps: Signature) -> None:
        if not steps:
            raise ConfigurationError("a group needs at least one step")
        self.steps = steps

    def then(self, *steps: Signature | Group) -> Chain:
        return Chain(self, *steps)

    def __or__(self, other: Signature | Group | Chain) -> Chain:
        """``group(...) | cb.s()``: the chain ``group(...).then(cb.s())``."""
        return _piped(self, other)

    def enqueue(self) -> list[Job[Any]]:
        """Enqueue every step (one transaction); their handles in order."""
        return Chain(self).enqueue_all()

    def delay(self) -> list[Job[Any]]:
        """Celery's name for :meth:`enqueue`."""
        return self.enqueue()


class Chain:
    """Steps that run one after the other, each receiving the previous result(s)."""

    __slots__ = ("steps",)

    def __init__(self, *steps: Signature | Group) -> None:
        if not steps:
            raise ConfigurationError("a chain needs at least one step")
        for earlier, later in itertools.pairwise(steps):
            if isinstance(earlier, Group) and isinstance(later, Group):
                raise ConfigurationError("a group cannot follow a group; add a callback between")
        self.steps = steps

    def then(self, *steps: Signature | Group) -> Chain:
        return Chain(*self.steps, *steps)

    def __or__(self, other: Signature | Group | Chain) -> Chain:
        """``chain | step``: ``chain.then(step)``; ``chain | chain`` joins the two."""
        return _piped(self, other)

    def enqueue(self) -> Job[Any]:
        """Enqueue the whole chain in one transaction; the last step's handle."""
        return self.enqueue_all()[-1]

    def delay(self) -> Job[Any]:
        """Celery's name for :meth:`enqueue`."""
        return self.enqueue()

    def enqueue_all(self) -> list[Job[Any]]:
        """Enqueue the whole chain; every step's handle in order (groups flattened)."""
        params: list[JobInsertParams] = []
        parents: tuple[str, ...] = ()
        for step in self.steps:
            pipe = PIPE_NONE if not parents else PIPE_ONE if len(parents) == 1 else PIPE_ALL
            if isinstance(step, Signature):
                params.append(step.params(parents, pipe))
                parents = (params[-1].id,)
            else:
                members = [s.params(parents, pipe) for s in step.steps]
                params += members
                parents = tuple(m.id for m in members)
        first = _first_signature(self.steps)
        return _insert(first.app, params, first.enqueuer)


def chain(*steps: Signature | Group) -> Chain:
    """``chain(a.s(1), b.s())``: ``b`` runs after ``a`` succeeds, with ``a``'s result."""
    return Chain(*steps)


def group(*steps: Signature) -> Group:
    """``group(a.s(1), a.s(2))``: parallel steps; ``.then(cb.s())`` gets all results."""
    return Group(*steps)


def then(job: Job[Any], step: Any, **options: Any) -> Job[Any]:
    """Enqueue ``step`` after ``job`` succeeds, with ``job``'s result first."""
    sig = _as_signature(step, options)
    return _insert(job.app, [sig.params((job.id,), PIPE_ONE)], sig.enqueuer)[0]


def on_failure(job: Job[Any], step: Any, **options: Any) -> Job[Any]:
    """Enqueue ``step`` to run only if ``job`` ends dead or cancelled (a failure
    anywhere earlier in its chain cancels it, so this covers the whole chain); it gets
    ``{"job_id", "state", "reason", "error"}`` first. Cancelled if ``job`` succeeds."""
    sig = _as_signature(step, options)
    return _insert(job.app, [sig.params((job.id,), PIPE_FAILURE)], sig.enqueuer)[0]


def _as_signature(step: Any, options: dict[str, Any]) -> Signature:
    if isinstance(step, Signature):
        return step
    step = as_task(step)
    if isinstance(step, TaskMarker):  # a task: an Enqueuer
        task = cast("Enqueuer[Any, Any]", step)
        return Signature(task.with_options(**options) if options else task, (), {})
    raise TypeError(f"then() takes a task or task.s(...), got {type(step).__name__}")


def _piped(left: Signature | Group | Chain, right: object) -> Chain:
    """``left | right``: the steps of both, in order, as one chain (``.then``'s rules:
    a group cannot follow a group). Anything else is a one-line ``TypeError``."""
    if not isinstance(right, (Signature, Group, Chain)):
        hint = " (write task.s(...) to make a step)" if hasattr(right, "s") else ""
        raise TypeError(f"| chains signatures, groups and chains, not {type(right).__name__}{hint}")
    steps = left.steps if isinstance(left, Chain) else (left,)
    more = right.steps if isinstance(right, Chain) else (right,)
    return Chain(*steps, *more)


def _first_signature(steps: Sequence[Signature | Group]) -> Signature:
    first = steps[0]
    return first if isinstance(first, Signature) else first.steps[0]


def _insert(
    app: App, params: list[JobInsertParams], enqueuer: Enqueuer[Any, Any]
) -> list[Job[Any]]:
    """Write ``params`` in one go; their handles, made as ``enqueuer``'s jobs are."""
    # conveyor.transaction(conn): the caller's connection, as in Enqueuer._write (not
    # while the app runs on a store put in place of its own: a testing mode's)
    joined = transactions.active() if app.substitute is None else None
    require_feature(app.backend if joined is None else transactions.store_of(app), "workflows")
    if joined is not None:
        ids = transactions.insert(app, joined, params)
    else:
        ids = app.backend.job_insert_many(params)
    return [enqueuer._job(app, i, app.tasks.get(p.task)) for i, p in zip(ids, params, strict=True)]
