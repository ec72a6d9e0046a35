"""``conveyor queue-counts [on|off]``: whether the store keeps its counts per (queue,
state), and turning that on or off (docs/operations.md#a-million-jobs).

Kept counts make ``conveyor status``, ``conveyor queues`` and the dashboard read a row
per queue and state instead of counting every job (at a million jobs on SQLite, 1.9 s ->
a few ms); each write to a job then pays a trigger (python -m bench.count_cost). Redis
keeps its counts always; PostgreSQL and MariaDB count (with their indexes) on each read.

Example::

    conveyor queue-counts          # sqlite: counts kept: off (status counts every job)
    conveyor queue-counts on       # counts every job once, then keeps the counts
"""

from __future__ import annotations

import time

import click

from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import store_options
from conveyor.cli.config import open_app

#: How each store without the switch answers queue_stats.
_ALWAYS = {
    "redis": "counts kept: always (a hash the state changes update)",
    "memory": "counts: every job counted on each read (in process)",
}


@click.command("queue-counts")
@store_options
@click.argument("turn", required=False, type=click.Choice(["on", "off"]))
def queue_counts(url: str | None, app_spec: str | None, turn: str | None) -> None:
    """Say whether the store keeps its counts per queue and state; on/off turns SQLite's
    kept counts (a table its triggers keep) on or off."""
    backend = open_app(url, app_spec, create=turn is not None).backend
    from conveyor.backends.sqlite.counts import SQLiteCounts

    if not isinstance(backend, SQLiteCounts):
        if turn is not None:
            raise click.ClickException(
                f"the {backend.name} store has no kept counts to turn {turn}: "
                + _ALWAYS.get(backend.name, "it counts with its indexes on each read")
            )
        said = _ALWAYS.get(backend.name, "counts: counted with its indexes on each read")
        click.echo(f"{backend.name}: {said}")
        return
    if turn is not None:
        start = time.perf_counter()
        backend.queue_counts_set(turn == "on")
        record_cli_action(backend, f"queue_counts_{turn}", count=0, detail=backend.name)
        click.echo(f"queue counts {turn} ({time.perf_counter() - start:.1f} s)")
        return
    kept = backend.queue_counts_enabled()
    click.echo(
        f"{backend.name}: counts kept: "
        + ("on (triggers keep them)" if kept else "off (status counts every job)")
    )
