"""Connections to PostgreSQL: the pool, the schema and its migration.

Rows come back as **plain tuples** (psycopg's default row factory), in the column order
of each statement; :mod:`conveyor.backends.decoding` turns them into records. Every
pooled connection has ``search_path`` set to the URL's ``?schema=``, so all SQL uses bare
table names, and autocommit **on**: the backend opens its transactions itself, so that
a one-statement read is one round trip and the hot path's pipelines end in one Sync
that commits them (backend.py, ``_tx`` / ``_pipelined``), instead of psycopg's BEGIN
round trip before and COMMIT round trip after each.

The schema is created and migrated by the first backend that opens it: one transaction
holding ``pg_advisory_xact_lock`` (keyed by the schema name) reads the version table and
applies what is missing, so two workers starting at once on an empty database do not
race (the second waits, then finds the schema current). The lock is released by the
commit; nothing else in conveyor takes an advisory lock.

Example:
    >>> "CREATE TABLE IF NOT EXISTS jobs" in schema_sql("conveyor")
    True
    >>> schema_sql("app").splitlines()[1]
    'CREATE SCHEMA IF NOT EXISTS app;'
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from conveyor.backends.packaged import packaged_text
from conveyor.backends.postgres.single import OneConnection
from conveyor.backends.postgres.url import PostgresTarget, parse_postgres_url
from conveyor.errors import BackendUnavailable

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

#: 1: every table and column of SQLite's schema versions 1-4 at once. 2: the operator
#: actions log (SQLite's 6). 3: schedules' pause and "run now" (SQLite's 7). 4: durable
#: jobs (SQLite's 8). 5: flow control by key (SQLite's 9). 6: the search index filled after
#: the fact (SQLite's 10; off until `conveyor search-index on`). 7: jobs_waiting, for the
#: capped counts (SQLite's 11). 8: jobs_task, for the dashboard's indexed
#: sort by task (SQLite's 12). A new step adds a file here.
SCHEMA_VERSION = 8
_MIGRATIONS = {
    1: "schema.sql",
    2: "schema_002.sql",
    3: "schema_003.sql",
    4: "schema_004.sql",
    5: "schema_005.sql",
    6: "schema_006.sql",
    7: "schema_007.sql",
    8: "schema_008.sql",
}
#: First key of the two-key advisory lock taken around a migration ("conv"); the second
#: is hashtext(schema), so two schemas in one database migrate independently.
MIGRATION_LOCK_CLASS = 0x636F6E76
_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)"


def read_packaged(name: str) -> str:
    """A text file shipped beside this module."""
    return packaged_text(__file__, __package__, name)


def schema_sql(schema: str) -> str:
    """The whole DDL for ``schema`` as one script (``conveyor migrate-schema --sql``),
    for teams that apply migrations themselves: the same statements the backend runs."""
    parts = [
        "BEGIN;",
        f"CREATE SCHEMA IF NOT EXISTS {schema};",
        f"SET LOCAL search_path TO {schema};",
        f"{_VERSION_TABLE};",
    ]
    for version in range(1, SCHEMA_VERSION + 1):
        parts.append(read_packaged(_MIGRATIONS[version]).strip())
        parts.append(f"INSERT INTO schema_version (version) VALUES ({version});")
    parts.append("COMMIT;")
    return "\n".join(parts) + "\n"


#: Server-side settings of conveyor's sessions: the server drops a session whose client
#: stopped answering (a host cut off by a network partition) within about 5 s of the
#: client's last packet. TCP keepalives after 2 s of silence, 1 s apart; the kernel gives
#: up 5 s after the last packet received (``tcp_user_timeout``: unacknowledged data, and
#: the keepalive probes too; ``tcp_keepalives_count`` is the same 5 s where the platform
#: has no user timeout). Until then the session keeps the row locks of the transaction it
#: was in (a finish, a claim, a heartbeat), and the rescue skips locked jobs and waits for
#: a locked ``workers`` row: without this, a cut-off worker's jobs stay ``running`` for as
#: long as the cut lasts (the kernel's default: hours). A live client's kernel answers the
#: probes however busy the process is, so only a lost peer is dropped; that is why there is
#: no ``idle_in_transaction_session_timeout`` here (it would also end a live client that
#: spends a few seconds between two statements, e.g. encoding a large batch). The URL's own
#: ``options`` come after, so they win.
DEAD_CLIENT_OPTIONS = (
    "-c tcp_keepalives_idle=2 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3 "
    "-c tcp_user_timeout=5000"
)
#: The most a cut-off session keeps its locks after its client's last packet (seconds):
#: the 5 s above plus one probe interval (the kernel checks at each probe). A cut-off
#: worker's jobs are rescued within ``max(heartbeat_ttl, DEAD_SESSION_BOUND)`` plus one
#: ``rescue_interval`` of the cut (docs/postgres.md, "What happens on a partition").
DEAD_SESSION_BOUND = 6.0


def connect_options(target: PostgresTarget) -> dict[str, object]:
    """Keyword arguments of every connection: autocommit on (see the module docstring),
    the dead-client settings, then any ``options`` the URL passes to the server, then
    search_path = schema."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(target.conninfo).get("options")
    parts = [DEAD_CLIENT_OPTIONS, str(given or ""), f"-c search_path={target.schema}"]
    return {"autocommit": True, "options": " ".join(p for p in parts if p)}


def stored_version(conn: psycopg.Connection[tuple[Any, ...]], schema: str) -> int:
    """The schema version applied in ``schema`` (0: none yet). Read-only."""
    found = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.schema_version",)
    ).fetchone()
    if not found or not found[0]:
        return 0
    row = conn.execute(f"SELECT max(version) FROM {schema}.schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(conn: psycopg.Connection[tuple[Any, ...]], schema: str) -> int:
    """Bring ``schema`` to :data:`SCHEMA_VERSION` in one transaction under the migration
    lock; returns the version it found. Commits (or rolls back on error)."""
    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (MIGRATION_LOCK_CLASS, schema)
        )
        # Read under the lock: a worker that started at the same time may have migrated.
        found = stored_version(conn, schema)
        if found < SCHEMA_VERSION:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            conn.execute(f"SET LOCAL search_path TO {schema}")
            conn.execute(_VERSION_TABLE)
            for version in range(found + 1, SCHEMA_VERSION + 1):
                conn.execute(read_packaged(_MIGRATIONS[version]).encode())
                conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
    return found


def require_existing_store(url: str) -> None:
    """Raise StoreNotFound unless ``url``'s schema holds conveyor's tables.

    For read-only tools (``conveyor status``, the dashboard), before the backend opens
    (which creates the schema): one connection, one read, nothing created. A server that
    cannot be reached (or a database or role that does not exist) is
    :class:`BackendUnavailable`, as the real open would say (see :func:`unavailable`).
    """
    import psycopg

    from conveyor.errors import StoreNotFound

    target = parse_postgres_url(url)
    try:
        with connected(target, connect_timeout=10) as conn:
            version = stored_version(conn, target.schema)
    except psycopg.Error:
        return  # connected, but the read failed: the real open reports why
    if version == 0:
        raise StoreNotFound(
            f"no conveyor schema {target.schema!r} at {target.safe_url} (a worker or the "
            "first enqueue creates it); check --url or $CONVEYOR_URL"
        )


#: libpq's wording of the connection failures that waiting will not fix, matched when
#: the error carries no SQLSTATE (libpq reports startup failures as text). Servers whose
#: ``lc_messages`` is not English fall through to "unavailable", which is still one line.
_MISSING_DATABASE = re.compile(r'database "(?P<name>[^"]*)" does not exist')
_MISSING_ROLE = re.compile(r'role "(?P<name>[^"]*)" does not exist')
_BAD_PASSWORD = re.compile(
    r'password authentication failed for user "(?P<name>[^"]*)"|no password supplied'
)
_RETRY = "retry once it is back"


def unavailable(exc: BaseException, safe_url: str) -> BackendUnavailable:
    """conveyor's error for a connection psycopg could not open: what is wrong and what to
    do, on one line. A missing database or role and a refused password say so (waiting
    will not fix them); anything else (refused, timed out, shutting down) is an outage.

    Example:
        >>> url = "postgresql://app@db:5432/shop"
        >>> print(unavailable(OSError('FATAL:  database "shop" does not exist'), url))
        PostgreSQL at postgresql://app@db:5432/shop: database 'shop' does not exist; create it (createdb shop, or CREATE DATABASE shop) or fix the database in the URL
        >>> refused = OSError("connection to server at 'db', port 5432 failed: refused")
        >>> print(unavailable(refused, url))
        PostgreSQL at postgresql://app@db:5432/shop is unavailable (connection to server at 'db', port 5432 failed: refused); retry once it is back
    """
    text = str(exc)
    sqlstate = getattr(exc, "sqlstate", None)
    where = f"PostgreSQL at {safe_url}"
    found = _MISSING_DATABASE.search(text)
    if sqlstate == "3D000" or found:
        name = found["name"] if found else "?"
        return BackendUnavailable(
            f"{where}: database {name!r} does not exist; create it (createdb {name}, or "
            f"CREATE DATABASE {name}) or fix the database in the URL"
        )
    found = _MISSING_ROLE.search(text)
    if found:
        name = found["name"]
        return BackendUnavailable(
            f"{where}: role {name!r} does not exist; create it (CREATE ROLE {name} LOGIN) "
            "or fix the user in the URL (postgresql://USER@host/db)"
        )
    if sqlstate == "28P01" or _BAD_PASSWORD.search(text):
        return BackendUnavailable(
            f"{where}: password authentication failed ({_cause(text)}); put the password "
            "in the URL as postgresql://USER:PASSWORD@host/db (or use ~/.pgpass)"
        )
    return BackendUnavailable(f"{where} is unavailable ({_cause(text)}); {_RETRY}")


def _cause(text: str) -> str:
    """libpq's first line without its ``connection failed:`` and ``FATAL:`` prefixes."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else "no reason given"
    first = first.removeprefix("connection failed:").strip()
    return re.sub(r"\bFATAL:\s+", "", first)


@contextmanager
def connected(
    target: PostgresTarget, **kwargs: Any
) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """One connection to ``target``, closed after the block; a connection that cannot be
    opened is :func:`unavailable` (what fails inside the block stays as raised)."""
    import psycopg

    try:
        conn = psycopg.connect(target.conninfo, **kwargs)
    except psycopg.OperationalError as exc:
        raise unavailable(exc, target.safe_url) from exc
    with conn:
        yield conn


def open_pool(target: PostgresTarget) -> ConnectionPool | OneConnection:
    """Migrate the schema (failing fast when the server cannot be reached), then open
    the pool: ``min_size`` 1, ``max_size`` the URL's ``pool_max``; one connection where
    the pool's threads cannot start (a subinterpreter: ``single.py``)."""
    import psycopg
    from psycopg_pool import ConnectionPool

    kwargs = connect_options(target)
    with connected(target, **kwargs) as conn:
        try:
            migrate(conn, target.schema)
        except psycopg.errors.InsufficientPrivilege as exc:
            # A role that may log in but not create the schema: a one-time setup step.
            raise BackendUnavailable(
                f"PostgreSQL at {target.safe_url}: cannot create the schema "
                f"{target.schema!r} ({_cause(str(exc))}); GRANT CREATE ON DATABASE to this "
                "role, or have an owner apply `conveyor migrate-schema --sql` first"
            ) from exc
    pool: ConnectionPool = ConnectionPool(
        target.conninfo,
        min_size=1,
        max_size=target.pool_max,
        kwargs=kwargs,
        open=False,
        name=f"conveyor-{target.schema}",
    )
    try:
        pool.open()
    except RuntimeError as exc:  # "daemon threads are disabled in this (sub)interpreter"
        if "daemon threads" not in str(exc):
            raise
        return OneConnection(target.conninfo, kwargs)
    return pool
