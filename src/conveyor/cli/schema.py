"""``conveyor migrate-schema``: create or upgrade the store's schema now, or (``--sql``)
print the DDL for teams that apply migrations themselves.

``--sql`` only parses the URL (for PostgreSQL its ``?schema=`` names the schema the DDL
creates) and connects to nothing. Without it, the store is opened, which migrates it
exactly as a worker's start would (on PostgreSQL under the migration's advisory lock).

Example::

    conveyor migrate-schema --sql --url 'postgresql://app@db/main?schema=jobs' > 001_conveyor.sql
    conveyor migrate-schema --url 'postgresql://app@db/main?schema=jobs'
"""

from __future__ import annotations

import click

from conveyor import stores
from conveyor.app import App
from conveyor.cli.common import store_options
from conveyor.cli.config import open_app


def schema_ddl(url: str) -> str:
    """The DDL of the store at ``url``, without connecting (ClickException on Redis)."""
    ddl = stores.schema_ddl(url)
    if ddl is None:
        scheme = url.split(":", 1)[0].lower()
        raise click.ClickException(f"the {scheme} backend has no schema: its keys need no DDL")
    return ddl


@click.command("migrate-schema")
@store_options
@click.option("--sql", "print_sql", is_flag=True, help="Print the DDL instead of applying it.")
def migrate_schema(url: str | None, app_spec: str | None, print_sql: bool) -> None:
    """Create or upgrade the store's schema (workers do it at start), or print its DDL."""
    if print_sql:
        from conveyor.app import load_app

        app = load_app(app_spec) if app_spec else App()
        click.echo(schema_ddl(url or app.url), nl=False)
        return
    app = open_app(url, app_spec, create=True)
    try:
        click.echo(f"schema of {app.backend.url} is current")
    finally:
        app.close()
