"""``conveyor search-index [on|off]``: whether the store answers ``--search`` from a
text index, and turning SQLite's FTS5 index on or off (docs/search.md).

Off by default: the index costs every insert and finish. Without it every store scans
(at most ``MAX_SCAN`` jobs a page, and says when it stopped). Turning it on indexes every
job in one write transaction; off drops it. Both are kept in ``conveyor audit``.

Example::

    conveyor search-index              # sqlite: index off (searches scan)
    conveyor search-index on           # indexes every job, then keeps the index
"""

from __future__ import annotations

import time

import click

from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import store_options
from conveyor.cli.config import open_app


@click.command("search-index")
@store_options
@click.argument("turn", required=False, type=click.Choice(["on", "off"]))
def search_index(url: str | None, app_spec: str | None, turn: str | None) -> None:
    """Say whether searches use an index; on/off turns SQLite's FTS5 index on or off."""
    backend = open_app(url, app_spec, create=turn is not None).backend
    if backend.name != "sqlite":
        if turn is not None:
            raise click.ClickException(
                f"the {backend.name} store has no search index to turn {turn} yet: "
                "its searches scan (bounded, and they say when they stopped)"
            )
        click.echo(f"{backend.name}: no index (searches scan, at most 100,000 jobs a page)")
        return
    from conveyor.backends.sqlite.search import SQLiteSearch

    assert isinstance(backend, SQLiteSearch)  # the sqlite store's own switch
    if turn is not None:
        start = time.perf_counter()
        backend.search_index_set(turn == "on")
        record_cli_action(backend, f"search_index_{turn}", count=0, detail="sqlite FTS5")
        click.echo(f"search index {turn} ({time.perf_counter() - start:.1f} s)")
        return
    enabled = backend.search_index_enabled()
    click.echo("sqlite: index on (FTS5)" if enabled else "sqlite: index off (searches scan)")
