"""``conveyor limits`` (every declared limit key: the code's values, an override, what
is in force and how many of its jobs run now), ``limits set KEY`` and ``limits reset
KEY``. An override is stored, so every worker on every host obeys it at its next claim
(well within a second) and it survives restarts; ``reset`` returns to the code's values.

Example::

    conveyor limits
    conveyor limits set tasks.call_api:"acme" --rate 10/s --concurrency 3
    conveyor limits reset tasks.call_api:"acme"
"""

from __future__ import annotations

import click

from conveyor.backends.base import LimitOverrideParams, LimitRecord
from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import echo_json, group_store_options, store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output
from conveyor.errors import ConfigurationError
from conveyor.limits import parse_rate


def _rate(count: int | None, period: float | None) -> str:
    return "-" if count is None or period is None else f"{count}/{period:g}s"


def _dict(r: LimitRecord) -> dict[str, object]:
    c, n, p = r.in_force
    over = r.override
    return {
        "key": r.key,
        "code": {
            "concurrency": r.concurrency,
            "rate_count": r.rate_count,
            "rate_period": r.rate_period,
        },
        "override": None
        if over is None
        else {"concurrency": over[0], "rate_count": over[1], "rate_period": over[2]},
        "in_force": {"concurrency": c, "rate_count": n, "rate_period": p},
        "running": r.running,
    }


@click.group("limits", invoke_without_command=True)
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def limits(ctx: click.Context, url: str | None, app_spec: str | None, as_json: bool) -> None:
    """List limit keys with their values and use (or set / reset an override)."""
    ctx.obj = {"url": url, "app_spec": app_spec, "as_json": as_json}
    if ctx.invoked_subcommand is not None:
        return
    found = open_app(url, app_spec).backend.limit_list()
    if as_json:
        echo_json([_dict(r) for r in found])
        return
    Output().table(
        [
            Column("key", key=True),
            Column("concurrency", right=True),
            Column("rate", right=True),
            Column("override", key=True),
            Column("running", right=True),
        ],
        [
            [
                r.key,
                "-" if r.in_force[0] is None else r.in_force[0],
                _rate(r.in_force[1], r.in_force[2]),
                "-" if r.override is None else "SET",
                r.running,
            ]
            for r in found
        ],
        title="limits (in force)",
        empty="no limits declared (a task's concurrency= or rate=, once a job is enqueued)",
    )


@limits.command("set")
@click.argument("key")
@group_store_options
@click.option("--concurrency", type=click.IntRange(min=1), help="Running jobs at most.")
@click.option("--rate", help="Starts per period: 10/s, 100/m, 5/10s.")
@click.pass_context
def set_limit(ctx: click.Context, key: str, concurrency: int | None, rate: str | None) -> None:
    """Override KEY's limit (what is not given keeps the code's value)."""
    if concurrency is None and rate is None:
        raise click.UsageError("give --concurrency and/or --rate")
    try:
        count, period = parse_rate(rate) if rate is not None else (None, None)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--rate") from None
    _override(ctx, key, (concurrency, count, period))


@limits.command("reset")
@click.argument("key")
@group_store_options
@click.pass_context
def reset_limit(ctx: click.Context, key: str) -> None:
    """Remove KEY's override: the code's values again."""
    _override(ctx, key, None)


def _override(
    ctx: click.Context, key: str, values: tuple[int | None, int | None, float | None] | None
) -> None:
    obj = ctx.obj or {}
    backend = open_app(obj.get("url"), obj.get("app_spec")).backend
    known = {r.key for r in backend.limit_list()}
    if key not in known:
        listed = f"; known keys: {', '.join(sorted(known))}" if known else ""
        raise click.ClickException(f"no limit key {key!r}{listed}")
    backend.limit_override(LimitOverrideParams(key, values))
    verb = "reset" if values is None else "set"
    record_cli_action(backend, f"limit_{verb}", count=0, detail=f"limit {key}: {values}")
    if obj.get("as_json"):
        echo_json({"key": key, "override": values})
    else:
        click.echo(f"limit {key} {verb}")
