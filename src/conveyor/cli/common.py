"""Options and helpers shared by the CLI commands.

Every command that reads the store accepts ``--url`` (default ``$CONVEYOR_URL``, else
``sqlite:///conveyor.db``) or ``--app module:attribute`` (the app's own URL).

Example::

    @click.command()
    @store_options
    def status(url: str | None, app_spec: str | None) -> None:
        app = open_app(url, app_spec)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from conveyor.app import App, load_app

F = TypeVar("F", bound=Callable[..., Any])


def store_options(fn: F) -> F:
    fn = click.option(
        "--app", "app_spec", metavar="MODULE:ATTR", help="Take the URL from this app."
    )(fn)
    fn = click.option(
        "--url",
        envvar="CONVEYOR_URL",
        help="Store URL (default $CONVEYOR_URL or sqlite:///conveyor.db).",
    )(fn)
    return fn


def open_app(url: str | None, app_spec: str | None) -> App:
    if app_spec:
        app = load_app(app_spec)
        if url:
            app.url = url
        return app
    return App(url)


def age(seconds: float | None) -> str:
    """Human duration: '3.2s', '4m10s', '2h05m'."""
    if seconds is None:
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
