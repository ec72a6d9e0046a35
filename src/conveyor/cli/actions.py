"""``conveyor retry|cancel|release|delete`` (by ids, or by the ``jobs`` filters or a
``--search`` query, after a confirmation that shows the count; ``--yes`` skips it) and
``conveyor purge``.

``retry`` and ``cancel`` take whole ids or unique prefixes of them; ``delete`` whole ids.

Example::

    conveyor retry 01JD8X2K 01JD8Y...
    conveyor release --state waiting --task ledger.post    # a blocked sequence goes on
    conveyor retry --state dead --task billing.charge          # asks: "Retry 12 job(s)?"
    conveyor delete --queue tmp --yes
    conveyor retry --search 'error:timeouterror finished:<1h'  # every match, not a page
    conveyor purge --older-than 7d --state succeeded --yes
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import click

from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobCountParams,
    JobFilter,
    JobPurgeParams,
    JobRetryParams,
    SequenceReleaseParams,
)
from conveyor.cli.action_log import describe_filter, record_cli_action
from conveyor.cli.common import echo_json, store_options
from conveyor.cli.config import open_app
from conveyor.cli.filters import STATES, Duration, bound_to, filter_options, is_empty, iter_jobs
from conveyor.cli.prefix import resolve_prefix
from conveyor.secrets import refuse_secret_where
from conveyor.states import FINISHED_STATES, JobState

#: Ids acted on per backend call.
CHUNK = 500


def _retry(backend: Backend, ids: Sequence[str]) -> int:
    return sum(1 for j in backend.job_retry_many(JobRetryParams(ids)) if j.state is JobState.QUEUED)


def _cancel(backend: Backend, ids: Sequence[str]) -> int:
    return sum(
        1
        for j in backend.job_cancel_many(JobCancelParams(ids))
        if j.state is JobState.CANCELLED or j.cancel_requested
    )


def _release(backend: Backend, ids: Sequence[str]) -> int:
    return len(backend.sequence_release_many(SequenceReleaseParams(ids)))


def _delete(backend: Backend, ids: Sequence[str]) -> int:
    return backend.job_delete_many(ids)


def _bulk(
    verb: str,
    action: Callable[[Backend, Sequence[str]], int],
    help_text: str,
    prefixes: bool = True,
) -> click.Command:
    @click.command(verb, help=help_text)
    @store_options
    @filter_options
    @click.argument("ids", nargs=-1)
    @click.option(
        "--search",
        "query",
        metavar="QUERY",
        help="Act on every job the search matches (docs/search.md), ANDed with the filters.",
    )
    @click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def command(
        url: str | None,
        app_spec: str | None,
        job_filter: JobFilter,
        ids: tuple[str, ...],
        query: str | None,
        yes: bool,
        as_json: bool,
    ) -> None:
        if ids and (not is_empty(job_filter) or query is not None):
            raise click.UsageError("give job ids or filters, not both")
        if not ids and is_empty(job_filter) and query is None:
            raise click.UsageError("give job ids, or filters (e.g. --state dead) to act on many")
        app = open_app(url, app_spec, create=True)
        backend = app.backend
        missing: list[str] = []
        if ids:
            targets, missing = _named_targets(backend, ids, prefixes)
        elif query is not None:
            from conveyor.cli.jobs_search import search_ids

            # every match (page after page of the search), counted before acting
            job_filter, targets = search_ids(app, query, job_filter)
            if not targets:
                _report(as_json, verb, 0, 0)
                return
            if not yes:
                click.confirm(
                    f"{verb.capitalize()} {len(targets)} job(s) matching the search?",
                    abort=True,
                    err=True,
                )
        else:
            refuse_secret_where(backend, job_filter)  # secret arguments cannot be queried
            job_filter = bound_to(job_filter, app, note=not as_json)  # after: one-line errors
            count = backend.job_count(JobCountParams(job_filter))
            if count == 0:
                _report(as_json, verb, 0, 0)
                return
            if not yes:
                click.confirm(
                    f"{verb.capitalize()} {count} job(s) matching the filters?",
                    abort=True,
                    err=True,
                )
            # Collect ids first, then act: acting while paging would move the pages.
            targets = [j.id for page in iter_jobs(backend, job_filter) for j in page]
        changed = sum(
            action(backend, targets[i : i + CHUNK]) for i in range(0, len(targets), CHUNK)
        )
        chosen = "by id" if ids else describe_filter(job_filter)
        if query is not None:
            chosen = f"search {query!r}" + ("" if is_empty(job_filter) else f"; {chosen}")
        record_cli_action(
            backend,
            verb,
            count=changed,
            job_ids=targets,
            detail=f"{chosen}; {changed} of {len(targets)} changed",
        )
        _report(as_json, verb, len(targets) + len(missing), changed, missing)
        if missing:
            raise SystemExit(1)  # some of the ids named no job: the caller must know

    return command


def _named_targets(
    backend: Backend, ids: Sequence[str], prefixes: bool
) -> tuple[list[str], list[str]]:
    """(the jobs named by ``ids``, whole or by unique prefix; the ids naming none).
    ClickException when none of them names a job."""
    targets = list(dict.fromkeys(ids))  # a repeated id is acted on once
    missing = unknown_ids(backend, targets)
    if missing and prefixes:
        # What is not a whole id may be a unique prefix of one (copied short).
        named = {m: resolve_prefix(backend, m) for m in missing}
        targets = list(dict.fromkeys(named.get(i) or i for i in targets))
        missing = [m for m, found in named.items() if found is None]
    if len(missing) == len(targets):
        raise click.ClickException(
            f"no job {', '.join(missing)} (never enqueued, or pruned or deleted)"
        )
    gone = set(missing)
    targets = [i for i in targets if i not in gone]
    return targets, missing


def unknown_ids(backend: Backend, ids: Sequence[str]) -> list[str]:
    """The ids in ``ids`` that name no job, in the given order."""
    found: set[str] = set()
    for i in range(0, len(ids), CHUNK):
        found.update(j.id for j in backend.job_get_many(list(ids[i : i + CHUNK])))
    return [i for i in ids if i not in found]


def _report(
    as_json: bool, verb: str, matched: int, changed: int, not_found: Sequence[str] = ()
) -> None:
    if as_json:
        data: dict[str, object] = {"action": verb, "matched": matched, "changed": changed}
        if not_found:
            data["not_found"] = list(not_found)
        echo_json(data)
    else:
        missing = f"; not found: {', '.join(not_found)}" if not_found else ""
        click.echo(f"{verb}: {changed} of {matched} job(s) changed{missing}")


retry = _bulk(
    "retry",
    _retry,
    "Retry finished jobs (dead, cancelled, succeeded) now. IDS: whole ids or unique "
    "prefixes (4 characters or more).",
)
cancel = _bulk(
    "cancel",
    _cancel,
    "Cancel jobs: waiting ones at once, running ones at their worker's next heartbeat. "
    "IDS: whole ids or unique prefixes (4 characters or more).",
)
release = _bulk(
    "release",
    _release,
    "Let jobs held behind a failed job of their sequence (sequence_key with "
    'on_failure="block") go on; other jobs are left as they are. IDS: whole ids or '
    "unique prefixes (4 characters or more).",
)
# Deleting cannot be undone: it takes whole ids only.
delete = _bulk(
    "delete", _delete, "Delete jobs with their attempts and logs (IDS: whole ids).", False
)


@click.command("purge")
@store_options
@click.option(
    "--older-than",
    required=True,
    type=Duration(),
    metavar="AGE",
    help="With its unit: 45s, 30m, 12h, 7d, 2w.",
)
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice([s for s in STATES if JobState(s) in FINISHED_STATES]),
    help="Finished state to purge (repeatable). Default: all three.",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def purge(
    url: str | None,
    app_spec: str | None,
    older_than: float,
    states: tuple[str, ...],
    yes: bool,
    as_json: bool,
) -> None:
    """Delete finished jobs older than AGE (what retention does, on demand)."""
    cutoff = time.time() - older_than
    wanted = tuple(JobState(s) for s in states) or tuple(sorted(FINISHED_STATES))
    backend = open_app(url, app_spec, create=True).backend
    count = backend.job_count(JobCountParams(JobFilter(states=wanted, finished_before=cutoff)))
    if count and not yes:
        click.confirm(f"Purge {count} finished job(s)?", abort=True, err=True)
    total = 0
    while count:
        n = backend.job_purge(JobPurgeParams(finished_before=cutoff, states=wanted, limit=CHUNK))
        total += n
        if n < CHUNK:
            break
    states_text = ",".join(s.value for s in wanted)
    record_cli_action(
        backend, "purge", count=total, detail=f"finished {older_than:g}s ago or more: {states_text}"
    )
    _report(as_json, "purge", count, total)
