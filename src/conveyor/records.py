"""Frozen record classes that are cheap to *define*.

``import conveyor`` defines about forty small immutable records (the backend protocol's
parameters and rows in :mod:`conveyor.backends.base`). Declared with
``dataclasses.dataclass(frozen=True, slots=True)`` each cost ~0.7-1 ms to create on the
reference box (Python 3.11 ``exec``s five to seven generated methods per class), about 30
ms of a cold start whose target is 50 ms from process start to first job done. ``@record``
gives the same surface (keyword/positional ``__init__`` with defaults, ``__slots__``,
frozen, ``==``, ``hash``, ``repr``, ``__match_args__``, pickling) for ~20 µs per class:
``__init__`` is compiled on the class's first instantiation, so records nobody builds
cost nothing, and the other methods are shared generic functions.

Type checkers see a frozen dataclass through :func:`typing.dataclass_transform`.

Example:
    >>> @record
    ... class Point:
    ...     x: int
    ...     y: int = 0
    >>> p = Point(1, y=2)
    >>> p, p == Point(1, 2), astuple(p), asdict(Point(3))
    (Point(x=1, y=2), True, (1, 2), {'x': 3, 'y': 0})
    >>> p.x = 5
    Traceback (most recent call last):
    ...
    dataclasses.FrozenInstanceError: cannot assign to field 'x'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform

if TYPE_CHECKING:
    import dataclasses

T = TypeVar("T")

_MISSING = object()


def _fields(obj: Any) -> tuple[str, ...]:
    fields: tuple[str, ...] = type(obj).__record_fields__
    return fields


def _repr(self: Any) -> str:
    inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in _fields(self))
    return f"{type(self).__qualname__}({inner})"


def _eq(self: Any, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return astuple(self) == astuple(other)


def _hash(self: Any) -> int:
    return hash(astuple(self))


def _frozen(message: str) -> dataclasses.FrozenInstanceError:
    # The error a frozen dataclass raises; dataclasses (and the inspect module it
    # imports) is loaded only here, not by defining records (issue 16's cold start).
    import dataclasses

    return dataclasses.FrozenInstanceError(message)


def _setattr(self: Any, name: str, value: object) -> None:
    raise _frozen(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise _frozen(f"cannot delete field {name!r}")


def _getstate(self: Any) -> tuple[Any, ...]:
    return astuple(self)


def _setstate(self: Any, state: tuple[Any, ...]) -> None:
    for name, value in zip(_fields(self), state, strict=True):
        object.__setattr__(self, name, value)


def _compile_init(cls: type, fields: tuple[str, ...], defaults: dict[str, Any]) -> Any:
    """The ``__init__`` of a frozen record: what a frozen dataclass's does (every field
    set despite the class's ``__setattr__``), about twice as fast. A dataclass calls
    ``object.__setattr__`` once per field (~0.6 µs each on the reference box: 10 µs for
    the 16 fields of a ``ClaimedJob``, built once per job claimed); this one moves the
    instance for the duration of the call to a twin class of the same layout without
    the frozen ``__setattr__``, stores each field plainly and moves it back (two
    ``__class__`` assignments: 4.7 µs for a ``ClaimedJob``; bench/HOTPATH.md). An
    instance of a subclass (whose layout may differ) takes the per-field path."""
    params = [f"{f}=__default_{f}" if f in defaults else f for f in fields]
    slow = [f"        __set(self, {f!r}, {f})" for f in fields]
    fast = [f"        self.{f} = {f}" for f in fields]
    source = (
        f"def __init__(self, {', '.join(params)}):\n"
        "    if self.__class__ is __cls:\n"
        "        __set(self, '__class__', __twin)\n"
        + "\n".join(fast or ["        pass"])
        + "\n        __set(self, '__class__', __cls)\n"
        "    else:\n" + "\n".join(slow or ["        pass"])
    )
    twin = type(cls.__name__, cls.__bases__, {"__slots__": fields})
    scope: dict[str, Any] = {"__set": object.__setattr__, "__cls": cls, "__twin": twin}
    scope.update({f"__default_{k}": v for k, v in defaults.items()})
    exec(source, scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


@dataclass_transform(frozen_default=True, eq_default=True)
def record(cls: type[T]) -> type[T]:
    """Turn an annotated class into a frozen, slotted record (see the module docstring).

    Fields are the class's own annotations in order; a class attribute of the same name
    is the field's default. No field factories, no inheritance of fields: records are
    plain rows.
    """
    # What inspect.get_annotations(cls) returns (the class's own, unevaluated), without
    # importing inspect.
    annotations: dict[str, Any] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    fields = tuple(n for n, hint in annotations.items() if "ClassVar" not in str(hint))
    defaults = {n: cls.__dict__[n] for n in fields if n in cls.__dict__}
    namespace = {
        k: v
        for k, v in cls.__dict__.items()
        if k not in defaults and k not in ("__dict__", "__weakref__")
    }
    box: list[type] = []

    def lazy_init(self: Any, *args: Any, **kwargs: Any) -> None:
        # First instantiation compiles the real __init__ and installs it on the class.
        owner = box[0]
        init = _compile_init(owner, fields, defaults)
        type.__setattr__(owner, "__init__", init)
        init(self, *args, **kwargs)

    namespace.update(
        __slots__=fields,
        __record_fields__=fields,
        __match_args__=fields,
        __init__=lazy_init,
        __repr__=_repr,
        __eq__=_eq,
        __hash__=_hash,
        __setattr__=_setattr,
        __delattr__=_delattr,
        __getstate__=_getstate,
        __setstate__=_setstate,
    )
    new_cls = type(cls.__name__, cls.__bases__, namespace)
    box.append(new_cls)
    return cast("type[T]", new_cls)


def fields(cls: type) -> tuple[str, ...]:
    """Field names of a record class in declaration order."""
    names: tuple[str, ...] = cls.__record_fields__  # type: ignore[attr-defined]
    return names


def astuple(obj: Any) -> tuple[Any, ...]:
    """Field values in declaration order (shallow, unlike :func:`dataclasses.astuple`)."""
    return tuple(getattr(obj, f) for f in _fields(obj))


def asdict(obj: Any) -> dict[str, Any]:
    """``{field: value}`` in declaration order (shallow)."""
    return {f: getattr(obj, f) for f in _fields(obj)}


def replace(obj: T, **changes: Any) -> T:
    """A copy of ``obj`` with some fields changed, like :func:`dataclasses.replace`."""
    values = asdict(obj)
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {sorted(unknown)}")
    values.update(changes)
    return type(obj)(**values)
