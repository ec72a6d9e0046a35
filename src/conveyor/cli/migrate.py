"""``conveyor migrate --from URL --to URL``: move queued, scheduled and dead jobs from one
store to another (SQLite -> Redis when one machine is no longer enough, or back).

Page by page, in id order: read a page from the source, insert it on the target by the
same ids (``job_import_many``: one transaction or script, ids already present skipped),
and only then delete those jobs from the source. A crash between the two steps leaves a
job in both stores; the rerun skips it on the target (same id) and deletes it from the
source, so a rerun gives exactly one copy of each job. Kept: state, run_at, priority,
attempt count, errors and reason, created/finished times, the attempt history and logs,
and the unique key (unless a job on the target holds it: then the job comes without; its
``unique_for`` window after it finishes is not carried). Not moved: running jobs (they
belong to a live worker of the source; rerun once they ended), succeeded/cancelled jobs
(history, not work), workflow edges. While any job waits on workflow parents it refuses
to start (moving a parent would cancel its dependants on the source).

The source's queues are paused first (``--no-pause`` to skip), so no source worker claims
a job while it is being copied; the pause stays (the source is being retired).

Example::

    conveyor migrate --from sqlite:///jobs.db --to redis://10.0.0.5:6379/0
    conveyor migrate --from sqlite:///jobs.db --to redis://10.0.0.5:6379/0  # rerun: no-op
"""

from __future__ import annotations

from collections.abc import Callable

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from conveyor.app import App, require_store
from conveyor.backends.base import (
    Backend,
    JobCountParams,
    JobFilter,
    JobImport,
    JobImportParams,
    JobListParams,
    JobLogListParams,
    JobRecord,
    QueuePauseParams,
)
from conveyor.cli.common import valid_url
from conveyor.redaction import redacted
from conveyor.states import JobState

#: What migrate moves: the work still to do, and the failures an operator may retry.
MOVED = (JobState.QUEUED, JobState.SCHEDULED, JobState.DEAD)


def move_page(source: Backend, target: Backend, page: list[JobRecord], delete: bool = True) -> int:
    """Copy ``page`` to ``target`` (skipping ids it has), then delete it from ``source``.
    Returns how many jobs the target did not have yet. ``delete=False`` stops after the
    copy: what a crash between the two steps leaves behind (tests use it)."""
    items = [
        JobImport(j, source.job_attempts(j.id), source.job_log_list(JobLogListParams(j.id)))
        for j in page
    ]
    inserted = target.job_import_many(JobImportParams(items))
    if delete:
        # Only after the target write returned: a job is never only in flight.
        source.job_delete_many([j.id for j in page])
    return len(inserted)


def migrate_jobs(
    source: Backend,
    target: Backend,
    *,
    page_size: int = 500,
    max_pages: int | None = None,
    on_page: Callable[[int], object] | None = None,
) -> tuple[int, int]:
    """Move every job in MOVED states; returns (moved, already on the target)."""
    moved = skipped = pages = 0
    wanted = JobFilter(states=MOVED)
    while max_pages is None or pages < max_pages:
        # From the start each time: moved jobs left the source, so no cursor is needed
        # and a rerun starts where the last run stopped.
        page = source.job_list(JobListParams(limit=page_size, filter=wanted))
        if not page:
            break
        new = move_page(source, target, page)
        moved += new
        skipped += len(page) - new
        pages += 1
        if on_page is not None:
            on_page(len(page))
    return moved, skipped


def refuse_waiting_workflows(source: Backend) -> None:
    """Stop before anything moves while jobs wait on workflow parents: the edges are not
    carried, and deleting a moved parent from the source would cancel its dependants
    there (a deleted parent can never release them), so a workflow would be lost."""
    waiting = source.job_count(JobCountParams(JobFilter(states=(JobState.WAITING,))))
    if waiting:
        raise click.ClickException(
            f"{waiting} job(s) on the source wait on workflow parents, and migrate does not "
            "carry workflow edges: moving their parents would cancel them. Let those "
            "workflows finish (or cancel them) first, then rerun"
        )


@click.command("migrate")
@click.option(
    "--from",
    "source_url",
    required=True,
    metavar="URL",
    callback=valid_url,
    help="Store to empty (must exist).",
)
@click.option(
    "--to",
    "target_url",
    required=True,
    metavar="URL",
    callback=valid_url,
    help="Store to fill (created if needed).",
)
@click.option("--page-size", default=500, show_default=True, help="Jobs per page.")
@click.option("--limit", "max_pages", type=int, help="Stop after this many pages (rerun to go on).")
@click.option("--no-pause", is_flag=True, help="Do not pause the source's queues first.")
def migrate(
    source_url: str, target_url: str, page_size: int, max_pages: int | None, no_pause: bool
) -> None:
    """Move queued, scheduled and dead jobs from one store to another (safe to rerun)."""
    if source_url == target_url:
        raise click.BadParameter("--from and --to are the same store")
    require_store(source_url)  # a mistyped source must not become a new, empty store
    source, target = App(source_url), App(target_url)
    try:
        refuse_waiting_workflows(source.backend)
        if not no_pause:
            for q in source.backend.queue_list():
                source.backend.queue_pause(QueuePauseParams(q.queue))
        total = source.backend.job_count(JobCountParams(JobFilter(states=MOVED)))
        columns = (TextColumn("migrating"), BarColumn(), MofNCompleteColumn())
        # On stderr, like export's: stdout carries only the summary lines.
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("jobs", total=total)
            moved, skipped = migrate_jobs(
                source.backend,
                target.backend,
                page_size=page_size,
                max_pages=max_pages,
                on_page=lambda n: bar.advance(task, n),
            )
        left = source.backend.job_count(JobCountParams(JobFilter(states=MOVED)))
        click.echo(
            f"moved {moved} job(s) to {redacted(target.backend.url)}"
            + (f"; {skipped} were already there (an earlier, interrupted run)" if skipped else "")
            + (f"; {left} left (rerun to go on)" if left else "")
        )
        running = source.backend.job_count(JobCountParams(JobFilter(states=(JobState.RUNNING,))))
        if running:
            click.echo(f"{running} running job(s) stay on the source; rerun once they ended")
    finally:
        source.close()
        target.close()
