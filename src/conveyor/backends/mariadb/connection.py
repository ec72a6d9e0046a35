"""Connections to a MariaDB/MySQL store (PyMySQL, imported here only), its schema, and
:class:`Executor`, the engine's view of a connection.

Every connection: autocommit off, ``READ COMMITTED`` (a claim's ``SKIP LOCKED`` and a
fenced update read the latest committed rows, as on PostgreSQL), ``utf8mb4``,
``PIPES_AS_CONCAT`` (the shared audit concatenates with ``||``), ``ANSI_QUOTES`` (the
engine quotes the column ``"key"``, a reserved word here), and ``FOUND_ROWS``: an
update's row count is the rows it matched, as SQLite and PostgreSQL count them (a fence
that matched is not refused for writing the value the row already held).

Example (needs a server; the test suite starts one)::

    conn = connect(parse_mariadb_url("mariadb://app:pw@db/jobs"))
    Executor(conn).execute("SELECT 1").fetchone()    # (1,)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor.backends.mariadb.url import MariaDBTarget, parse_mariadb_url
from conveyor.backends.packaged import packaged_text
from conveyor.errors import BackendUnavailable, StoreNotFound

#: 1: every table (schema.sql). 2: schedules' pause and "run now" (columns of
#: periodic_schedules, in schema.sql for new stores; ADDED_COLUMNS for older ones).
#: 3: durable jobs (job_steps, job_events: CREATE TABLE IF NOT EXISTS in schema.sql).
#: 4: sequences, fair_keys, limit_overrides (new tables: schema.sql re-run, idempotent).
#: 5: the search index's tables (job_search_pending, _on, _docs), empty until
#: ``conveyor search-index on`` adds its FULLTEXT index and triggers (search.py).
#: 6: jobs_task, for the dashboard's indexed sort (job_keys).
SCHEMA_VERSION = 6
#: Indexes schema.sql gained after its table was made: (table, index, columns), added
#: to a store that lacks them (MySQL 8 has no CREATE INDEX IF NOT EXISTS either).
ADDED_INDEXES = (("jobs", "jobs_task", "task"),)
#: Columns schema.sql gained after version 1: (table, column, definition), added to a
#: store that lacks them (MySQL 8 has no ADD COLUMN IF NOT EXISTS, so each is looked up).
ADDED_COLUMNS = (
    ("periodic_schedules", "paused", "TINYINT NOT NULL DEFAULT 0"),
    ("periodic_schedules", "run_requested_at", "DOUBLE"),
)
_SESSION = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT,ANSI_QUOTES')"
#: Its own statement: MariaDB names the variable tx_isolation, MySQL 8
#: transaction_isolation; this form is both's.
_ISOLATION = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
#: The name of the lock that serialises migrations across processes (GET_LOCK).
_MIGRATION_LOCK = "conveyor_migrate_{database}"


def read_packaged(name: str) -> str:
    """A text file shipped beside this module."""
    return packaged_text(__file__, __package__, name)


def statements(script: str) -> list[str]:
    """The statements of a script (``;`` at a line's end), comments left out.

    >>> statements("-- a\\nCREATE TABLE t (x INT);\\nSELECT 1;\\n")
    ['CREATE TABLE t (x INT)', 'SELECT 1']
    """
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in re.split(r";\s*$", "\n".join(lines), flags=re.M) if s.strip()]


def schema_ddl(url: str) -> str:
    """The whole DDL as one script (``conveyor migrate-schema --sql``), for the
    database the URL names: the statements the backend runs."""
    target = parse_mariadb_url(url)
    body = [f"{s};" for s in statements(read_packaged("schema.sql"))]
    return (
        "\n".join(
            [
                f"CREATE DATABASE IF NOT EXISTS {target.database} "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;",
                f"USE {target.database};",
                *body,
                "CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL) ENGINE = InnoDB;",
                f"INSERT INTO schema_version (version) VALUES ({SCHEMA_VERSION});",
            ]
        )
        + "\n"
    )


class Executor:
    """A PyMySQL connection as the engine's Executor: ``execute`` hands back a fresh
    cursor (rows to fetch, ``rowcount``), so two results can be read in any order."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
        cur = self.conn.cursor()
        # No parameters: no %-formatting either (a literal % stays as it is).
        cur.execute(query, params if params else None)
        return cur

    def executemany(self, query: str, params: Sequence[Any]) -> Any:
        cur = self.conn.cursor()
        if params:
            cur.executemany(query, params)
        return cur


#: PyMySQL's connection class with one TLS context per process (made on first use).
_connection_class: Any = None


def _connection() -> Any:
    """PyMySQL's ``Connection``, but whose TLS context for the preferred mode (TLS when
    the server offers it, no certificate checked: what PyMySQL >= 2 does when given no
    ``ssl_*`` option) is made once per process and shared. PyMySQL makes a new one per
    connection, loading the system's CA store each time: 60 ms of a 70 ms connect here,
    paid by every CLI command, worker thread and test."""
    global _connection_class
    if _connection_class is None:
        import pymysql

        shared: list[Any] = []

        class Connection(pymysql.connections.Connection):  # type: ignore[misc]
            def _create_ssl_ctx(self, sslp: Any) -> Any:
                if sslp != {}:  # explicit options: not the shared default
                    return super()._create_ssl_ctx(sslp)
                if not shared:  # a race makes two; both are right, one is kept
                    shared.append(super()._create_ssl_ctx(sslp))
                return shared[0]

        _connection_class = Connection
    return _connection_class


def connect(target: MariaDBTarget, database: bool = True) -> Any:
    """A new connection (BackendUnavailable when the server cannot be reached)."""
    import pymysql
    from pymysql.constants import CLIENT

    try:
        conn = _connection()(
            host=target.host,
            port=target.port,
            user=target.user,
            password=target.password,
            database=target.database if database else None,
            charset="utf8mb4",
            autocommit=False,
            client_flag=CLIENT.FOUND_ROWS,
            init_command=_SESSION,
            connect_timeout=10,
        )
    except pymysql.err.OperationalError as exc:
        if exc.args and exc.args[0] == 1049:  # unknown database
            raise
        raise BackendUnavailable(f"cannot connect to {target.safe_url}: {exc}") from exc
    conn.cursor().execute(_ISOLATION)
    return conn


def migrate(target: MariaDBTarget) -> None:
    """Create the database and its tables when missing (under GET_LOCK, so two workers
    starting at once do not race); idempotent."""
    import pymysql

    try:
        conn = connect(target)
    except pymysql.err.OperationalError:  # the database itself is missing: create it
        bare = connect(target, database=False)
        try:
            bare.cursor().execute(
                f"CREATE DATABASE IF NOT EXISTS {target.database} "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            )
        finally:
            bare.close()
        conn = connect(target)
    try:
        ex = Executor(conn)
        lock = _MIGRATION_LOCK.format(database=target.database)
        ex.execute("SELECT GET_LOCK(%s, 60)", (lock,))
        try:
            ex.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL) ENGINE = InnoDB"
            )
            row = ex.execute("SELECT MAX(version) FROM schema_version").fetchone()
            if row[0] is None or int(row[0]) < SCHEMA_VERSION:
                # DDL commits implicitly on MariaDB: each statement is idempotent instead.
                for statement in statements(read_packaged("schema.sql")):
                    ex.execute(statement)
                _add_missing_columns(ex)
                _add_missing_indexes(ex)
                ex.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,))
                conn.commit()
        finally:
            ex.execute("SELECT RELEASE_LOCK(%s)", (lock,))
    finally:
        conn.close()


def _add_missing_columns(ex: Any) -> None:
    """Add the :data:`ADDED_COLUMNS` a store made by an older schema.sql lacks (one
    ALTER per table: InnoDB may rebuild the table for each)."""
    missing: dict[str, list[str]] = {}
    for table, column, definition in ADDED_COLUMNS:
        found = ex.execute(
            "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
            "AND TABLE_NAME = %s AND COLUMN_NAME = %s",
            (table, column),
        ).fetchone()
        if found is None:
            missing.setdefault(table, []).append(f"ADD COLUMN {column} {definition}")
    for table, additions in missing.items():
        ex.execute(f"ALTER TABLE {table} {', '.join(additions)}")


def _add_missing_indexes(ex: Any) -> None:
    """Add the :data:`ADDED_INDEXES` a store made by an older schema.sql lacks."""
    for table, index, columns in ADDED_INDEXES:
        found = ex.execute(
            "SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
            "AND TABLE_NAME = %s AND INDEX_NAME = %s",
            (table, index),
        ).fetchone()
        if found is None:
            ex.execute(f"CREATE INDEX {index} ON {table} ({columns})")


def require_existing_store(url: str) -> None:
    """Raise StoreNotFound unless ``url``'s database holds conveyor's tables (one
    connection, one read, nothing created)."""
    import pymysql

    target = parse_mariadb_url(url)
    try:
        conn = connect(target, database=False)
    except pymysql.err.OperationalError as exc:
        raise BackendUnavailable(f"cannot connect to {target.safe_url}: {exc}") from exc
    try:
        found = Executor(conn).execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name = 'jobs'",
            (target.database,),
        )
        if found.fetchone() is None:
            raise StoreNotFound(
                f"no conveyor store in database {target.database!r} at {target.safe_url}"
            )
    finally:
        conn.close()
