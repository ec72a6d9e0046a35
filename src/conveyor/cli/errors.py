"""Every expected failure of a command as one line on stderr, with the right exit status.

The ``conveyor`` group runs each command through :func:`run_reporting`: an exception this
module knows (a usage error, a store that cannot be reached or opened, a missing app or
file, a refused permission, a wrong Redis password) becomes ``Error: <what happened;
what to do>`` and exit status 2 (usage: the command line itself is wrong, nothing was
done) or 1 (runtime: conveyor could not do it). Anything else is a bug and keeps its
traceback. ``--debug`` (or ``CONVEYOR_DEBUG=1``) prints the traceback of known failures
too, above the same line.

Example:
    >>> explain(FileNotFoundError(2, "No such file or directory", "/nonexistent/b.db"))
    ('no such file or directory: /nonexistent/b.db', 1)
    >>> explain(click.BadParameter("bare numbers have no unit", param_hint="'--older-than'"))
    ("Invalid value for '--older-than': bare numbers have no unit", 2)
    >>> explain(KeyError("a bug")) is None
    True
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, TypeVar

import click

from conveyor.errors import BackendUnavailable, ConveyorError, StoreError
from conveyor.text import literal

T = TypeVar("T")

#: Exit statuses: the command line is wrong / the command could not be done.
USAGE, RUNTIME = 2, 1
_TRUE = {"1", "true", "yes", "on"}
#: redis-py's names for a refused password (matched by name: redis is an optional extra).
_AUTH_ERRORS = {"AuthenticationError", "AuthenticationWrongNumberOfArgsError"}


def debug_requested(args: Sequence[str]) -> bool:
    """``--debug`` among the group's own options (before the command), or
    ``$CONVEYOR_DEBUG`` set to a true value."""
    if os.environ.get("CONVEYOR_DEBUG", "").strip().lower() in _TRUE:
        return True
    for arg in args:
        if not arg.startswith("-"):
            return False  # the command name: what follows belongs to the command
        if arg == "--debug":
            return True
    return False


def run_reporting(body: Callable[[], T], debug: bool) -> T:
    """Run ``body``; turn a known failure into one ``Error:`` line and ``SystemExit``."""
    try:
        return body()
    except click.Abort:
        # A declined confirmation or ^C at a prompt: not an error, nothing was done.
        click.echo("Aborted.", err=True)
        raise SystemExit(RUNTIME) from None
    except click.UsageError as exc:
        if type(exc).__name__ != "NoArgsIsHelpError":
            return _report(exc, debug)
        exc.show()  # bare ``conveyor`` or a bare group: click's help, as click prints it
        raise SystemExit(exc.exit_code) from None
    except Exception as exc:
        return _report(exc, debug)


def _report(exc: Exception, debug: bool) -> NoReturn:
    """One ``Error:`` line (after the traceback with ``debug``) and the exit status; a
    failure this module does not know is re-raised with its traceback."""
    known = explain(exc)
    if known is None:
        raise exc  # a bug: the traceback is the report
    message, status = known
    if debug:
        import traceback  # only with --debug: one error line needs none

        traceback.print_exception(exc, file=sys.stderr)
    click.echo(f"Error: {one_line(message)}", err=True)
    raise SystemExit(status) from None


def explain(exc: BaseException) -> tuple[str, int] | None:
    """(message, exit status) for an expected failure; None for anything else."""
    if isinstance(exc, click.UsageError):
        return exc.format_message(), USAGE
    if isinstance(exc, click.ClickException):
        return exc.format_message(), exc.exit_code
    if isinstance(exc, StoreError):  # names the file and the cause (disk full, I/O...)
        return str(exc), RUNTIME
    if isinstance(exc, BackendUnavailable):
        return _unavailable(exc), RUNTIME
    if isinstance(exc, ConveyorError):
        return str(exc), RUNTIME
    if isinstance(exc, sqlite_error()):
        return _sqlite(exc), RUNTIME
    if isinstance(exc, OSError):
        return _os_error(exc), RUNTIME
    if type(exc).__module__.startswith("redis."):  # the server refused (NOPERM, OOM, ...)
        return f"Redis refused: {type(exc).__name__}: {exc}", RUNTIME
    return None


class _NeverRaised(Exception):
    """Stands for ``sqlite3.Error`` in a process that never imported ``sqlite3``."""


def sqlite_error() -> type[Exception]:
    """``sqlite3.Error`` for ``except`` and ``isinstance``, without importing ``sqlite3``
    on a path that does not use it (``conveyor worker`` on Redis, issue 16): when the
    module was never imported, nothing can have raised one of its errors."""
    module = sys.modules.get("sqlite3")
    error: type[Exception] = module.Error if module is not None else _NeverRaised
    return error


def one_line(message: str) -> str:
    """The message on one line: its lines joined with '; ', control characters escaped."""
    parts = [line.strip() for line in message.splitlines() if line.strip()]
    return literal("; ".join(parts))


def _unavailable(exc: BackendUnavailable) -> str:
    cause = exc.__cause__
    while cause is not None:
        if type(cause).__name__ in _AUTH_ERRORS or any(
            base.__name__ in _AUTH_ERRORS for base in type(cause).__mro__
        ):
            # The backend's message says "authentication failed" itself; older wording
            # ("is unavailable") is cut at the address, so either reads the same.
            where = str(exc).split(" is unavailable", 1)[0].split(": authentication failed", 1)[0]
            return (
                f"{where}: authentication failed ({cause}); put the password in the URL "
                "as redis://:PASSWORD@host:port/db (or redis://USER:PASSWORD@...)"
            )
        cause = cause.__cause__
    text = str(exc)
    if " is unavailable" not in text:
        return text  # not an outage (a missing database or role): the message says the fix
    text = text.removesuffix("; retry once it is back")
    return f"{text}; is the server running? Check --url or $CONVEYOR_URL"


def _sqlite(exc: Exception) -> str:  # a sqlite3.Error
    text = str(exc)
    if "readonly" in text:
        return f"SQLite: {text}; the store's file or directory is not writable by this user"
    if "locked" in text or "busy" in text:
        return f"SQLite: {text}; another process holds a long write lock, try again"
    return f"SQLite: {text}"


def _os_error(exc: OSError) -> str:
    what = exc.strerror or str(exc)
    where = exc.filename if exc.filename is not None else ""
    if isinstance(exc, PermissionError):
        return f"permission denied: {where}" if where else f"permission denied ({what})"
    return f"{what.lower()}: {where}" if where else what
