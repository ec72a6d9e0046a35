"""``conveyor audit``: who did what to the jobs (the operator actions log), and the one
helper every acting command calls to add its entry.

Every operator action of the CLI (``retry``, ``cancel``, ``delete``, ``purge``,
``queues pause|resume``, ``migrate``, ``restore``, ``import``) and of the dashboard is
kept in the store it acted on (feature ``action_log``): who (the OS user running the
CLI, from the process's real uid, not ``$USER``; a dashboard token's name), what, how
many jobs and which (the first 100 ids), when, and from where (``cli`` and the host
name, or ``dashboard`` and the client's address). The entry is written after the action,
with its outcome: an action interrupted between the two is not logged.

Not ``conveyor check``, which checks the store's integrity.

Example::

    conveyor retry --state dead --yes
    conveyor audit                      # newest first: time, actor, source, action, ...
    conveyor audit --json --limit 500   # one JSON object a line, to keep elsewhere
"""

from __future__ import annotations

import datetime
import json
import os
import socket
from collections.abc import Sequence

import click

from conveyor.backends.base import (
    ActionLogListParams,
    ActionLogRecord,
    Backend,
    JobFilter,
    action_log_entry,
)
from conveyor.cli.common import store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output


def cli_actor() -> str:
    """The name of the OS user this process runs as (its real uid: ``$USER`` and
    ``$LOGNAME`` can say anything); the uid itself when it has no name."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):  # no pwd (Windows), or a uid without an entry
        try:
            return str(os.getuid())
        except AttributeError:
            import getpass

            return getpass.getuser()


def record_cli_action(
    backend: Backend,
    action: str,
    *,
    count: int,
    job_ids: Sequence[str] = (),
    detail: str = "",
) -> None:
    """Add an entry for ``action`` done from this CLI, where the store keeps a log
    (a store without feature ``action_log`` is left alone: ``conveyor audit`` says so)."""
    if "action_log" not in backend.features:
        return
    backend.action_log_insert(
        action_log_entry(
            cli_actor(),
            "cli",
            action,
            count=count,
            job_ids=job_ids,
            detail=detail,
            host=socket.gethostname(),
        )
    )


def describe_filter(job_filter: JobFilter) -> str:
    """The filters of a bulk action, as text for its entry.

    >>> from conveyor.states import JobState
    >>> describe_filter(JobFilter(queue="mail", states=(JobState.DEAD,)))
    'queue=mail state=dead'
    """
    parts = []
    if job_filter.queue is not None:
        parts.append(f"queue={job_filter.queue}")
    if job_filter.states:
        parts.append("state=" + ",".join(s.value for s in job_filter.states))
    if job_filter.task is not None:
        parts.append(f"task={job_filter.task}")
    for name in ("created_after", "created_before", "finished_after", "finished_before"):
        value = getattr(job_filter, name)
        if value is not None:
            parts.append(f"{name}={value:.0f}")
    for c in job_filter.where:
        path = ".".join(str(p) for p in (c.root, *c.path))
        parts.append(f"where {path}={json.dumps(c.value, ensure_ascii=False)}")
    return " ".join(parts)


def entry_json(entry: ActionLogRecord) -> dict[str, object]:
    """An entry as ``conveyor audit --json`` prints it (one object a line)."""
    return {
        "id": entry.id,
        "at": entry.at,
        "actor": entry.actor,
        "source": entry.source,
        "action": entry.action,
        "count": entry.count,
        "job_ids": list(entry.job_ids),
        "detail": entry.detail,
        "host": entry.host,
    }


@click.command("audit")
@store_options
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line (JSON Lines).")
def audit(url: str | None, app_spec: str | None, limit: int, as_json: bool) -> None:
    """Who did what to the jobs, newest first: every retry, cancel, delete, purge, queue
    pause/resume, migrate, restore and import from the CLI or the dashboard."""
    backend = open_app(url, app_spec).backend
    if "action_log" not in backend.features:
        raise click.ClickException(f"the {backend.name} store does not keep an actions log yet")
    entries = backend.action_log_list(ActionLogListParams(limit=limit))
    if as_json:
        for entry in entries:
            click.echo(json.dumps(entry_json(entry), ensure_ascii=False))
        return
    Output().table(
        [
            Column("time", key=True),
            Column("actor", key=True),
            Column("source", key=True),
            Column("action", key=True),
            Column("jobs", key=True, right=True),
            Column("detail", preview=60),
            Column("from", key=True),
        ],
        [
            [utc_text(e.at), e.actor, e.source, e.action, e.count, e.detail or "-", e.host or "-"]
            for e in entries
        ],
        title="actions, newest first",
        empty="no actions recorded yet",
    )


def utc_text(at: float) -> str:
    """``2026-12-07 10:58:30Z`` for an entry's time.

    >>> utc_text(0.0)
    '1970-01-01 00:00:00Z'
    """
    moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")
