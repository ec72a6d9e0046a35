"""``conveyor schedules``: the periodic schedules (next fire, paused, last job), and
``schedules pause NAME``, ``resume NAME``, ``run NAME``.

A pause is stored: every worker skips the schedule's slots from its next tick (they are
not caught up after ``resume``). ``run`` asks for one run now: the next scheduler tick
of a worker that has the schedule enqueues its job once, paused or not. Each action is
kept in the operator actions log (``conveyor audit``). A name the store does not know
(no worker has recorded it yet) is refused, so a typo changes nothing.

Example::

    conveyor schedules                 # name, spec, next fire, paused, last fire and job
    conveyor schedules pause nightly
    conveyor schedules run nightly     # enqueued by a worker within its next tick
    conveyor schedules resume nightly
"""

from __future__ import annotations

import click

from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import echo_json, since, store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output, iso_time, utc_option
from conveyor.schedules import ACTIONS, ScheduleView, schedule_views, steer, unknown_schedule


@click.group("schedules", invoke_without_command=True)
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@utc_option
@click.pass_context
def schedules(
    ctx: click.Context, url: str | None, app_spec: str | None, as_json: bool, utc: bool
) -> None:
    """List periodic schedules (or pause / resume / run one now)."""
    ctx.obj = {"url": url, "app_spec": app_spec, "as_json": as_json}
    if ctx.invoked_subcommand is not None:
        return
    backend = open_app(url, app_spec).backend
    if "periodic" not in backend.features:
        raise click.ClickException(f"the {backend.name} store has no periodic schedules")
    views = schedule_views(backend)
    if as_json:
        echo_json([v.as_json() for v in views])
        return
    Output().table(
        [
            Column("schedule", key=True),
            Column("spec"),
            Column("next fire", key=True),
            Column("paused", key=True),
            Column("last fired", key=True, right=True),
            Column("last job", key=True),
            Column("state", key=True),
        ],
        [_row(v, utc) for v in views],
        title="schedules",
        empty="no schedules yet (a worker records each schedule of its app at its start)",
    )


def _row(v: ScheduleView, utc: bool) -> list[object]:
    pending = " (run requested)" if v.run_requested_at is not None else ""
    return [
        v.name,
        v.spec,
        "-" if v.paused else iso_time(v.next_slot, utc=utc),
        "PAUSED" if v.paused else "-",
        since(v.last_fired_at) + ("" if v.last_fired_at is None else " ago"),
        v.last_job_id or "-",
        (v.last_job_state or "-") + pending,
    ]


def _act(ctx: click.Context, name: str, action: str) -> None:
    obj = ctx.obj or {}
    # An action that may be refused must not create a store first (a mistyped --url).
    backend = open_app(obj.get("url"), obj.get("app_spec"), create=False).backend
    if "periodic" not in backend.features:
        raise click.ClickException(f"the {backend.name} store has no periodic schedules")
    if not steer(backend, name, action):
        raise click.ClickException(unknown_schedule(name, schedule_views(backend)))
    record_cli_action(backend, ACTIONS[action], count=0, detail=f"schedule {name}")
    said = {
        "pause": "paused: workers skip its slots until it is resumed",
        "resume": "resumed: its next slot fires",
        "run": "run requested: a worker enqueues it at its next scheduler tick",
    }[action]
    if obj.get("as_json"):
        echo_json({"schedule": name, "action": action})
    else:
        click.echo(f"schedule {name} {said}")


@schedules.command("pause")
@click.argument("name")
@click.pass_context
def pause(ctx: click.Context, name: str) -> None:
    """Stop every worker from firing NAME (its missed slots are not caught up)."""
    _act(ctx, name, "pause")


@schedules.command("resume")
@click.argument("name")
@click.pass_context
def resume(ctx: click.Context, name: str) -> None:
    """Let workers fire NAME again from its next slot."""
    _act(ctx, name, "resume")


@schedules.command("run")
@click.argument("name")
@click.pass_context
def run(ctx: click.Context, name: str) -> None:
    """Enqueue one run of NAME now (by a worker's next tick; paused or not)."""
    _act(ctx, name, "run")
