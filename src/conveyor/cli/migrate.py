"""``conveyor migrate --from URL --to URL``: move queued, scheduled and dead jobs from one
store to another (SQLite -> Redis when one machine is no longer enough, or back).

Page by page, in id order: read a page from the source, insert it on the target by the
same ids (``job_import_many``: one transaction or script, ids already present skipped),
and only then delete those jobs from the source. A crash between the two steps leaves a
job in both stores; the rerun skips it on the target (same id) and deletes it from the
source, so a rerun gives exactly one copy of each job. Kept: state, run_at, priority,
attempt count, errors and reason, headers, created/finished times, the attempt history and logs,
the unique key and its window (unless a job on the target holds the key: then the job
comes without it), and workflows: a job waiting on parents moves with them, edges and
piping kept, in one step (``migrate_flows.py``). Not moved: running jobs (they belong to
a live worker of the source; rerun once they ended; a workflow with one stays whole),
succeeded/cancelled jobs (history, not work) but the succeeded parents a waiting job
will be given the results of.

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

from conveyor import records
from conveyor.app import App, require_store
from conveyor.backends.base import (
    Backend,
    JobCountParams,
    JobFilter,
    JobFlow,
    JobImport,
    JobImportParams,
    JobListParams,
    JobLogListParams,
    JobRecord,
    QueuePauseParams,
    StepRecord,
)
from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import valid_url
from conveyor.cli.migrate_flows import Component, workflow_components
from conveyor.records import record
from conveyor.redaction import redacted
from conveyor.states import JobState

#: What migrate moves: the work still to do, and the failures an operator may retry.
MOVED = (JobState.QUEUED, JobState.SCHEDULED, JobState.DEAD)


def _steps(source: Backend, job_id: str) -> list[StepRecord]:
    """A durable job's steps, carried so that it resumes where it was on the target."""
    return source.job_step_list(job_id) if "steps" in source.features else []


def move_page(source: Backend, target: Backend, page: list[JobRecord], delete: bool = True) -> int:
    """Copy ``page`` to ``target`` (skipping ids it has), then delete it from ``source``.
    Returns how many jobs the target did not have yet. ``delete=False`` stops after the
    copy: what a crash between the two steps leaves behind (tests use it). Each job's
    pipe and unique window come along; a waiting job's parents too (its page is its
    whole workflow component, :mod:`conveyor.cli.migrate_flows`)."""
    flows = {f.id: f for f in source.job_flow_many([j.id for j in page])}
    items = [
        JobImport(
            j,
            source.job_attempts(j.id),
            source.job_log_list(JobLogListParams(j.id)),
            _carried(flows.get(j.id), j),
            _steps(source, j.id),
            source.job_event_list(j.id) if "steps" in source.features else [],
        )
        for j in page
    ]
    inserted = target.job_import_many(JobImportParams(items))
    if delete:
        # Only after the target write returned: a job is never only in flight. A
        # component goes in one call, so no dependant is cancelled for a moved parent.
        source.job_delete_many([j.id for j in page])
    return len(inserted)


def _carried(flow: JobFlow | None, job: JobRecord) -> JobFlow | None:
    """Edges only of the jobs still waiting on them: the parents of any other job have
    ended (and are not moved), so its edges point at nothing on the target."""
    if flow is None or job.state is JobState.WAITING:
        return flow
    return records.replace(flow, parents=())


@record
class Outcome:
    """What one run of :func:`migrate_jobs` did."""

    moved: int = 0
    #: already on the target (an earlier, interrupted run)
    skipped: int = 0
    #: jobs of workflows left on the source (a member runs there)
    stayed: int = 0


def migrate_jobs(
    source: Backend,
    target: Backend,
    *,
    page_size: int = 500,
    max_pages: int | None = None,
    on_page: Callable[[int], object] | None = None,
    components: list[Component] | None = None,
) -> Outcome:
    """Move every job in MOVED states, page by page, then each workflow component whole
    (``components``: :func:`workflow_components` of the source, read when not given)."""
    if components is None:
        components = workflow_components(source)
    held = {j.id for c in components for j in c.jobs}
    moved = skipped = pages = 0
    wanted = JobFilter(states=MOVED)
    cursor: str | None = None

    def more() -> bool:
        return max_pages is None or pages < max_pages

    while more():
        # Moved jobs leave the source, so a rerun starts where the last run stopped; the
        # cursor steps over the jobs of workflow components, moved below.
        page = source.job_list(JobListParams(after_id=cursor, limit=page_size, filter=wanted))
        if not page:
            break
        cursor = page[-1].id
        todo = [j for j in page if j.id not in held]
        if todo:
            new = move_page(source, target, todo)
            moved, skipped = moved + new, skipped + len(todo) - new
        pages += 1
        if on_page is not None:
            on_page(len(todo))
    stayed = 0
    for component in components:
        if not component.movable:
            stayed += len(component.jobs)
        elif more():
            new = move_page(source, target, list(component.jobs))
            moved, skipped = moved + new, skipped + len(component.jobs) - new
            pages += 1
            if on_page is not None:
                on_page(len(component.jobs))
    return Outcome(moved, skipped, stayed)


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
        if not no_pause:
            for q in source.backend.queue_list():
                source.backend.queue_pause(QueuePauseParams(q.queue))
        components = workflow_components(source.backend)
        total = source.backend.job_count(JobCountParams(JobFilter(states=MOVED))) + sum(
            1 for c in components if c.movable for j in c.jobs if j.state not in MOVED
        )
        columns = (TextColumn("migrating"), BarColumn(), MofNCompleteColumn())
        # On stderr, like export's: stdout carries only the summary lines.
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("jobs", total=total)
            done = migrate_jobs(
                source.backend,
                target.backend,
                page_size=page_size,
                max_pages=max_pages,
                on_page=lambda n: bar.advance(task, n),
                components=components,
            )
        moved, skipped = done.moved, done.skipped
        # In both stores: the target got the jobs, the source lost them (and its pause).
        for backend, way in ((source.backend, "to"), (target.backend, "from")):
            other = target.backend.url if way == "to" else source.backend.url
            record_cli_action(
                backend,
                "migrate",
                count=moved,
                detail=f"{way} {redacted(other)}; {skipped} skipped",
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
        if done.stayed:
            click.echo(
                f"{done.stayed} job(s) of workflows with a running job stay on the source; "
                "rerun once it ended"
            )
    finally:
        source.close()
        target.close()
