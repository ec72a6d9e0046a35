"""Durable jobs in the CLI: ``conveyor send JOB NAME --data JSON`` (deliver an event to
a job's ``conveyor.wait_for(NAME)``), and the steps section of ``conveyor job ID``
(each step's name, state, attempts, times and a preview of its result -- a sleep's wake
time as an ISO time --, what the job waits for, and the values it published).

Example::

    conveyor send 01JD8X2K approved --data '{"by": "ada"}'
    conveyor job 01JD8X2K          # ... steps (3) ... waits for: event 'approved'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from conveyor import records
from conveyor.backends.base import (
    PUBLISH_PREFIX,
    SLEEP_STEP,
    Backend,
    JobEventSendParams,
    JobRecord,
    StepRecord,
    is_published,
    step_time,
    waits_on,
)
from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import echo_json, store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output, iso_json, iso_time
from conveyor.cli.prefix import resolve
from conveyor.errors import JobNotFound

#: Characters of a step's result ``conveyor job ID`` shows.
PREVIEW = 60


def job_steps(backend: Backend, job_id: str) -> list[StepRecord]:
    """The job's steps, or none on a store without durable jobs."""
    return backend.job_step_list(job_id) if "steps" in backend.features else []


def waits_for(record: JobRecord, steps: Sequence[StepRecord], utc: bool = False) -> str | None:
    """What a parked or sleeping job waits for, in words (``event 'approved' (no
    timeout)``, ``sleep until 2026-12-08T09:00:00Z``); None when it waits for nothing."""
    found = waits_on(record.state, steps)
    if found is None:
        return None
    what, moment = found
    if what == SLEEP_STEP:
        return f"sleep until {iso_time(moment, utc=utc)}"
    until = "no timeout" if moment is None else f"times out {iso_time(moment, utc=utc)}"
    return f"{what} ({until})"


def shown_result(s: StepRecord, utc: bool = False) -> str:
    """A step's result as ``conveyor job`` shows it: a sleep's wake time and a wait's
    deadline as ISO times, else the saved JSON (or the error).

    >>> shown_result(StepRecord("j", 0, "sleep", "succeeded", "0.0"), utc=True)
    'wakes 1970-01-01T00:00:00Z'
    """
    moment = step_time(s)
    if moment is not None:
        verb = "wakes" if s.name == SLEEP_STEP else "times out"
        return f"{verb} {iso_time(moment, utc=utc)}"
    return s.result or s.error or ""


def steps_json(steps: Sequence[StepRecord], epoch: bool) -> list[dict[str, Any]]:
    """The job's steps for ``--json`` (published values apart): a sleep's wake time and
    a wait's deadline are also given as ``at`` (ISO, or epoch with ``--epoch``)."""
    out = []
    for s in steps:
        if is_published(s):
            continue
        d = records.asdict(s)
        d.pop("job_id")
        if not epoch:
            d["started_at"], d["finished_at"] = iso_json(s.started_at), iso_json(s.finished_at)
        if (moment := step_time(s)) is not None:
            d["at"] = moment if epoch else iso_json(moment)
        out.append(d)
    return out


def published_json(steps: Sequence[StepRecord]) -> dict[str, Any]:
    """The values the job published (``current_job().publish``), by key."""
    return {
        s.name[len(PUBLISH_PREFIX) :]: json.loads(s.result or "null")
        for s in steps
        if is_published(s)
    }


def steps_section(out: Output, steps: Sequence[StepRecord], waiting: str | None, utc: bool) -> None:
    """``conveyor job ID``'s steps table and published values (nothing for a job that
    has none)."""
    body = [s for s in steps if not is_published(s)]
    if body:
        out.table(
            [
                Column("#", key=True, right=True),
                Column("step", key=True),
                Column("state", key=True),
                Column("tries", right=True),
                Column("started"),
                Column("took", right=True),
                Column("result", preview=PREVIEW),
            ],
            [
                [
                    s.position, s.name, s.state, s.attempts, iso_time(s.started_at, utc=utc),
                    f"{max(0.0, s.finished_at - s.started_at):.3f}s", shown_result(s, utc),
                ]
                for s in body
            ],
            title=f"steps ({len(body)})" + (f" -- waits for: {waiting}" if waiting else ""),
            empty="no steps",
        )  # fmt: skip
    published = [s for s in steps if is_published(s)]
    if published:
        out.table(
            [Column("key", key=True), Column("value", preview=PREVIEW), Column("at")],
            [
                [s.name[len(PUBLISH_PREFIX) :], s.result or "", iso_time(s.finished_at, utc=utc)]
                for s in sorted(published, key=lambda s: s.name)
            ],
            title=f"published ({len(published)})",
            empty="nothing published",
        )


@click.command("send")
@store_options
@click.argument("job_id", metavar="JOB")
@click.argument("name")
@click.option("--data", default="null", show_default=True, help="The payload, as JSON.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def send(
    url: str | None, app_spec: str | None, job_id: str, name: str, data: str, as_json: bool
) -> None:
    """Send the event NAME to durable job JOB (a whole id or a unique prefix): its
    ``conveyor.wait_for(NAME)`` gets the payload, now if it waits for it, else when it
    does."""
    try:
        json.loads(data)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--data") from None
    backend = open_app(url, app_spec).backend
    if "steps" not in backend.features:
        raise click.ClickException(f"the {backend.name} store has no durable jobs")
    resolved = resolve(backend, job_id) or job_id
    try:
        woken = backend.job_event_send(JobEventSendParams(resolved, name, data))
    except JobNotFound:
        raise click.ClickException(f"no job {job_id}") from None
    record_cli_action(backend, "send", count=1, job_ids=[resolved], detail=name)
    if as_json:
        echo_json({"job": resolved, "event": name, "woken": woken})
        return
    click.echo(
        f"sent {name!r} to job {resolved}" + (" (woken)" if woken else " (kept until it waits)")
    )
