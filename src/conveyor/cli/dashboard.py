"""``conveyor dashboard``: serve the web dashboard for a store with uvicorn.

Starlette and uvicorn are imported inside the command, so the rest of the CLI (and
``import conveyor``) works without the ``web`` extra.

The token is read from ``$CONVEYOR_DASHBOARD_TOKEN`` (an operator named ``env``) or
``--token-file`` (several, each ``NAME ROLE TOKEN``: :mod:`conveyor.web.tokens`):
``--token T`` still works but puts T on the command line, where ``ps`` shows it to
every local user, so it prints a warning.

Example::

    conveyor dashboard --url sqlite:///jobs.db            # http://127.0.0.1:8000
    (umask 077; echo "alice operator $(openssl rand -hex 16)" > ~/.conveyor-tokens)
    conveyor dashboard --url redis://... --host 0.0.0.0 --token-file ~/.conveyor-tokens
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from conveyor.cli.common import store_options
from conveyor.cli.config import open_app
from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    from conveyor.web.tokens import DashboardToken


@click.command("dashboard")
@store_options
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; anything but loopback needs a token.",
)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Tokens with their roles, one a line: NAME ROLE TOKEN (ROLE: viewer or operator; "
    "# comments). A lone token is an operator. Must not be writable by others.",
)
@click.option(
    "--token",
    envvar="CONVEYOR_DASHBOARD_TOKEN",
    help="Require this token on every request. Prefer $CONVEYOR_DASHBOARD_TOKEN or "
    "--token-file: a token given here is visible to every local user in ps.",
)
def dashboard(
    url: str | None,
    app_spec: str | None,
    host: str,
    port: int,
    token_file: Path | None,
    token: str | None,
) -> None:
    """Serve the web dashboard: queues, jobs, workers, and actions on them."""
    try:
        import uvicorn

        from conveyor.web import create_app
        from conveyor.web.security import check_bind
        from conveyor.web.tokens import ENV_NAME, OPERATOR, DashboardToken, read_token_file
    except ImportError as exc:
        raise click.ClickException(
            f"the dashboard needs an extra: pip install 'conveyor[web]' ({exc})"
        ) from None
    source = click.get_current_context().get_parameter_source("token")
    tokens: list[DashboardToken] = []
    if token_file is not None:
        if source is ParameterSource.COMMANDLINE:
            raise click.UsageError("give the token either with --token or --token-file, not both")
        try:
            tokens, warning = read_token_file(token_file)
        except ConfigurationError as exc:
            raise click.UsageError(str(exc)) from None
        if warning:
            click.echo(warning, err=True)
    elif source is ParameterSource.COMMANDLINE:
        click.echo(
            "warning: --token is visible to every local user in ps; set "
            "$CONVEYOR_DASHBOARD_TOKEN or use --token-file instead",
            err=True,
        )
    if token is not None and token_file is None:
        if not token.strip():
            raise click.UsageError("the dashboard token is empty")
        # The one token of before roles: an operator, named for where it came from.
        name = ENV_NAME if source is not ParameterSource.COMMANDLINE else "token"
        tokens = [DashboardToken(name, OPERATOR, token)]
    try:
        check_bind(host, tokens)
    except ConfigurationError as exc:
        raise click.UsageError(str(exc)) from None
    web = create_app(open_app(url, app_spec), tokens=tokens)
    check_port_free(host, port)
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"conveyor dashboard on http://{shown}:{port}/"
        + (
            f"  ({len(tokens)} token(s): {roles_of(tokens)}; open it once with ?token=...)"
            if tokens
            else ""
        )
    )
    uvicorn.run(web, host=host, port=port, log_level="warning")


def roles_of(tokens: list[DashboardToken]) -> str:
    """``2 operator, 1 viewer`` for the start line (names and secrets stay out of it).

    >>> from conveyor.web.tokens import DashboardToken
    >>> roles_of([DashboardToken("a", "viewer", "x"), DashboardToken("b", "operator", "y")])
    '1 operator, 1 viewer'
    """
    counts = {r: sum(t.role == r for t in tokens) for r in ("operator", "viewer")}
    return ", ".join(f"{n} {role}" for role, n in counts.items() if n)


def check_port_free(host: str, port: int) -> None:
    """Fail with one line when ``host:port`` cannot be listened on (uvicorn would log an
    error and exit 3). Released at once: uvicorn binds it a moment later."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port"
            ) from None
