"""Class-based tasks: a class whose ``execute`` method is the task body.

Besides ``@app.task``, a task can be a class (as in seed 004)::

    class RecalculateAccount(app.Task, queue="critical", max_attempts=10):
        def execute(self, account_id: int) -> int: ...

        @classmethod
        def retry_delay(cls, attempt: int, error: BaseException) -> float | None:
            return 5.0

Defining the class registers an ordinary :class:`~conveyor.task.Task` under the class's
``module.qualname`` (as a decorated function gets), whose function makes a fresh
instance per job (``cls()``) and calls its ``execute``. Everything else is that task:
workers of every pool, testing modes and workflows see no difference, and the class
methods ``enqueue``, ``aenqueue``, ``enqueue_many``, ``enqueue_after``, ``schedule_at``
(and their ``a`` twins), ``with_options``, ``s`` and Celery's ``delay`` and
``apply_async`` delegate to it. ``RecalculateAccount.
task`` is the registered task itself; ``RecalculateAccount.task.execute(42)`` runs the body
as a worker would (codec round trip, ``current_job()``), and ``RecalculateAccount().
execute(42)`` calls the method plainly, as calling a decorated function does.

Class keywords are the options of ``@app.task`` (``name``, ``queue``, ``priority``,
``max_attempts``, ``timeout``, ``retry``, ``lease``, the flow-control ones, ``secret``,
``store_result``, ``result_ttl``, ``expires``); a subclass inherits its bases' keywords. A class
without ``execute`` is an abstract base (shared options), not registered.
``retry_delay(cls, attempt, error)`` (or ``(cls, attempt, error, job)``) is the task's
``retry_delay`` hook: seconds, ``"drop"``, ``"archive"`` or ``None`` (the backoff).

Types: ``app.Task`` is checked by pyright; mypy cannot take an instance attribute as a
base class, so code checked by mypy spells it ``class X(conveyor.ClassTask, app=app,
...)`` (the same class at run time). Either way ``X.enqueue(42)`` is ``Job[R]`` with
``R`` from ``execute``'s return annotation (awaited for ``async def``) and the
arguments checked against ``execute``'s parameters.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> class Double(app.Task, queue="math"):
    ...     def execute(self, x: int) -> int:
    ...         return 2 * x
    >>> Double.task.name, Double.task.options.queue
    ('conveyor.classtask.Double', 'math')
    >>> Double.enqueue(21).status
    <JobState.QUEUED: 'queued'>
    >>> Double.task.execute(21)
    42
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from conveyor.classtask_enqueue import (
    REGISTERED_TASK,
    ClassEnqueueMethods,
    RegisteredTask,
    task_of,
)
from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.fair import FairKey, FairWeights
    from conveyor.limits import LimitKey
    from conveyor.retry import Backoff
    from conveyor.sequences import SequenceKey
    from conveyor.task import Enqueuer
    from conveyor.unique import Seconds, UniqueKey

T = TypeVar("T")


#: what ``retry_delay`` hooks may take besides (attempt, error): the job, as decorated
#: tasks' hooks get it
_HOOK_ARITIES = (2, 3)


class ClassTask(ClassEnqueueMethods):
    """Base of class-based tasks; ``app.Task`` is this class bound to ``app``.

    See the module docstring. Class keywords: ``app`` (when not subclassing
    ``app.Task``) and the options of ``@app.task``.
    """

    #: the app the task registers with (``app.Task`` or ``app=``)
    app: ClassVar[App]
    #: the registered task (see :class:`~conveyor.classtask_enqueue.RegisteredTask`)
    task: ClassVar[RegisteredTask] = REGISTERED_TASK
    #: class keywords given on this class and its bases, merged
    _conveyor_options: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(
        cls,
        *,
        app: App | None = None,
        name: str | None = None,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        retry: Backoff | None = None,
        lease: float | None = None,
        unique_key: UniqueKey = None,
        unique_for: Seconds | None = None,
        on_conflict: str | None = None,
        concurrency: int | None = None,
        rate: str | None = None,
        limit_key: LimitKey = None,
        sequence_key: SequenceKey = None,
        on_failure: str | None = None,
        fair_key: FairKey = None,
        fair_weights: FairWeights = None,
        debounce: Seconds | None = None,
        max_wait: Seconds | None = None,
        throttle: Seconds | None = None,
        secret: Sequence[str] | None = None,
        store_result: bool | None = None,
        result_ttl: Seconds | None = None,
        expires: Seconds | None = None,
    ) -> None:
        """Register the class as a task. Over 60 lines: its keywords are the options of
        ``@app.task``, one line each in the signature and in ``given``."""
        # The options of @app.task, spelled out so that type checkers check them (an
        # unknown keyword is a TypeError); retry_delay is the classmethod instead.
        super().__init_subclass__()
        if app is not None:
            cls.app = app
        given = {
            "queue": queue,
            "priority": priority,
            "max_attempts": max_attempts,
            "timeout": timeout,
            "retry": retry,
            "lease": lease,
            "unique_key": unique_key,
            "unique_for": unique_for,
            "on_conflict": on_conflict,
            "concurrency": concurrency,
            "rate": rate,
            "limit_key": limit_key,
            "sequence_key": sequence_key,
            "on_failure": on_failure,
            "fair_key": fair_key,
            "fair_weights": fair_weights,
            "debounce": debounce,
            "max_wait": max_wait,
            "throttle": throttle,
            "secret": secret,
            "store_result": store_result,
            "result_ttl": result_ttl,
            "expires": expires,
        }
        # The name is this class's own: a subclass gets its own module.qualname.
        cls._conveyor_options = {
            **cls._conveyor_options,
            **{k: v for k, v in given.items() if v is not None},
        }
        execute = getattr(cls, "execute", None)
        if execute is None:
            if name is not None:
                raise ConfigurationError(f"{cls.__qualname__}: name= needs an execute method")
            return  # an abstract base: shared options only
        if not hasattr(cls, "app"):
            raise ConfigurationError(
                f"{cls.__qualname__} has no app: subclass app.Task, or pass app=app"
            )
        declared = inspect.getattr_static(cls, "execute")
        if not inspect.isfunction(declared):  # a staticmethod, classmethod, property...
            raise ConfigurationError(
                f"{cls.__qualname__}.execute must be a plain method (def or async def "
                f"execute(self, ...)), got {type(declared).__name__}"
            )
        try:  # every job makes an instance: cls() must work
            inspect.signature(cls).bind()
        except TypeError:
            raise ConfigurationError(
                f"{cls.__qualname__}() must take no arguments: each job makes a fresh instance"
            ) from None
        hook = _retry_hook(cls)
        extra = {"retry_delay": hook} if hook is not None else {}
        task = cls.app.task(name=name, **cls._conveyor_options, **extra)(_body_of(cls, execute))
        cls._conveyor_task = task  # type: ignore[attr-defined]  # read by _RegisteredTask


class TaskMarker:
    """Base of every task's enqueue methods (:class:`~conveyor.task.Enqueuer`): lets the
    modules below task.py (compose.py's ``then`` and chains) know a task when they see
    one without importing task.py, which builds its signatures with them."""

    __slots__ = ()


@overload
def as_task(target: type[ClassTask]) -> Enqueuer[Any, Any]: ...


@overload
def as_task(target: T) -> T: ...


def as_task(target: Any) -> Any:
    """What a class-based task stands for where a task is taken (testing assertions,
    ``then``, ``@app.periodic``): its registered task; anything else as it is."""
    if isinstance(target, type) and issubclass(target, ClassTask):
        return task_of(target)
    return target


def _body_of(cls: type[Any], execute: Any) -> Any:
    """The function registered for ``cls``: a fresh instance per call runs ``execute``.

    It carries ``execute``'s signature without ``self`` and its annotations (the
    codec, the argument checks and secret parameters read them), and the class's module
    and qualname (the default task name)."""
    body: Any
    if inspect.iscoroutinefunction(execute):

        async def run_async(*args: Any, **kwargs: Any) -> Any:
            return await cls().execute(*args, **kwargs)

        body = run_async
    else:

        def run(*args: Any, **kwargs: Any) -> Any:
            return cls().execute(*args, **kwargs)

        body = run

    signature = inspect.signature(execute)
    parameters = list(signature.parameters.values())
    if not parameters or parameters[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise ConfigurationError(f"{cls.__qualname__}.execute must take self first")
    body.__signature__ = signature.replace(parameters=parameters[1:])
    body.__annotations__ = {
        k: v for k, v in execute.__annotations__.items() if k != parameters[0].name
    }
    # get_type_hints follows __wrapped__ to the globals the annotations are written in
    body.__wrapped__ = execute
    body.__module__ = cls.__module__
    body.__qualname__ = cls.__qualname__
    body.__name__ = cls.__name__
    body.__doc__ = cls.__doc__ or execute.__doc__
    return body


def _retry_hook(cls: type[Any]) -> Any:
    """``cls.retry_delay`` as the task's ``retry_delay(attempt, error, job)`` hook."""
    method = getattr(cls, "retry_delay", None)
    if method is None:
        return None
    if not inspect.ismethod(method):
        raise ConfigurationError(f"{cls.__qualname__}.retry_delay must be a classmethod")
    takes = len(inspect.signature(method).parameters)
    if takes not in _HOOK_ARITIES:
        raise ConfigurationError(
            f"{cls.__qualname__}.retry_delay must take (cls, attempt, error) or "
            f"(cls, attempt, error, job), it takes {takes + 1} parameters"
        )
    if takes == 3:
        return method

    def hook(attempt: int, error: BaseException, job: Any) -> Any:
        return method(attempt, error)

    return hook
