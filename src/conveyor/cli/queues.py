"""``conveyor queues`` (depth per state and the paused flag), ``queues pause NAME`` and
``queues resume NAME``. A pause is stored, so every worker on every host obeys it at its
next claim (well within a second) and it survives restarts.

Example::

    conveyor queues
    conveyor queues pause mail
    conveyor queues --app tasks:app pause reports   # a declared queue with no jobs yet
    conveyor queues pause later --force              # a queue nothing knows of yet
    conveyor queues resume mail
"""

from __future__ import annotations

import time

import click

from conveyor.app import App
from conveyor.backends.base import (
    OPERATOR_COUNT_CAP,
    OPERATOR_EXACT_UP_TO,
    QueuePauseParams,
    QueueResumeParams,
    QueueStatsParams,
)
from conveyor.backends.records import count_text
from conveyor.cli.common import STATES, age, echo_json, group_store_options, store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output


@click.group("queues", invoke_without_command=True)
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def queues(ctx: click.Context, url: str | None, app_spec: str | None, as_json: bool) -> None:
    """List queues with depth and paused flag (or pause / resume one).

    With --json each queue also has its autoscaling signal: ready, running, demand,
    live workers, their capacity and the load (docs/operations.md#autoscaling)."""
    ctx.obj = {"url": url, "app_spec": app_spec, "as_json": as_json}
    if ctx.invoked_subcommand is not None:
        return
    app = open_app(url, app_spec)
    # the text table is capped ("1000+"); --json stays exact: the autoscaling signal
    # is read by scripts that scale on the real backlog
    cap = None if as_json else OPERATOR_COUNT_CAP
    found = app.backend.queue_list(QueueStatsParams(cap=cap, exact_up_to=OPERATOR_EXACT_UP_TO))
    if as_json:
        # with each queue's autoscaling signal (conveyor/scaling.py): one more read
        from conveyor.scaling import signal_of

        workers = app.backend.worker_list()
        signal = signal_of(found, workers, time.time(), app.settings.heartbeat_ttl)
        echo_json(
            [
                {
                    **load.as_json(),
                    "counts": q.counts,
                    "depth": q.counts.get("queued", 0),
                }
                for q, load in zip(found, signal.queues, strict=True)
            ]
        )
        return
    out = Output()
    out.table(
        [
            Column("queue", key=True),
            Column("paused", key=True),
            *[Column(state, key=True, right=True) for state in STATES],
            Column("oldest ready", right=True),
        ],
        [
            [
                q.queue,
                "PAUSED" if q.paused else "-",
                *[count_text(q.counts, q.capped, s) for s in STATES],
                age(q.oldest_ready_age),
            ]
            for q in found
        ],
        title="queues",
        empty="no queues",
    )
    if any(q.capped for q in found):
        out.line(
            f"n+: at least n (counted up to {OPERATOR_COUNT_CAP}; exact: --json, or "
            "conveyor queue-counts on)"
        )


def _toggle(ctx: click.Context, name: str, pause: bool, force: bool = False) -> None:
    obj = ctx.obj or {}
    # A pause that may be refused must not create a store first (a mistyped --url).
    app = open_app(obj.get("url"), obj.get("app_spec"), create=not pause or force)
    backend = app.backend
    if pause and not force:
        refuse_unknown_queue(name, {q.queue for q in backend.queue_list()}, declared_queues(app))
    if pause:
        backend.queue_pause(QueuePauseParams(name))
    else:
        backend.queue_resume(QueueResumeParams(name))
    from conveyor.cli.action_log import record_cli_action  # a write's record only

    record_cli_action(
        backend, "queue_pause" if pause else "queue_resume", count=0, detail=f"queue {name}"
    )
    verb = "paused" if pause else "resumed"
    if obj.get("as_json"):
        echo_json({"queue": name, "paused": pause})
    else:
        click.echo(f"queue {name} {verb}")


def declared_queues(app: App) -> set[str]:
    """Queues the app's tasks use (empty for a bare app: no ``--app`` given)."""
    return {task.options.queue for task in app.tasks.values()}


def refuse_unknown_queue(name: str, existing: set[str], declared: set[str]) -> None:
    """A pause of a queue that has no jobs and that no task declares is most likely a
    typo: pausing it would store a phantom queue and pause nothing real."""
    if name in existing or name in declared:
        return
    known = sorted(existing | declared)
    listed = f"; known queues: {', '.join(known)}" if known else ""
    via = "" if declared else " (give --app to count the queues its tasks declare)"
    raise click.ClickException(
        f"queue {name!r} has no jobs and no task declares it{listed}{via}; "
        "check the name, or pass --force to pause it anyway"
    )


@queues.command("pause")
@click.argument("name")
@group_store_options
@click.option("--force", is_flag=True, help="Pause NAME even if no job or task uses it yet.")
@click.pass_context
def pause(ctx: click.Context, name: str, force: bool) -> None:
    """Stop every worker from claiming jobs of NAME (running jobs finish)."""
    _toggle(ctx, name, True, force)


@queues.command("resume")
@click.argument("name")
@group_store_options
@click.pass_context
def resume(ctx: click.Context, name: str) -> None:
    """Let workers claim jobs of NAME again."""
    _toggle(ctx, name, False)
