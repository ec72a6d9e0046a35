"""Batch handlers: ``@app.task(batch=conveyor.Batch(size=100, wait=1.0))``.

Each job of a batch task is a job of its own (its id, state, result, retries), enqueued
with the arguments of one item; a worker gathers up to ``size`` of its claimed jobs of
the task (waiting at most ``wait`` seconds for more) and calls the body once with the
list of them, each a :class:`BatchItem` (its job's ``args``, ``kwargs``, ``id``,
``attempt``). The body returns ``None`` (every item succeeded) or one outcome per item,
in order: a value (that job's result) or an exception instance (that job failed with
it, and is retried as its own attempts allow); raising fails every item.

The per-item signature is the parameter of ``BatchItem[...]``: ``BatchItem[[str, int]]``
types ``send.enqueue("a@b.c", 3)`` for mypy, and the enqueue checks the count and the
primitive types of the arguments as a plain task's would (positional only);
``BatchItem[...]`` takes any arguments.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(batch=conveyor.Batch(size=100, wait=0.5))
    ... def send(items: list[conveyor.BatchItem[[str, int]]]) -> list[int | Exception]:
    ...     return [n if n >= 0 else ValueError(to) for to, n in (i.args for i in items)]
    >>> send.enqueue("a@example.com", 3).status.value
    'queued'
    >>> send.enqueue("a@example.com")
    Traceback (most recent call last):
    TypeError: send() missing 1 required positional argument: 'p1'
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar, overload

from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    from conveyor.context import JobContext
    from conveyor.task import AsyncTask, Task

P = ParamSpec("P")
R = TypeVar("R")

#: The most items one call may take (a claim of that many rows is one statement).
MAX_SIZE = 10_000


@dataclasses.dataclass(frozen=True, slots=True)
class Batch:
    """How a batch task's jobs are gathered: up to ``size`` per call, waiting at most
    ``wait`` seconds after the first for more (0: call with what is claimed now).

    >>> Batch(size=0)
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: Batch size must be an integer from 1 to 10000, got 0
    """

    size: int = 100
    wait: float = 1.0

    def __post_init__(self) -> None:
        size, wait = self.size, self.wait
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_SIZE:
            raise ConfigurationError(
                f"Batch size must be an integer from 1 to {MAX_SIZE}, got {size!r}"
            )
        if (
            isinstance(wait, bool)
            or not isinstance(wait, (int, float))
            or not math.isfinite(wait)
            or wait < 0
        ):
            raise ConfigurationError(f"Batch wait must be a number of seconds >= 0, got {wait!r}")


class BatchItem(Generic[P]):
    """One job of a batch call: its decoded arguments and its context.

    ``BatchItem[[str, int]]`` is an item of a task enqueued as ``task.enqueue("x", 1)``;
    :meth:`call` calls a function with the item's arguments (typed by them).

    >>> from conveyor.context import JobContext
    >>> item = BatchItem(("a", 2), {}, JobContext("j1", "t", "q", 1, 3))
    >>> item.id, item.attempt, item.call(lambda to, n: to * n)
    ('j1', 1, 'aa')
    """

    __slots__ = ("args", "context", "kwargs")

    def __init__(self, args: Sequence[Any], kwargs: dict[str, Any], context: JobContext) -> None:
        self.args = tuple(args)
        self.kwargs = kwargs
        #: the job's context (``headers``, ``cancel_requested``, ``progress()``)
        self.context = context

    @property
    def id(self) -> str:
        return self.context.id

    @property
    def attempt(self) -> int:
        return self.context.attempt

    def call(self, fn: Callable[P, R]) -> R:
        """``fn(*item.args, **item.kwargs)``."""
        return fn(*self.args, **self.kwargs)

    def __repr__(self) -> str:
        return f"<BatchItem {self.id} args={self.args!r}>"


class BatchTaskDecorator(Protocol):
    """What ``@app.task(batch=conveyor.Batch(...))`` returns: the body takes
    ``list[BatchItem[P]]`` and its jobs are enqueued with ``P`` (one item's arguments);
    each job's result is one element of what the body returns."""

    @overload
    def __call__(
        self, fn: Callable[[list[BatchItem[P]]], Coroutine[Any, Any, Sequence[R] | None]], /
    ) -> AsyncTask[P, R]: ...

    @overload
    def __call__(self, fn: Callable[[list[BatchItem[P]]], Sequence[R] | None], /) -> Task[P, R]: ...


def check_options(batch: object, options: dict[str, Any]) -> None:
    """One-line errors for ``batch=`` and what it cannot be combined with.

    >>> check_options(Batch(), {"sequence_key": "k"})
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: a batch task cannot take sequence_key: a sequence runs its jobs one at a time
    """
    if batch is None:
        return
    if not isinstance(batch, Batch):
        raise ConfigurationError(
            f"batch must be conveyor.Batch(size=, wait=), got {type(batch).__name__}"
        )
    if options.get("sequence_key") is not None:
        raise ConfigurationError(
            "a batch task cannot take sequence_key: a sequence runs its jobs one at a time"
        )
    if options.get("secret"):
        raise ConfigurationError(
            "a batch task cannot take secret parameters (its items' arguments are not sealed)"
        )


def item_signature(fn: Callable[..., Any]) -> Callable[..., None]:
    """A stand-in function with the signature of one item, from the body's first
    parameter annotated ``list[BatchItem[[T1, T2]]]`` (positional ``p0: T1, p1: T2``);
    ``(*args, **kwargs)`` when it is ``BatchItem[...]`` or cannot be read. The task's
    argument checks and decoder are built from it.

    >>> def body(items: list[BatchItem[[str, int]]]) -> None: ...
    >>> import inspect
    >>> str(inspect.signature(item_signature(body)))
    '(p0: str, p1: int, /) -> None'
    """
    from conveyor.arity import _resolved_hints

    params = _parameters(fn)
    name = getattr(fn, "__name__", "task")
    hints = _resolved_hints(fn)
    types = _item_types(hints.get(params[0])) if len(params) == 1 else None
    if types is None:

        def anything(*args: Any, **kwargs: Any) -> None: ...

        anything.__name__ = anything.__qualname__ = name
        return anything
    import inspect

    parameters = [
        inspect.Parameter(f"p{i}", inspect.Parameter.POSITIONAL_ONLY, annotation=hint)
        for i, hint in enumerate(types)
    ]

    def stand_in(*args: Any) -> None: ...

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
    stand_in.__annotations__ = {f"p{i}": hint for i, hint in enumerate(types)}
    return stand_in


def _parameters(fn: Callable[..., Any]) -> list[str]:
    import inspect

    return list(inspect.signature(fn).parameters)


def _item_types(hint: Any) -> tuple[Any, ...] | None:
    """``(str, int)`` for ``list[BatchItem[[str, int]]]``; None when not that shape or
    ``BatchItem[...]``."""
    if typing.get_origin(hint) not in (list, Sequence) or not typing.get_args(hint):
        return None
    item = typing.get_args(hint)[0]
    if typing.get_origin(item) is not BatchItem:
        return None
    args = typing.get_args(item)
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    if any(a is Ellipsis for a in args) or any(isinstance(a, ParamSpec) for a in args):
        return None
    return tuple(args)


def split(value: object, count: int, task: str) -> list[object]:
    """The body's return value as one outcome per item: ``None`` for all (success), or
    the sequence it returned; a ``TypeError`` (raised) for anything else.

    >>> split(None, 2, "t"), split([1, ValueError("x")], 2, "t")[0]
    ([None, None], 1)
    >>> split([1], 2, "t")
    Traceback (most recent call last):
    ...
    TypeError: batch task t returned 1 outcome(s) for 2 item(s): return None or one per item, in order
    """
    if value is None:
        return [None] * count
    if isinstance(value, (list, tuple)) and len(value) == count:
        return list(value)
    got = f"{len(value)} outcome(s)" if isinstance(value, (list, tuple)) else type(value).__name__
    raise TypeError(
        f"batch task {task} returned {got} for {count} item(s): return None or one per item, "
        "in order"
    )
