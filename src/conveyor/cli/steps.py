"""Durable jobs in the CLI: ``conveyor send JOB NAME --data JSON`` (deliver an event to
a job's ``conveyor.wait_for(NAME)``), and the steps section of ``conveyor job ID``
(each step's name, state, attempts, times and a preview of its result, and what the job
waits for).

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
    NO_DEADLINE,
    STEP_WAITING,
    Backend,
    JobEventSendParams,
    JobRecord,
    StepRecord,
)
from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import echo_json, store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output, iso_json, iso_time
from conveyor.cli.prefix import resolve
from conveyor.errors import JobNotFound
from conveyor.states import JobState

#: Characters of a step's result ``conveyor job ID`` shows.
PREVIEW = 60


def job_steps(backend: Backend, job_id: str) -> list[StepRecord]:
    """The job's steps, or none on a store without durable jobs."""
    return backend.job_step_list(job_id) if "steps" in backend.features else []


def waits_for(record: JobRecord, steps: Sequence[StepRecord]) -> str | None:
    """What a parked or sleeping job waits for, in words (``event 'approved' (no
    timeout)``, ``sleep until 2026-12-08T09:00:00Z``); None when it waits for nothing."""
    waiting = [s for s in steps if s.state == STEP_WAITING]
    if waiting and record.state is JobState.WAITING:
        event = waiting[-1].name.split(":", 1)[-1]
        deadline = float(json.loads(waiting[-1].result or "0"))
        until = "no timeout" if deadline >= NO_DEADLINE else f"times out {iso_time(deadline)}"
        return f"event {event!r} ({until})"
    if steps and steps[-1].name == "sleep" and record.state is JobState.SCHEDULED:
        return f"sleep until {iso_time(float(json.loads(steps[-1].result or '0')))}"
    return None


def steps_json(steps: Sequence[StepRecord], epoch: bool) -> list[dict[str, Any]]:
    out = []
    for s in steps:
        d = records.asdict(s)
        d.pop("job_id")
        if not epoch:
            d["started_at"], d["finished_at"] = iso_json(s.started_at), iso_json(s.finished_at)
        out.append(d)
    return out


def steps_section(out: Output, steps: Sequence[StepRecord], waiting: str | None, utc: bool) -> None:
    """``conveyor job ID``'s steps table (nothing for a job that has none)."""
    if not steps:
        return
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
                f"{max(0.0, s.finished_at - s.started_at):.3f}s", s.result or s.error or "",
            ]
            for s in steps
        ],
        title=f"steps ({len(steps)})" + (f" -- waits for: {waiting}" if waiting else ""),
        empty="no steps",
    )  # fmt: skip


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
