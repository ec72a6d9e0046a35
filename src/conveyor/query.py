"""Parsing of the ops filters shared by the CLI and the dashboard: ``--where``, durations
and points in time. Backend-neutral: each backend turns a :class:`WhereCondition` into
its own query (SQLite: ``json_extract`` with the path as a bound parameter).

The path is validated strictly (identifiers and list indexes only) so nothing a user
types can become SQL or a script fragment, even on a backend that did splice it.

Example:
    >>> parse_where("kwargs.user_id=42")
    WhereCondition(root='kwargs', path=('user_id',), value=42, bound=())
    >>> parse_where("args.0=seven").value
    'seven'
    >>> json_path(parse_where("args.0.name=x").path)
    '$[0].name'
    >>> parse_duration("7d")
    604800.0

A filter by parameter name matches however the argument was passed once it is bound to
the tasks' signatures (:func:`bind_filter`): ``kwargs.user_id=42`` then also matches
``send_welcome.enqueue(42)``, whose payload holds ``{"args": [42], "kwargs": {}}``.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import re
import time
from collections.abc import Mapping

from conveyor import records
from conveyor.backends.base import ArgSlot, JobFilter, WhereCondition

ROOTS = ("args", "kwargs", "result")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INDEX = re.compile(r"^(0|[1-9][0-9]{0,5})$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, None: 1.0}


def parse_where(text: str) -> WhereCondition:
    """``root.path=value``: the value is JSON when it parses (``42``, ``true``,
    ``"42"``, ``null``), else the raw string. Raises ``ValueError`` on a bad path."""
    left, sep, raw = text.partition("=")
    if not sep:
        raise ValueError(f"--where needs FIELD=VALUE, got {text!r}")
    parts = left.strip().split(".")
    root, rest = parts[0], parts[1:]
    if root not in ROOTS:
        raise ValueError(f"--where field must start with one of {ROOTS}, got {left!r}")
    if root in ("args", "kwargs") and not rest:
        raise ValueError(f"--where {root} needs a path, e.g. {root}.0 or {root}.name")
    if root == "args" and not _INDEX.match(rest[0]):
        raise ValueError(f"--where args takes a position first (args.0), got {left!r}")
    path: list[str | int] = []
    for part in rest:
        if _INDEX.match(part):
            path.append(int(part))
        elif _KEY.match(part):
            path.append(part)
        else:
            raise ValueError(f"--where path segment {part!r} is not an identifier or index")
    try:
        value: object = json.loads(raw)
    except ValueError:
        value = raw
    return WhereCondition(root=root, path=tuple(path), value=value)


def bind_filter(f: JobFilter, signatures: Mapping[str, inspect.Signature]) -> JobFilter:
    """``f`` with each ``args``/``kwargs`` condition bound to the signatures of the tasks
    it can concern (``f.task`` alone when the filter names one): ``kwargs.NAME`` also
    looks at NAME's position in ``args``, ``args.N`` at the name of position N in
    ``kwargs``, each only for jobs of the tasks whose signature says so.

    Example:
        >>> def send_welcome(user_id: int, subject: str = "hi") -> None: ...
        >>> sigs = {"tasks.send_welcome": inspect.signature(send_welcome)}
        >>> bind_filter(JobFilter(where=(parse_where("kwargs.user_id=42"),)), sigs).where[0].bound
        (ArgSlot(tasks=('tasks.send_welcome',), root='args', key=0),)
        >>> bind_filter(JobFilter(where=(parse_where("args.1=x"),)), sigs).where[0].bound
        (ArgSlot(tasks=('tasks.send_welcome',), root='kwargs', key='subject'),)
    """
    if f.task is not None:
        signatures = {f.task: signatures[f.task]} if f.task in signatures else {}
    if not f.where or not signatures:
        return f
    return records.replace(f, where=tuple(bind_where(c, signatures) for c in f.where))


def bind_where(cond: WhereCondition, signatures: Mapping[str, inspect.Signature]) -> WhereCondition:
    """One condition bound (see :func:`bind_filter`); ``result`` conditions as they are."""
    if cond.root not in ("args", "kwargs") or not cond.path:
        return cond
    by_slot: dict[tuple[str, str | int], list[str]] = {}
    for task, signature in sorted(signatures.items()):
        slot = _other_slot(signature, cond.root, cond.path[0])
        if slot is not None:
            by_slot.setdefault(slot, []).append(task)
    bound = tuple(
        ArgSlot(tasks=tuple(tasks), root=root, key=key) for (root, key), tasks in by_slot.items()
    )
    return records.replace(cond, bound=bound) if bound else cond


def _other_slot(
    signature: inspect.Signature, root: str, key: str | int
) -> tuple[str, str | int] | None:
    """Where an argument held at ``root[key]`` is held when passed the other way."""
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if root == "kwargs":
        for index, param in enumerate(positional):
            if param.name == key:
                return "args", index
        return None
    if isinstance(key, int) and key < len(positional):
        param = positional[key]
        # positional-only: it can never be in kwargs, so there is no other slot
        return ("kwargs", param.name) if param.kind is param.POSITIONAL_OR_KEYWORD else None
    return None


def json_path(path: tuple[str | int, ...]) -> str:
    """A JSON path (``$.a[0].b``) from validated segments, relative to the root value."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            if not _KEY.match(part):  # defence in depth: WhereCondition can be built by hand
                raise ValueError(f"invalid path segment {part!r}")
            out += f".{part}"
    return out


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``12h``, ``7d``, ``2w`` -> seconds."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 15m, 12h, 7d)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_time(text: str, now: float | None = None) -> float:
    """An ISO date/time (UTC when no offset), epoch seconds, or a duration ago (``2h``)."""
    now = time.time() if now is None else now
    if text.strip()[-1:] in _UNITS:  # "2h" means two hours ago; bare numbers are epochs
        return now - parse_duration(text)
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"not a time: {text!r} (ISO 8601, epoch seconds, or e.g. 2h ago as 2h)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()
