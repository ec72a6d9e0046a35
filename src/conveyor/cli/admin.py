"""``conveyor backup FILE`` (SQLite online backup, written as a new 0600 file; on Redis
and PostgreSQL one line naming the engine's own tools) and
``conveyor check`` (integrity audit; exit status 1 when anything is wrong).

Example::

    conveyor backup /backups/jobs-$(date +%F).db
    conveyor check || alert "conveyor store needs a look"
"""

from __future__ import annotations

import os
import sqlite3

import click

from conveyor.backends.base import IntegrityCheckParams
from conveyor.cli.common import echo_json, store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output
from conveyor.errors import ConfigurationError


@click.command("backup")
@store_options
@click.argument("path", type=click.Path(dir_okay=False))
def backup(url: str | None, app_spec: str | None, path: str) -> None:
    """Copy the store to PATH while workers keep running (SQLite only)."""
    backend = open_app(url, app_spec).backend
    if "backup" not in backend.features:
        # Such a backend's backup() only refuses, naming the engine's own tools.
        try:
            backend.backup(path)
        except ConfigurationError as exc:
            raise click.ClickException(str(exc)) from None
        raise click.ClickException(f"backup is not available on the {backend.name} backend")
    if os.path.lexists(path):
        raise click.ClickException(f"{path} exists; choose a new file")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise click.ClickException(f"no directory {directory} for the backup; create it first")
    try:
        backend.backup(path)  # created 0600, exclusively
    except FileExistsError:
        raise click.ClickException(f"{path} exists; choose a new file") from None
    except sqlite3.Error as exc:  # the backend removed its half-written file
        raise click.ClickException(
            f"cannot write the backup to {path}: {exc}; is {directory} writable?"
        ) from exc
    click.echo(f"backup written to {path} ({os.path.getsize(path):,} bytes)")


@click.command("check")
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def check(url: str | None, app_spec: str | None, as_json: bool) -> None:
    """Audit the store: impossible states, claims without a live worker, orphaned rows."""
    app = open_app(url, app_spec)
    problems = app.backend.integrity_check(IntegrityCheckParams(app.settings.heartbeat_ttl))
    if as_json:
        echo_json(
            {
                "ok": not problems,
                "problems": [
                    {"kind": p.kind, "job_id": p.job_id, "detail": p.detail} for p in problems
                ],
            }
        )
    elif not problems:
        click.echo("ok: no problems found")
    else:
        Output().table(
            [Column("kind", key=True), Column("job", key=True), Column("detail")],
            [[p.kind, p.job_id or "-", p.detail] for p in problems],
            title=f"{len(problems)} problem(s)",
            empty="ok: no problems found",
        )
    if problems:
        raise SystemExit(1)
