"""Options and helpers shared by the CLI commands.

Every command that uses a store accepts ``--url`` and ``--app module:attribute``. The
store URL follows one rule, the same for producers, workers, the CLI and the dashboard:
``--url`` > the app's explicit ``App(url)`` > ``$CONVEYOR_URL`` > ``sqlite:///conveyor.db``.
``open_app`` is read-only by default: a store that does not exist is an error
(``StoreNotFound``), never a new empty file; commands that write pass ``create=True``.

Example::

    @click.command()
    @store_options
    def status(url: str | None, app_spec: str | None) -> None:
        app = open_app(url, app_spec)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from conveyor.app import (
    App,
    check_url,
    load_app,
    parse_app_spec,
    require_store,
)
from conveyor.cli.errors import explain, sqlite_error
from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted

F = TypeVar("F", bound=Callable[..., Any])


def valid_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A malformed ``--url`` is a usage error (exit 2), found before anything is opened."""
    if value is not None:
        try:
            check_url(value)
        except ConfigurationError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def _valid_app_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            parse_app_spec(value)
        except ConfigurationError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def url_option(fn: F) -> F:
    """``--url``: validated at parse time; no envvar here, so that an app's explicit
    ``App(url)`` wins over ``$CONVEYOR_URL`` (App applies the env itself)."""
    return click.option(
        "--url",
        callback=valid_url,
        help="Store URL. Default: the app's App(url), else $CONVEYOR_URL, else "
        "sqlite:///conveyor.db.",
    )(fn)


def store_options(fn: F) -> F:
    fn = click.option(
        "--app",
        "app_spec",
        metavar="MODULE:ATTR",
        callback=_valid_app_spec,
        help="Take the URL from this app (and know its tasks and queues).",
    )(fn)
    return url_option(fn)


def open_app(url: str | None, app_spec: str | None, *, create: bool = False) -> App:
    """The app (``--app``) or a bare one, pointed at ``--url`` when given, with its
    backend open. A missing store is an error unless ``create`` (commands that write)."""
    app = load_app(app_spec) if app_spec else App()
    if url:
        app.override_url(url)
    try:
        check_url(app.url)  # also App(url) and $CONVEYOR_URL, which no option callback saw
    except ConfigurationError as exc:
        raise ConfigurationError(f"{exc}{source_note(app)}") from None
    if not create:
        require_store(app.url)
    try:
        app.backend  # noqa: B018 - open now, so a failure names the store it was about
    except (sqlite_error(), OSError) as exc:
        known = explain(exc)
        detail = known[0] if known else str(exc)
        raise click.ClickException(
            f"cannot open the store {redacted(app.url)}{source_note(app)}: {detail}"
        ) from exc
    context = click.get_current_context(silent=True)
    if context is not None:
        # Closed when the command ends: a pooled backend (PostgreSQL) left to the garbage
        # collector may be collected on one of its own threads, which cannot join itself.
        context.call_on_close(app.close)
    return app


def source_note(app: App) -> str:
    """' (from $CONVEYOR_URL)' or similar, when the user did not type the URL."""
    return "" if app.url_source == "--url" else f" (from {app.url_source})"


def age(seconds: float | None) -> str:
    """Human duration: '3.2s', '4m10s', '2h05m'."""
    if seconds is None or not math.isfinite(seconds):  # NaN/inf: a row written by hand
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def since(ts: float | None) -> str:
    return "-" if ts is None else age(max(0.0, time.time() - ts))


def echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, default=str))
