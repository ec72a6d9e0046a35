"""Options and helpers shared by the CLI commands.

Every command that uses a store accepts ``--url``, ``--app module:attribute`` and
``-C/--config FILE``. The store URL follows one rule, the same for producers, workers,
the CLI and the dashboard: ``--url`` > the app's explicit ``App(url)`` >
``$CONVEYOR_URL`` > ``url`` of ``-C`` FILE > of ./conveyor.toml > of ./pyproject.toml
``[tool.conveyor]`` > ``sqlite:///conveyor.db``.
``open_app`` (in :mod:`conveyor.cli.config`, beside the file reading it needs) opens
the store these options name.

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
)
from conveyor.errors import ConfigurationError
from conveyor.states import JobState

F = TypeVar("F", bound=Callable[..., Any])

#: Every state's name, in the order the tables show them (status, queues, --state).
STATES = [s.value for s in JobState]


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


def group_store_options(fn: F) -> F:
    """:func:`store_options` on a subcommand of a group that has them too (``conveyor
    queues pause NAME --app mod:app`` as well as ``conveyor queues --app mod:app pause
    NAME``): what the subcommand is given wins over the group's ``ctx.obj``.

    Example::

        @queues.command("pause")
        @group_store_options
        @click.pass_context
        def pause(ctx: click.Context, name: str) -> None: ...
    """

    def merge(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None and param.name is not None:
            ctx.ensure_object(dict)[param.name] = value
        return value

    fn = click.option(
        "-C",
        "--config",
        metavar="FILE",
        expose_value=False,
        callback=_remember_config,
        help=CONFIG_HELP,
    )(fn)
    fn = click.option(
        "--app",
        "app_spec",
        metavar="MODULE:ATTR",
        expose_value=False,
        callback=lambda ctx, param, value: merge(ctx, param, _valid_app_spec(ctx, param, value)),
        help="Take the URL from this app (as the group's --app).",
    )(fn)
    return click.option(
        "--url",
        "url",
        metavar="URL",
        expose_value=False,
        callback=merge,
        help="The store's URL (as the group's --url).",
    )(fn)


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
