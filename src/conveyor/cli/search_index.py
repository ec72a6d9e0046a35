"""``conveyor search-index [on|off]``: whether the store answers ``--search`` from a
text index (and how many jobs wait for its indexer), and turning the store's index on
or off (SQLite's FTS5, PostgreSQL's pg_trgm and MariaDB's FULLTEXT, all off by default)
(docs/search.md).

All are filled after the fact (the workers' indexer), so the writes only note what
they changed. Without an index every store scans (at most ``MAX_SCAN`` jobs a page,
and says when it stopped). ``on`` makes every job pending for the indexer; ``off``
drops the index. Both are kept in ``conveyor audit``.

Example::

    conveyor search-index              # sqlite: index on (FTS5), 0 job(s) pending
    conveyor search-index off          # searches scan; writes note nothing
"""

from __future__ import annotations

import time

import click

from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import store_options
from conveyor.cli.config import open_app

#: What each store's index is, as the command says it (stores without one scan).
_KINDS = {"sqlite": "FTS5", "postgres": "pg_trgm", "mariadb": "FULLTEXT"}


@click.command("search-index")
@store_options
@click.argument("turn", required=False, type=click.Choice(["on", "off"]))
def search_index(url: str | None, app_spec: str | None, turn: str | None) -> None:
    """Say whether searches use an index; on/off turns the store's index (SQLite's FTS5,
    PostgreSQL's pg_trgm, MariaDB's FULLTEXT) on or off."""
    backend = open_app(url, app_spec, create=turn is not None).backend
    kind = _KINDS.get(backend.name)
    if kind is None:
        if turn is not None:
            raise click.ClickException(
                f"the {backend.name} store has no search index to turn {turn} yet: "
                "its searches scan (bounded, and they say when they stopped)"
            )
        click.echo(f"{backend.name}: no index (searches scan, at most 100,000 jobs a page)")
        return
    from conveyor.backends.mariadb.search import MariaDBSearch
    from conveyor.backends.postgres.search import PostgresSearch
    from conveyor.backends.sqlite.search import SQLiteSearch

    # the store's own switch
    assert isinstance(backend, SQLiteSearch | PostgresSearch | MariaDBSearch)
    if turn is not None:
        start = time.perf_counter()
        backend.search_index_set(turn == "on")
        detail = f"{backend.name} {kind}"
        record_cli_action(backend, f"search_index_{turn}", count=0, detail=detail)
        click.echo(f"search index {turn} ({time.perf_counter() - start:.1f} s)")
        return
    if backend.search_index_enabled():
        pending = backend.search_index_pending()
        click.echo(f"{backend.name}: index on ({kind}), {pending:,} job(s) pending")
    else:
        click.echo(f"{backend.name}: index off (searches scan)")
