"""Arguments and results as plain JSON, and back to typed values by the task's signature.

Encoding accepts what JSON does plus ``datetime``, ``date``, ``time`` (ISO 8601),
``UUID`` and ``Decimal`` (strings), enums (their value), dataclasses (objects) and
Pydantic models (``model_dump(mode="json")``). Anything else raises
:class:`~conveyor.errors.EncodeError` naming the argument. The stored form stays plain
JSON so every argument is queryable (``json_extract(payload, '$.kwargs.user_id')``).

Decoding uses the task's type hints: a parameter annotated ``datetime`` gets a
``datetime`` back, a dataclass or Pydantic model gets an instance, ``list[X]``,
``dict[str, X]`` and ``X | None`` recurse. Unannotated parameters get the JSON value.

Example:
    >>> import datetime
    >>> def f(when: datetime.date, n: int) -> None: ...
    >>> payload = encode_payload((datetime.date(2026, 1, 2),), {"n": 3}, max_bytes=1024)
    >>> payload
    '{"args":["2026-01-02"],"kwargs":{"n":3}}'
    >>> Decoder(f).arguments(payload)
    ([datetime.date(2026, 1, 2)], {'n': 3})
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import json
import math
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conveyor.errors import DecodeError, EncodeError, PayloadTooLarge

DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024

#: Deepest nesting of lists/dicts accepted in an argument or a result (the argument
#: itself counts as level 1); deeper values are refused with EncodeError rather than
#: hitting the interpreter's recursion limit here, in SQLite's JSON functions or in a
#: listing that renders them.
MAX_DEPTH = 200


class _Refused(Exception):
    """A value JSON cannot hold faithfully; ``path`` is filled in on the way out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


def _refuse_str(text: str) -> None:
    """Lone surrogates cannot be stored as UTF-8 (SQLite, Redis and every reader)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _Refused(f"text with a lone surrogate {_short(text)}") from None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _walk(value: object, depth: int, deep: bool) -> None:
    """Refuse what the JSON encoder would store unfaithfully or not at all: NaN and
    infinities, non-string keys, lone surrogates, nesting beyond MAX_DEPTH.

    Plain values cost one type check; only containers are walked. ``deep`` also walks
    the converted form of other objects (dataclasses, models): the slow path that looks
    for the path of an error the fast encode raised.
    """
    kind = type(value)
    if kind is str:
        _refuse_str(value)  # type: ignore[arg-type]
    elif kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise _Refused(f"{value!r} is not a JSON number")
    elif kind is int or kind is bool or value is None:
        return
    elif kind is list or kind is tuple or kind is dict:
        if depth > MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
        _walk_container(value, depth, deep)
    elif isinstance(value, (str, float, list, tuple, dict)):  # subclasses: the same rules
        if isinstance(value, str):
            _refuse_str(value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise _Refused(f"{value!r} is not a JSON number")
        else:
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            _walk_container(value, depth, deep)
    elif deep and not isinstance(value, int):
        try:
            converted = _default(value)
        except TypeError as exc:
            raise _Refused(str(exc)) from None
        _walk(converted, depth, deep)


def _walk_container(value: Any, depth: int, deep: bool) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                raise _Refused(
                    f"dict key {_short(key)} is of type {type(key).__name__}, not a string "
                    "(JSON keys are text; convert the keys before enqueueing)"
                )
            _refuse_str(key)  # a bad key is refused at the dict that holds it
            try:
                _walk(item, depth + 1, deep)
            except _Refused as refused:
                refused.path.append(f"[{json.dumps(key)}]")
                raise
    else:
        for index, item in enumerate(value):
            kind = type(item)
            if kind is int or (kind is str and item.isascii()) or item is None:
                continue  # the common leaves, without a call
            try:
                _walk(item, depth + 1, deep)
            except _Refused as refused:
                refused.path.append(f"[{index}]")
                raise


def _checked_default(value: object) -> object:
    """The encoder's hook for non-JSON types: convert, then apply the same refusals to
    the converted form (a dataclass field may hold NaN or a non-string key)."""
    converted = _default(value)
    _walk(converted, 0, False)
    return converted


def _refusal(value: object, root: str) -> str | None:
    """Why ``value`` cannot be encoded and where (``root[3]["x"]``), or None."""
    try:
        _walk(value, 1, True)
    except _Refused as refused:
        parts = refused.path[::-1]
        if len(parts) > 8:  # a path 200 levels deep says nothing more than its ends
            parts = [*parts[:4], f"...({len(parts) - 6} more)...", *parts[-2:]]
        return f"{root}{''.join(parts)}: {refused.reason}"
    except RecursionError:
        return f"{root}: nested deeper than {MAX_DEPTH} levels"
    return None


_encoder = json.JSONEncoder(
    separators=(",", ":"), allow_nan=False, default=lambda o: _checked_default(o)
)


def _is_instance(value: object, module: str, name: str) -> bool:
    """``isinstance(value, module.name)`` without importing ``module``: when it is not
    imported, no value can be an instance of its classes. Keeps :mod:`uuid` and
    :mod:`decimal` (~6 ms together) out of ``import conveyor``."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(value, getattr(loaded, name))


def _is_class(hint: object, module: str, name: str) -> bool:
    """``hint is module.name``, under the same rule as :func:`_is_instance`."""
    loaded = sys.modules.get(module)
    return loaded is not None and hint is getattr(loaded, name)


def _default(value: object) -> object:
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if _is_instance(value, "uuid", "UUID") or _is_instance(value, "decimal", "Decimal"):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):
        return dump(mode="json")
    raise TypeError(f"object of type {type(value).__name__} is not JSON serializable")


_ENCODE_ERRORS = (TypeError, ValueError, RecursionError, _Refused)


def encode(value: object, what: str = "result") -> str:
    """Encode one value (a result, a key) as compact JSON; ``EncodeError`` naming the
    path of what JSON cannot hold (NaN, non-string keys, lone surrogates, too deep).

    Example:
        >>> encode({"n": [1.5, None]}), encode(42), encode(True)
        ('{"n":[1.5,null]}', '42', 'true')
        >>> encode({"n": [1.5, float("nan")]})
        Traceback (most recent call last):
        ...
        conveyor.errors.EncodeError: cannot encode result at result["n"][1]: nan is not a JSON number
        >>> encode({1, 2})
        Traceback (most recent call last):
        ...
        conveyor.errors.EncodeError: cannot encode result: object of type set is not JSON serializable
    """
    try:
        if type(value) is int:  # a common result: the text json would write, ~0.3 µs of ~3
            return int.__repr__(value)
        _walk(value, 1, False)
        return _encoder.encode(value)
    except _ENCODE_ERRORS as exc:
        where = _refusal(value, what)
        if where is not None:  # "result: why" for the value itself, else "at result[2]: why"
            at = where[len(what) :] if where.startswith(f"{what}: ") else f" at {where}"
            raise EncodeError(f"cannot encode {what}{at}") from None
        raise EncodeError(f"cannot encode {what}: {_message(exc)}") from None


def _message(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"nested deeper than {MAX_DEPTH} levels"
    return str(exc)


_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)


def _encode_fast(value: object) -> str:
    """``_encoder.encode(value)`` for a dict or list, minus ``JSONEncoder.encode``'s
    per-call Python set-up: the C encoder is built directly, with a fresh circular-
    reference table per call so threads never share one (measured: 1.8 -> 1.2 µs for a
    three-argument payload, the one unavoidable per-job cost of ``enqueue_many``)."""
    if _c_make_encoder is None:  # a Python built without the _json accelerator
        return _encoder.encode(value)
    encoder = _c_make_encoder(
        {},
        _encoder.default,
        json.encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        False,
        False,
        False,  # allow_nan: NaN/Infinity are not JSON (SQLite's json functions refuse them)
    )
    return "".join(encoder(value, 0))


def encode_payload(args: Sequence[object], kwargs: Mapping[str, object], *, max_bytes: int) -> str:
    """Encode call arguments; raise naming the offending argument and the path inside
    it (``kwargs.data[3]["x"]``), or if too large."""
    try:
        for value in (*args, *kwargs.values()):
            kind = type(value)
            if kind is int or (kind is str and value.isascii()) or value is None:  # type: ignore[attr-defined]
                continue  # the common arguments, without a call
            if kind is float and value - value == 0.0:  # type: ignore[operator]
                continue  # finite (inf - inf and nan - nan are nan): also without one
            _walk(value, 1, False)
        text = _encode_fast({"args": args, "kwargs": kwargs})
    except _ENCODE_ERRORS as exc:
        raise EncodeError(_name_offender(args, kwargs, exc)) from None
    # ensure_ascii is on, so characters are bytes.
    if len(text) > max_bytes:
        raise PayloadTooLarge(
            f"encoded arguments are {len(text)} bytes, over the limit of {max_bytes} "
            "(App(max_payload_bytes=...) raises it; large data belongs in storage, "
            "pass a reference)"
        )
    return text


def _name_offender(args: Sequence[object], kwargs: Mapping[str, object], exc: BaseException) -> str:
    for index, value in enumerate(args):
        where = _refusal(value, f"args[{index}]")
        if where is not None:
            return f"cannot encode positional argument {index} at {where}"
    for name, value in kwargs.items():
        where = _refusal(value, f"kwargs.{name}")
        if where is not None:
            return f"cannot encode argument {name!r} at {where}"
    return f"cannot encode arguments: {_message(exc)}"


def decode(text: str | None) -> Any:
    """Decode JSON text (``None`` stays ``None``)."""
    return None if text is None else loads(text)


#: json's C scanner, called directly by :func:`loads` (an attribute typeshed omits).
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(text: str) -> Any:
    """``json.loads(text)``, without its two whitespace regex matches around the value:
    0.7 µs instead of 1.9 for a job's payload (a worker decodes one per job). Stored JSON
    is one value without surrounding space; anything else (space, trailing text, no
    value at all) goes to ``json.loads``, which decodes it or raises as it always did.

    >>> loads('{"args": [1], "kwargs": {}}'), loads(" [1] ")
    ({'args': [1], 'kwargs': {}}, [1])
    """
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return value


# -- typed decoding ----------------------------------------------------------------------

Converter = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def converter_for(hint: Any) -> Converter:
    """A function turning the JSON form of ``hint`` back into ``hint``."""
    if hint in (inspect.Parameter.empty, Any, object, None, type(None)):
        return _identity
    if hint is datetime.datetime:
        return _maybe(datetime.datetime.fromisoformat, str)
    if hint is datetime.date:
        return _maybe(datetime.date.fromisoformat, str)
    if hint is datetime.time:
        return _maybe(datetime.time.fromisoformat, str)
    if _is_class(hint, "uuid", "UUID"):
        return _maybe(hint, str)
    if _is_class(hint, "decimal", "Decimal"):
        return _maybe(hint, (str, int, float))
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) == 1:
            inner = converter_for(options[0])
            return lambda v: None if v is None else inner(v)
        return _identity
    if origin in (list, set, frozenset, tuple, Sequence) and typing.get_args(hint):
        item = converter_for(typing.get_args(hint)[0])
        build: Callable[[Any], Any] = origin if origin in (list, set, frozenset, tuple) else list
        return lambda v: build(item(x) for x in v) if isinstance(v, list) else v
    if origin in (dict, Mapping) and len(typing.get_args(hint)) == 2:
        val = converter_for(typing.get_args(hint)[1])
        return lambda v: {k: val(x) for k, x in v.items()} if isinstance(v, dict) else v
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return lambda v: v if isinstance(v, hint) else hint(v)
        if dataclasses.is_dataclass(hint):
            return _dataclass_converter(hint)
        validate = getattr(hint, "model_validate", None)
        if callable(validate):
            return lambda v: v if isinstance(v, hint) else validate(v)
    return _identity


def _maybe(build: Callable[[Any], Any], accepts: type | tuple[type, ...]) -> Converter:
    return lambda v: build(v) if isinstance(v, accepts) else v


def _dataclass_converter(cls: type) -> Converter:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable forward references: fall back to plain values
        hints = {}
    fields = {f.name: converter_for(hints.get(f.name, Any)) for f in dataclasses.fields(cls)}

    def build(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return cls(**{k: fields[k](v) if k in fields else v for k, v in value.items()})

    return build


class Decoder:
    """Decodes payloads and results for one function, by its signature and type hints."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.signature = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # forward references that do not resolve: decode untyped
            hints = {}
        self._positional: list[Converter] = []
        self._var_positional: Converter | None = None
        self._keyword: dict[str, Converter] = {}
        self._var_keyword: Converter = _identity
        for name, param in self.signature.parameters.items():
            conv = converter_for(hints.get(name, inspect.Parameter.empty))
            if param.kind is param.VAR_POSITIONAL:
                self._var_positional = conv
            elif param.kind is param.VAR_KEYWORD:
                self._var_keyword = conv
            else:
                if param.kind is not param.KEYWORD_ONLY:
                    self._positional.append(conv)
                self._keyword[name] = conv
        self._result = converter_for(hints.get("return", inspect.Parameter.empty))
        self._typed = any(c is not _identity for c in [*self._positional, *self._keyword.values()])

    def arguments(self, payload: str) -> tuple[list[Any], dict[str, Any]]:
        """Decode a stored payload into call arguments; DecodeError if it is malformed."""
        try:
            data = loads(payload)
            args, kwargs = data["args"], data["kwargs"]
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise TypeError("args must be a list and kwargs an object")
            if not self._typed:
                return args, kwargs
            out = []
            for index, value in enumerate(args):
                if index < len(self._positional):
                    out.append(self._positional[index](value))
                elif self._var_positional is not None:
                    out.append(self._var_positional(value))
                else:
                    out.append(value)
            return out, {k: self._keyword.get(k, self._var_keyword)(v) for k, v in kwargs.items()}
        except Exception as exc:
            raise DecodeError(f"cannot decode payload: {type(exc).__name__}: {exc}") from None

    def result(self, text: str | None) -> Any:
        """Decode a stored result by the return annotation."""
        return self._result(decode(text))
