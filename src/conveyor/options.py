"""Checks of every job option, where it is given: ``@app.task(...)``, ``with_options(...)``
and ``App(...)`` defaults all call these, so a bad value is refused before anything is
stored (a stored ``priority="abc"`` used to crash every SQLite worker at each claim).

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, out
of range), both as :class:`~conveyor.errors.ConfigurationError` subclasses where the
kind allows, with the option's name first in the message.

Ranges (one for every backend):

- ``priority``: an ``int`` (not ``bool``) in ``-899..899`` — the range the Redis backend
  orders exactly (its ready score is ``-priority * 1e13 + run_at_ms``).
- ``timeout``, ``lease``, ``unique_for``, ``result_ttl``: finite seconds ``> 0``;
  ``delay``: finite ``>= 0``. ``store_result``: a bool.
- ``expires``: finite seconds ``> 0`` or a timedelta (from each enqueue), or, per job
  (``with_options``), an aware datetime (an instant; one already past is allowed: the job
  expires at its first claim). :func:`expiry_time` turns it into epoch seconds.
- ``max_attempts``, ``concurrency``: ``int >= 1``.
- names (task, queue, unique key): non-empty text of at most 200 characters, printable
  (no control characters) and without lone surrogates (they cannot be stored as UTF-8).

Example:
    >>> check_priority(5)
    5
    >>> check_priority("abc")
    Traceback (most recent call last):
    ...
    conveyor.options.OptionTypeError: priority must be an int in -899..899, got str 'abc'
    >>> check_seconds("timeout", 0)
    Traceback (most recent call last):
    ...
    conveyor.options.OptionValueError: timeout must be finite seconds > 0, got 0
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from conveyor.errors import ConfigurationError

PRIORITY_MIN = -899
PRIORITY_MAX = 899
MAX_NAME_LENGTH = 200


class OptionTypeError(ConfigurationError, TypeError):
    """An option given a value of the wrong type (also a ``TypeError``)."""


class OptionValueError(ConfigurationError):
    """An option given a value out of its range (a ``ValueError``)."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_priority(value: Any, option: str = "priority") -> int:
    """An int in ``PRIORITY_MIN..PRIORITY_MAX``."""
    if not _is_int(value):
        raise OptionTypeError(
            f"{option} must be an int in {PRIORITY_MIN}..{PRIORITY_MAX}, "
            f"got {type(value).__name__} {_shown(value)}"
        )
    if not PRIORITY_MIN <= value <= PRIORITY_MAX:
        raise OptionValueError(
            f"{option} must be in {PRIORITY_MIN}..{PRIORITY_MAX} (the range every backend "
            f"orders exactly), got {_shown(value)}"
        )
    result: int = value
    return result


def check_count(option: str, value: Any) -> int:
    """An int ``>= 1`` (``max_attempts``, ``concurrency``)."""
    if not _is_int(value):
        raise OptionTypeError(
            f"{option} must be an int >= 1, got {type(value).__name__} {_shown(value)}"
        )
    if value < 1:
        raise OptionValueError(f"{option} must be an int >= 1, got {value}")
    result: int = value
    return result


def seconds_of(option: str, value: Any, *, timedelta_ok: bool = True) -> float:
    """``value`` (number, or timedelta where allowed) as float seconds; TypeError otherwise."""
    if timedelta_ok and isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            raise OptionValueError(
                f"{option} must be finite seconds, got {_shown(value)}"
            ) from None
    kinds = "int, float or timedelta" if timedelta_ok else "int or float"
    raise OptionTypeError(
        f"{option} must be seconds ({kinds}), got {type(value).__name__} {_shown(value)}"
    )


def check_seconds(
    option: str, value: Any, *, allow_zero: bool = False, timedelta_ok: bool = True
) -> float:
    """Finite seconds, ``> 0`` (or ``>= 0`` with ``allow_zero``); returns them as float."""
    seconds = seconds_of(option, value, timedelta_ok=timedelta_ok)
    bound = ">= 0" if allow_zero else "> 0"
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise OptionValueError(f"{option} must be finite seconds {bound}, got {_shown(value)}")
    return seconds


def check_name(option: str, value: Any) -> str:
    """Non-empty printable text of at most ``MAX_NAME_LENGTH`` characters."""
    if not isinstance(value, str):
        raise OptionTypeError(f"{option} must be text, got {type(value).__name__} {_shown(value)}")
    if not value:
        raise OptionValueError(f"{option} must not be empty")
    if len(value) > MAX_NAME_LENGTH:
        raise OptionValueError(
            f"{option} must be at most {MAX_NAME_LENGTH} characters, got {len(value)}"
        )
    if not value.isprintable() or value.strip() != value:
        # isprintable() is False for control characters, other separators than the
        # space, and lone surrogates (category Cs); surrounding blanks hide in listings.
        raise OptionValueError(
            f"{option} must be printable text without control characters, lone surrogates "
            f"or surrounding blanks, got {_shown(value)}"
        )
    return value


def check_flag(option: str, value: Any) -> bool:
    """``True`` or ``False`` (``store_result``)."""
    if not isinstance(value, bool):
        raise OptionTypeError(
            f"{option} must be True or False, got {type(value).__name__} {_shown(value)}"
        )
    return value


def check_expires(value: Any) -> float | datetime.datetime:
    """Seconds ``> 0``, a timedelta, or an aware datetime (``expires``).

    >>> check_expires(datetime.timedelta(minutes=1))
    60.0
    >>> check_expires(datetime.datetime(2030, 1, 1))
    Traceback (most recent call last):
    ...
    conveyor.options.OptionValueError: expires needs an aware datetime (with tzinfo), got datetime.datetime(2030, 1, 1, 0, 0)
    """
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise OptionValueError(
                f"expires needs an aware datetime (with tzinfo), got {_shown(value)}"
            )
        return value
    try:
        return check_seconds("expires", value)
    except OptionTypeError:
        raise OptionTypeError(
            "expires must be seconds (int, float or timedelta) or an aware datetime, "
            f"got {type(value).__name__} {_shown(value)}"
        ) from None


def expiry_time(value: float | datetime.timedelta | datetime.datetime, now: float) -> float:
    """The epoch seconds a job enqueued at ``now`` expires at (checked ``expires``).

    >>> expiry_time(30, now=1000.0)
    1030.0
    >>> expiry_time(datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc), now=0.0)
    1893456000.0
    """
    checked = check_expires(value)
    if isinstance(checked, datetime.datetime):
        return checked.timestamp()
    return now + checked


def check_unique_key_value(value: Any) -> None:
    """A constant ``unique_key`` (a function's answer is checked per job)."""
    if value is None or callable(value):
        return
    if isinstance(value, str):
        check_name("unique_key", value)
    elif not _is_int(value):
        raise OptionTypeError(
            f"unique_key must be text, an int or a function of the arguments, "
            f"got {type(value).__name__} {_shown(value)}"
        )


#: option name -> check applied to a value that is not None
_CHECKS: dict[str, Any] = {
    "queue": lambda v: check_name("queue", v),
    "priority": check_priority,
    "max_attempts": lambda v: check_count("max_attempts", v),
    "concurrency": lambda v: check_count("concurrency", v),
    "timeout": lambda v: check_seconds("timeout", v, timedelta_ok=False),
    "lease": lambda v: check_seconds("lease", v, timedelta_ok=False),
    "unique_for": lambda v: check_seconds("unique_for", v),
    "delay": lambda v: check_seconds("delay", v, allow_zero=True),
    "unique_key": check_unique_key_value,
    "name": lambda v: check_name("task name", v),
    "store_result": lambda v: check_flag("store_result", v),
    "result_ttl": lambda v: check_seconds("result_ttl", v),
    "expires": check_expires,
}


def check_options(options: dict[str, Any]) -> None:
    """Check every known option in ``options`` that is not None (others pass through:
    their own modules check them, e.g. ``rate``, ``on_conflict``)."""
    for key, value in options.items():
        check = _CHECKS.get(key)
        if check is not None and value is not None:
            check(value)
