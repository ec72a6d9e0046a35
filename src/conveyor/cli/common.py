"""Options and helpers shared by the CLI commands.

Every command that uses a store accepts ``--url``, ``--app module:attribute`` and
``-C/--config FILE``. The store URL follows one rule, the same for producers, workers,
the CLI and the dashboard: ``--url`` > the app's explicit ``App(url)`` >
``$CONVEYOR_URL`` > ``url`` of ``-C`` FILE > of ./conveyor.toml > of ./pyproject.toml
``[tool.conveyor]`` > ``sqlite:///conveyor.db``.
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
    parse_app_spec,
    require_store,
)
from conveyor.cli.errors import explain, sqlite_error
from conveyor.errors import ConfigurationError, StoreNotFound
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
        help="Store URL. Default: the app's App(url), else $CONVEYOR_URL, else url of "
        "-C FILE, ./conveyor.toml or ./pyproject.toml, else sqlite:///conveyor.db.",
    )(fn)


CONFIG_HELP = (
    "Config file (.toml or .json; the schema of [tool.conveyor]). Flags win over it, "
    "it wins over ./conveyor.toml and ./pyproject.toml [tool.conveyor]. See "
    "docs/configuration.md."
)
#: Where ``-C`` of a store command waits for :func:`open_app` (``ctx.meta`` is shared by
#: a group and its subcommands: ``conveyor queues -C f.toml pause q``).
_CONFIG_META = "conveyor.config_file"


def _remember_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta[_CONFIG_META] = value


def store_options(fn: F) -> F:
    """``--url``, ``--app`` and ``-C/--config``: the store, by the one URL rule."""
    fn = click.option(
        "-C",
        "--config",
        metavar="FILE",
        expose_value=False,  # read by open_app: no command changes its signature for it
        callback=_remember_config,
        help=CONFIG_HELP,
    )(fn)
    fn = click.option(
        "--app",
        "app_spec",
        metavar="MODULE:ATTR",
        callback=_valid_app_spec,
        help="Take the URL from this app (and know its tasks and queues).",
    )(fn)
    return url_option(fn)


def open_app(url: str | None, app_spec: str | None, *, create: bool = False) -> App:
    """The app (``--app``, else ``app`` of the files) or a bare one, pointed at its store
    by the one URL rule (``-C`` FILE included), with its backend open. A missing store
    is an error unless ``create`` (commands that write)."""
    from conveyor.cli.config import configured_app, read_layers  # it imports this module

    context = click.get_current_context(silent=True)
    config_file = context.meta.get(_CONFIG_META) if context is not None else None
    app, _ = configured_app(app_spec, url, read_layers(config_file))
    if not create:
        try:
            require_store(app.url)
        except StoreNotFound as exc:  # say which rule chose that store: a file, the env...
            raise StoreNotFound(f"{exc}{source_note(app)}") from None
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
