"""``conveyor dashboard``: serve the web dashboard for a store with uvicorn.

Starlette and uvicorn are imported inside the command, so the rest of the CLI (and
``import conveyor``) works without the ``web`` extra.

The token is read from ``$CONVEYOR_DASHBOARD_TOKEN`` or ``--token-file``: ``--token T``
still works but puts T on the command line, where ``ps`` shows it to every local user,
so it prints a warning.

Example::

    conveyor dashboard --url sqlite:///jobs.db            # http://127.0.0.1:8000
    openssl rand -hex 16 > ~/.conveyor-token && chmod 600 ~/.conveyor-token
    conveyor dashboard --url redis://... --host 0.0.0.0 --token-file ~/.conveyor-token
"""

from __future__ import annotations

import socket
from pathlib import Path

import click
from click.core import ParameterSource

from conveyor.cli.common import store_options
from conveyor.cli.config import open_app
from conveyor.errors import ConfigurationError


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
    help="Require the token in this file (its first line) on every request.",
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
    source = click.get_current_context().get_parameter_source("token")
    if token_file is not None:
        if source is ParameterSource.COMMANDLINE:
            raise click.UsageError("give the token either with --token or --token-file, not both")
        token = read_token_file(token_file)
    elif source is ParameterSource.COMMANDLINE:
        click.echo(
            "warning: --token is visible to every local user in ps; set "
            "$CONVEYOR_DASHBOARD_TOKEN or use --token-file instead",
            err=True,
        )
    if token is not None and not token.strip():
        raise click.UsageError("the dashboard token is empty")
    try:
        import uvicorn

        from conveyor.web import create_app
        from conveyor.web.security import check_bind
    except ImportError as exc:
        raise click.ClickException(
            f"the dashboard needs an extra: pip install 'conveyor[web]' ({exc})"
        ) from None
    try:
        check_bind(host, token)
    except ConfigurationError as exc:
        raise click.UsageError(str(exc)) from None
    web = create_app(open_app(url, app_spec), token=token)
    check_port_free(host, port)
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"conveyor dashboard on http://{shown}:{port}/"
        + ("  (token required: open it once with ?token=...)" if token else "")
    )
    uvicorn.run(web, host=host, port=port, log_level="warning")


def read_token_file(path: Path) -> str:
    """The token in ``path``: its first line, without surrounding whitespace."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"cannot read the token file {path}: {exc}") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise click.UsageError(f"the token file {path} is empty")
    return token


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
