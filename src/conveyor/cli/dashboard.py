"""``conveyor dashboard``: serve the web dashboard for a store with uvicorn.

Starlette and uvicorn are imported inside the command, so the rest of the CLI (and
``import conveyor``) works without the ``web`` extra.

Example::

    conveyor dashboard --url sqlite:///jobs.db            # http://127.0.0.1:8000
    conveyor dashboard --url redis://... --host 0.0.0.0 --token "$(openssl rand -hex 16)"
"""

from __future__ import annotations

import socket

import click

from conveyor.cli.common import open_app, store_options
from conveyor.errors import ConfigurationError


@click.command("dashboard")
@store_options
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; anything but loopback needs --token.",
)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--token",
    envvar="CONVEYOR_DASHBOARD_TOKEN",
    help="Require this token on every request ($CONVEYOR_DASHBOARD_TOKEN).",
)
def dashboard(
    url: str | None, app_spec: str | None, host: str, port: int, token: str | None
) -> None:
    """Serve the web dashboard: queues, jobs, workers, and actions on them."""
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
