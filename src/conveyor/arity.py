"""Fast argument checks at enqueue: a compiled twin of the task's signature, and
checks of its primitive type hints (compiled once per task, see :func:`type_checker`).

``inspect.Signature.bind`` costs ~10 µs a call; calling a generated function with the
same parameters (no body, no annotations, defaults replaced by a sentinel) makes the
interpreter do the same check natively, with its usual messages, in well under 1 µs.
Signatures that cannot be expressed that way fall back to ``bind``.

Example:
    >>> def send(to: str, *, subject: str = "hi") -> None: ...
    >>> check = arity_checker(send)
    >>> check("a@example.com", subject="x")
    >>> check()
    Traceback (most recent call last):
    TypeError: send() missing 1 required positional argument: 'to'
"""

from __future__ import annotations

import inspect
import keyword
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_DEFAULT = object()


def arity_checker(fn: Callable[..., Any]) -> Callable[..., None]:
    """A callable raising ``TypeError`` exactly when ``fn`` could not take the arguments."""
    signature = inspect.signature(fn)
    name = getattr(fn, "__name__", "task")
    if not name.isidentifier() or keyword.iskeyword(name):
        name = "task"
    parts: list[str] = []
    seen_kw_marker = False
    positional_only = False
    for param in signature.parameters.values():
        if not param.name.isidentifier() or keyword.iskeyword(param.name):
            return _bind_checker(signature, name)
        default = "" if param.default is param.empty else "=_D"
        if param.kind is param.POSITIONAL_ONLY:
            positional_only = True
            parts.append(f"{param.name}{default}")
            continue
        if positional_only:
            parts.append("/")
            positional_only = False
        if param.kind is param.VAR_POSITIONAL:
            parts.append(f"*{param.name}")
            seen_kw_marker = True
        elif param.kind is param.KEYWORD_ONLY:
            if not seen_kw_marker:
                parts.append("*")
                seen_kw_marker = True
            parts.append(f"{param.name}{default}")
        elif param.kind is param.VAR_KEYWORD:
            parts.append(f"**{param.name}")
        else:
            parts.append(f"{param.name}{default}")
    if positional_only:
        parts.append("/")
    source = f"def {name}({', '.join(parts)}):\n    return None\n"
    namespace: dict[str, Any] = {"_D": _DEFAULT}
    try:
        exec(compile(source, f"<conveyor signature of {name}>", "exec"), namespace)
    except SyntaxError:
        return _bind_checker(signature, name)
    checker: Callable[..., None] = namespace[name]
    return checker


def _bind_checker(signature: inspect.Signature, name: str) -> Callable[..., None]:
    def check(*args: Any, **kwargs: Any) -> None:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}(): {exc}") from None

    return check


# -- primitive type hints ------------------------------------------------------------------

#: checks one value; None for a hint that is not checked (datetime, dataclasses, Any, ...)
ValueCheck = Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    kind = type(value)  # exact types first: the common case costs one comparison
    return kind is int or (kind is not bool and isinstance(value, int))


def _is_float(value: Any) -> bool:  # int is accepted for float (PEP 484's numeric tower)
    kind = type(value)
    return kind is float or kind is int or (kind is not bool and isinstance(value, (int, float)))


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


_PRIMITIVE: dict[Any, ValueCheck] = {
    int: _is_int,
    float: _is_float,
    str: _is_str,
    bool: _is_bool,
    None: lambda v: v is None,
    type(None): lambda v: v is None,
}


def value_check(hint: Any) -> ValueCheck | None:
    """A check for ``hint`` when it is int, float, str, bool, None or a list/dict/union
    of those (``Optional`` included); None when conveyor does not check it."""
    check = _PRIMITIVE.get(hint) if _hashable(hint) else None
    if check is not None:
        return check
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return value_check(args[0])
    if origin in (typing.Union, types.UnionType):
        checks = [value_check(a) for a in args]
        if any(c is None for c in checks):
            return None  # one member is not checked: any value may be that one
        members = [c for c in checks if c is not None]
        if type(None) in args and len(members) == 2:  # Optional[X], the common union
            inner = next(value_check(a) for a in args if a is not type(None))
            assert inner is not None
            return lambda v: v is None or inner(v)
        return lambda v: any(c(v) for c in members)
    if hint is list or origin is list:
        item = value_check(args[0]) if args else None
        if item is None:
            return lambda v: isinstance(v, (list, tuple))
        return lambda v: isinstance(v, (list, tuple)) and all(map(item, v))
    if hint is dict or origin is dict:
        val = value_check(args[1]) if len(args) == 2 else None
        if val is None:
            return lambda v: isinstance(v, dict)
        return lambda v: isinstance(v, dict) and all(map(val, v.values()))
    return None


def _hashable(hint: Any) -> bool:
    try:
        hash(hint)
    except TypeError:
        return False
    return True


def _resolved_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s type hints; when one does not resolve (a name imported inside a
    function, under ``from __future__ import annotations``), the others still count."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(fn, "__globals__", {})
    for name, hint in getattr(fn, "__annotations__", {}).items():
        try:
            hints[name] = eval(hint, namespace) if isinstance(hint, str) else hint
        except Exception:  # this one stays unchecked
            continue
    return hints


def _hint_name(hint: Any) -> str:
    if hint is None or hint is type(None):
        return "None"
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


TypeChecker = Callable[[Sequence[Any], Mapping[str, Any], int], None]


def type_checker(fn: Callable[..., Any]) -> TypeChecker | None:
    """A callable ``check(args, kwargs, skip)`` raising ``TypeError`` naming the parameter
    and the expected type when an argument does not match a primitive annotation of
    ``fn``; ``skip`` positional arguments are not checked (a workflow step's input
    stand-in). None when ``fn`` has no checked annotation (nothing to pay per call).
    Over 60 lines with its example: the checks are compiled here once, so the closure run
    per enqueue stays a few lookups.

    Example:
        >>> def add(a: int, b: float = 1.0) -> int: ...
        >>> check = type_checker(add)
        >>> check([1], {"b": 2}, 0)
        >>> check(["1"], {}, 0)
        Traceback (most recent call last):
        TypeError: add() argument 'a' must be int, got str '1'
    """
    hints = _resolved_hints(fn)
    name = getattr(fn, "__name__", "task")
    positional: list[tuple[str, Any, ValueCheck | None]] = []
    keyword: dict[str, tuple[Any, ValueCheck | None]] = {}
    var_positional: tuple[str, Any, ValueCheck] | None = None
    var_keyword: tuple[Any, ValueCheck] | None = None
    for param in inspect.signature(fn).parameters.values():
        hint = hints.get(param.name, inspect.Parameter.empty)
        check = None if hint is inspect.Parameter.empty else value_check(hint)
        if param.kind is param.VAR_POSITIONAL:
            if check is not None:
                var_positional = (param.name, hint, check)
        elif param.kind is param.VAR_KEYWORD:
            if check is not None:
                var_keyword = (hint, check)
        else:
            if param.kind is not param.KEYWORD_ONLY:
                positional.append((param.name, hint, check))
            keyword[param.name] = (hint, check)
    if (
        all(c is None for _, c in keyword.values())
        and var_positional is None
        and var_keyword is None
    ):
        return None

    def fail(param: str, hint: Any, value: Any) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise TypeError(
            f"{name}() argument {param!r} must be {_hint_name(hint)}, "
            f"got {type(value).__name__} {shown}"
        )

    checked_positions = [(i, p) for i, p in enumerate(positional) if p[2] is not None]
    count = len(positional)

    def check_types(args: Sequence[Any], kwargs: Mapping[str, Any], skip: int) -> None:
        for index, (param, hint, check) in checked_positions:
            if skip <= index < len(args) and not check(args[index]):  # type: ignore[misc]
                fail(param, hint, args[index])
        if var_positional is not None:
            for value in args[max(count, skip) :]:
                if not var_positional[2](value):
                    fail(f"*{var_positional[0]}", var_positional[1], value)
        for key, value in kwargs.items():
            found = keyword.get(key, var_keyword)
            if found is not None and found[1] is not None and not found[1](value):
                fail(key, found[0], value)

    return check_types
