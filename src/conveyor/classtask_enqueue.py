"""The enqueue methods of a class-based task, typed from its ``execute`` method.

:class:`ClassEnqueueMethods` is the base of :class:`~conveyor.classtask.ClassTask` that
gives ``X.enqueue(...)``, ``X.with_options(...)``, ``X.delay(...)`` and the rest: each
delegates to the task registered for ``X`` (``X.task``), with overloads that take the
parameters and the result from ``X.execute`` (awaited for ``async def``).

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> class Triple(app.Task):
    ...     def execute(self, x: int) -> int:
    ...         return 3 * x
    >>> task_of(Triple) is Triple.task
    True
"""

from __future__ import annotations

import datetime
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Never, ParamSpec, Protocol, TypeVar, overload

if TYPE_CHECKING:
    from conveyor.compose import Signature
    from conveyor.job import Job
    from conveyor.task import Args, AsyncTask, Delay, Enqueuer, Task, When
    from conveyor.unique import Seconds, UniqueKey

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
T = TypeVar("T")


class _Body(Protocol[P, R_co]):
    """A class whose ``execute`` takes ``P`` and returns ``R``."""

    def execute(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...


class _AsyncBody(Protocol[P, R_co]):
    """A class whose ``async def execute`` takes ``P`` and returns ``R`` when awaited."""

    def execute(self, *args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, R_co]: ...


class RegisteredTask:
    """``X.task``: the :class:`~conveyor.task.Task` registered for class ``X``, typed from
    ``X.execute`` (an :class:`~conveyor.task.AsyncTask` for ``async def execute``)."""

    @overload
    def __get__(self, obj: object, owner: type[_AsyncBody[P, R]]) -> AsyncTask[P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type[_Body[P, R]]) -> Task[P, R]: ...

    def __get__(self, obj: object, owner: type[Any]) -> Any:
        task = owner.__dict__.get("_conveyor_task")
        if task is None:
            raise TypeError(
                f"{owner.__qualname__} defines no execute method: it is an abstract task "
                "base, not a task"
            )
        return task


#: the one descriptor behind every class task's ``X.task``
REGISTERED_TASK = RegisteredTask()


def task_of(cls: type[Any]) -> Task[Any, Any]:
    """The task registered for class task ``cls`` (``TypeError`` for an abstract base)."""
    task: Task[Any, Any] = REGISTERED_TASK.__get__(None, cls)
    return task


class ClassEnqueueMethods:
    """The enqueue methods every class-based task has, delegated to its task."""

    # -- the enqueue methods of the registered task ---------------------------------------

    @overload
    @classmethod
    def enqueue(cls: type[_AsyncBody[P, R]], *args: P.args, **kwargs: P.kwargs) -> Job[R]: ...

    @overload
    @classmethod
    def enqueue(cls: type[_Body[P, R]], *args: P.args, **kwargs: P.kwargs) -> Job[R]: ...

    @classmethod
    def enqueue(cls, *args: Any, **kwargs: Any) -> Job[Any]:
        """Enqueue one job now (``Task.enqueue``)."""
        return task_of(cls).enqueue(*args, **kwargs)

    @overload
    @classmethod
    async def aenqueue(
        cls: type[_AsyncBody[P, R]], *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @overload
    @classmethod
    async def aenqueue(cls: type[_Body[P, R]], *args: P.args, **kwargs: P.kwargs) -> Job[R]: ...

    @classmethod
    async def aenqueue(cls, *args: Any, **kwargs: Any) -> Job[Any]:
        """Asyncio twin of :meth:`enqueue`."""
        return await task_of(cls).aenqueue(*args, **kwargs)

    @overload
    @classmethod
    def enqueue_many(
        cls: type[_AsyncBody[P, R]], items: Iterable[Args[P] | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]: ...

    @overload
    @classmethod
    def enqueue_many(
        cls: type[_Body[P, R]], items: Iterable[Args[P] | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]: ...

    @classmethod
    def enqueue_many(cls, items: Iterable[Any]) -> list[Job[Any]]:
        """Enqueue many jobs in one transaction (``Task.enqueue_many``)."""
        return task_of(cls).enqueue_many(items)

    @overload
    @classmethod
    async def aenqueue_many(
        cls: type[_AsyncBody[P, R]], items: Iterable[Args[P] | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]: ...

    @overload
    @classmethod
    async def aenqueue_many(
        cls: type[_Body[P, R]], items: Iterable[Args[P] | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]: ...

    @classmethod
    async def aenqueue_many(cls, items: Iterable[Any]) -> list[Job[Any]]:
        """Asyncio twin of :meth:`enqueue_many`."""
        return await task_of(cls).aenqueue_many(items)

    @overload
    @classmethod
    def enqueue_after(
        cls: type[_AsyncBody[P, R]], delay: Delay, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @overload
    @classmethod
    def enqueue_after(
        cls: type[_Body[P, R]], delay: Delay, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @classmethod
    def enqueue_after(cls, delay: Delay, *args: Any, **kwargs: Any) -> Job[Any]:
        """Enqueue to run after ``delay`` (``Task.enqueue_after``)."""
        return task_of(cls).enqueue_after(delay, *args, **kwargs)

    @overload
    @classmethod
    async def aenqueue_after(
        cls: type[_AsyncBody[P, R]], delay: Delay, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @overload
    @classmethod
    async def aenqueue_after(
        cls: type[_Body[P, R]], delay: Delay, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @classmethod
    async def aenqueue_after(cls, delay: Delay, *args: Any, **kwargs: Any) -> Job[Any]:
        """Asyncio twin of :meth:`enqueue_after`."""
        return await task_of(cls).aenqueue_after(delay, *args, **kwargs)

    @overload
    @classmethod
    def schedule_at(
        cls: type[_AsyncBody[P, R]], when: When, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @overload
    @classmethod
    def schedule_at(
        cls: type[_Body[P, R]], when: When, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @classmethod
    def schedule_at(cls, when: When, *args: Any, **kwargs: Any) -> Job[Any]:
        """Enqueue to run at ``when`` (``Task.schedule_at``)."""
        return task_of(cls).schedule_at(when, *args, **kwargs)

    @overload
    @classmethod
    async def aschedule_at(
        cls: type[_AsyncBody[P, R]], when: When, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @overload
    @classmethod
    async def aschedule_at(
        cls: type[_Body[P, R]], when: When, *args: P.args, **kwargs: P.kwargs
    ) -> Job[R]: ...

    @classmethod
    async def aschedule_at(cls, when: When, *args: Any, **kwargs: Any) -> Job[Any]:
        """Asyncio twin of :meth:`schedule_at`."""
        return await task_of(cls).aschedule_at(when, *args, **kwargs)

    @overload
    @classmethod
    def with_options(
        cls: type[_AsyncBody[P, R]],
        *,
        queue: str | None = None,
        priority: int | None = None,
        delay: Delay | None = None,
        at: When | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        unique_key: UniqueKey = None,
        unique_for: Seconds | None = None,
        on_conflict: str | None = None,
        depends_on: Sequence[Job[Any] | str] | None = None,
    ) -> Enqueuer[P, R]: ...

    @overload
    @classmethod
    def with_options(
        cls: type[_Body[P, R]],
        *,
        queue: str | None = None,
        priority: int | None = None,
        delay: Delay | None = None,
        at: When | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        unique_key: UniqueKey = None,
        unique_for: Seconds | None = None,
        on_conflict: str | None = None,
        depends_on: Sequence[Job[Any] | str] | None = None,
    ) -> Enqueuer[P, R]: ...

    @classmethod
    def with_options(cls, **options: Any) -> Enqueuer[Any, Any]:
        """The enqueue methods with per-call options (``Task.with_options``)."""
        return task_of(cls).with_options(**options)

    @classmethod
    def s(cls, *args: Any, **kwargs: Any) -> Signature:
        """A signature for workflows (``Task.s``): nothing is enqueued."""
        return task_of(cls).s(*args, **kwargs)

    # -- Celery's spellings (docs/migrating.md) ---------------------------------------------

    @overload
    @classmethod
    def delay(cls: type[_AsyncBody[P, R]], *args: P.args, **kwargs: P.kwargs) -> Job[R]: ...

    @overload
    @classmethod
    def delay(cls: type[_Body[P, R]], *args: P.args, **kwargs: P.kwargs) -> Job[R]: ...

    @classmethod
    def delay(cls, *args: Any, **kwargs: Any) -> Job[Any]:
        """Celery's name for :meth:`enqueue` (``Task.delay``)."""
        return task_of(cls).enqueue(*args, **kwargs)

    @overload
    @classmethod
    def apply_async(
        cls: type[_AsyncBody[P, R]],
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        *,
        countdown: Delay | None = None,
        eta: When | None = None,
        expires: float | datetime.timedelta | datetime.datetime | None = None,
        queue: str | None = None,
        priority: int | None = None,
        **unsupported: Never,
    ) -> Job[R]: ...

    @overload
    @classmethod
    def apply_async(
        cls: type[_Body[P, R]],
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        *,
        countdown: Delay | None = None,
        eta: When | None = None,
        expires: float | datetime.timedelta | datetime.datetime | None = None,
        queue: str | None = None,
        priority: int | None = None,
        **unsupported: Never,
    ) -> Job[R]: ...

    @classmethod
    def apply_async(
        cls,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Job[Any]:
        """Celery's ``apply_async`` (``Task.apply_async``)."""
        return task_of(cls).apply_async(args, kwargs, **options)
