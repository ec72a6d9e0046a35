"""Parsing of the ops filters shared by the CLI and the dashboard: ``--where``, durations
and points in time. Backend-neutral: each backend turns a :class:`WhereCondition` into
its own query (SQLite: ``json_extract`` with the path as a bound parameter).

The path is validated strictly (identifiers and list indexes only) so nothing a user
types can become SQL or a script fragment, even on a backend that did splice it.

Example:
    >>> parse_where("kwargs.user_id=42")
    WhereCondition(root='kwargs', path=('user_id',), value=42)
    >>> parse_where("args.0=seven").value
    'seven'
    >>> json_path(parse_where("args.0.name=x").path)
    '$[0].name'
    >>> parse_duration("7d")
    604800.0
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time

from conveyor.backends.base import WhereCondition

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
