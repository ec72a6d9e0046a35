"""``conveyor restore BACKUP [--into URL] [--force]``: bring back a SQLite backup made
by ``conveyor backup FILE``.

The backup is checked first (``PRAGMA integrity_check``, a conveyor schema version this
release knows); a damaged or foreign file is refused with one line. Jobs that were
running when the backup was taken come back ``queued`` (their workers are gone): the
store's own graceful release gives their attempt back and records it as ``released``;
it is not counted as a rescue toward ``max_rescues`` (see
:mod:`conveyor.backends.sqlite.restore` for why).

Without ``--into``, the backup replaces the store the one URL rule names (``--url``, the
app's ``App(url)``, ``$CONVEYOR_URL``, the config files), which must be SQLite: the
backup is copied next to it, prepared there, and renamed over it in one step. A store
that holds jobs is replaced only with ``--force``; one that a process still has open
(a worker, the dashboard) never is.

With ``--into URL``, the backup's jobs (every state, with attempt history, logs and
workflow edges) are added to any store, SQLite, Redis or PostgreSQL, by the path
``conveyor migrate`` uses (``job_import_many``): ids already there are skipped and
counted, nothing is deleted, so a rerun is harmless.

Example::

    conveyor restore /backups/jobs-2026-12-01.db --url sqlite:///jobs.db --force
    conveyor restore /backups/jobs-2026-12-01.db --into redis://10.0.0.5:6379/0
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from conveyor.app import App
from conveyor.backends.base import (
    Backend,
    JobCountParams,
    JobFilter,
    JobImport,
    JobImportParams,
    JobListParams,
    JobLogListParams,
)
from conveyor.backends.sqlite.connection import parse_sqlite_url
from conveyor.backends.sqlite.restore import (
    BackupRefused,
    StoreInUse,
    check_backup,
    prepare_copy,
    replace_store,
    store_jobs,
)
from conveyor.cli.common import _CONFIG_META, store_options, valid_url
from conveyor.cli.config import configured_app, read_layers
from conveyor.records import record
from conveyor.redaction import redacted


@record
class Copied:
    """What :func:`copy_jobs` did."""

    added: int = 0
    #: ids the target already had (skipped)
    skipped: int = 0


def copy_jobs(
    source: Backend,
    target: Backend,
    *,
    page_size: int = 500,
    on_page: Callable[[int], object] | None = None,
) -> Copied:
    """Every job of ``source`` (any state but running) into ``target`` under its own id,
    page by page in id order, with attempts, logs and workflow fields; ids the target
    has are skipped. Parents come before their children (ids grow with creation time),
    so a waiting job's edges point at jobs already there."""
    added = skipped = 0
    cursor: str | None = None
    while True:
        page = source.job_list(JobListParams(after_id=cursor, limit=page_size))
        if not page:
            break
        cursor = page[-1].id
        flows = {f.id: f for f in source.job_flow_many([j.id for j in page])}
        items = [
            JobImport(
                j,
                source.job_attempts(j.id),
                source.job_log_list(JobLogListParams(j.id)),
                flows.get(j.id),
            )
            for j in page
        ]
        new = len(target.job_import_many(JobImportParams(items)))
        added, skipped = added + new, skipped + len(page) - new
        if on_page is not None:
            on_page(len(page))
    return Copied(added, skipped)


def live_workers(app: App) -> list[str]:
    """``id (heartbeat Ns ago)`` of each worker of ``app``'s store whose heartbeat is
    within the app's ``heartbeat_ttl``."""
    now = time.time()
    ttl = app.settings.heartbeat_ttl
    return [
        f"{w.id} (heartbeat {max(0.0, now - w.heartbeat_at):.0f}s ago)"
        for w in app.backend.worker_list()
        if now - w.heartbeat_at <= ttl
    ]


@click.command("restore")
@store_options
@click.argument("backup", type=click.Path(dir_okay=False))
@click.option(
    "--into",
    "into",
    metavar="URL",
    callback=valid_url,
    help="Add the backup's jobs to this store (any kind) instead of replacing the store.",
)
@click.option("--force", is_flag=True, help="Replace a store that holds jobs.")
def restore(
    url: str | None, app_spec: str | None, backup: str, into: str | None, force: bool
) -> None:
    """Restore a SQLite backup made by `conveyor backup`: replace the SQLite store, or
    add its jobs to any store with --into URL."""
    try:
        info = check_backup(backup)
    except BackupRefused as exc:
        raise click.ClickException(str(exc)) from None
    if into is not None:
        _restore_into(backup, into, info.jobs)
        return
    config_file = click.get_current_context().meta.get(_CONFIG_META)
    app, _ = configured_app(app_spec, url, read_layers(config_file))
    if not app.url.startswith("sqlite:"):
        raise click.ClickException(
            f"the store {redacted(app.url)} is not SQLite: a backup replaces only a SQLite "
            "store; add its jobs to this one with --into URL"
        )
    target = parse_sqlite_url(app.url)
    if target.is_memory:
        raise click.ClickException("cannot restore into sqlite:///:memory:; name a file")
    held = store_jobs(target.path)
    if held is None and os.path.exists(target.path) and os.path.getsize(target.path) and not force:
        app.close()
        raise click.ClickException(
            f"{target.path} exists but is not a conveyor store; pass --force to replace it"
        )
    # Only a store with jobs is opened here (a file that is none would be migrated).
    live = live_workers(app) if held else []
    app.close()
    note = f"; worker(s) live on it: {', '.join(live)}" if live else "; no worker is live on it"
    if held and not force:
        raise click.ClickException(
            f"{target.path} holds {held} job(s) that restore would replace{note}; "
            "pass --force to replace them"
        )
    directory = os.path.dirname(target.path)
    os.makedirs(directory, exist_ok=True)
    # Same directory as the store: the final os.replace is one rename on one file
    # system, never a copy that a crash could leave half done.
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target.path)}.restore-", dir=directory)
    os.close(fd)
    os.unlink(temp)  # prepare_copy creates it exclusively, 0600
    try:
        copy = prepare_copy(backup, temp)
        replace_store(copy.path, target.path)
    except StoreInUse as exc:
        raise click.ClickException(f"{exc}{note if live else ''}") from None
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    click.echo(f"restored {copy.jobs} job(s) from {backup} into {target.path}")
    if copy.released:
        click.echo(
            f"{len(copy.released)} job(s) running at backup time are queued again "
            "(attempt given back, recorded as released)"
        )


def _restore_into(backup: str, url: str, total: int) -> None:
    with tempfile.TemporaryDirectory(prefix="conveyor-restore-") as scratch:
        # The backup itself is never written: its jobs are released on a private copy.
        copy = prepare_copy(backup, os.path.join(scratch, "copy.db"))
        source, target = App(f"sqlite:///{copy.path}"), App(url)
        try:
            columns = (TextColumn("restoring"), BarColumn(), MofNCompleteColumn())
            with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
                task = bar.add_task("jobs", total=total)
                done = copy_jobs(
                    source.backend, target.backend, on_page=lambda n: bar.advance(task, n)
                )
            left = target.backend.job_count(JobCountParams(JobFilter()))
        finally:
            source.close()
            target.close()
    click.echo(
        f"restored {done.added} job(s) from {backup} into {redacted(url)}"
        + (f"; {done.skipped} were already there (same id), skipped" if done.skipped else "")
        + f"; it holds {left} job(s)"
    )
    if copy.released:
        click.echo(
            f"{len(copy.released)} job(s) running at backup time are queued again "
            "(attempt given back, recorded as released)"
        )
