"""A PostgreSQL cluster owned by the tests: ``initdb`` + ``pg_ctl`` on a free loopback
port in a temp dir, stopped at the end of the session.

Never touches a server it did not start: each test gets its own schema
(``?schema=t_<uuid hex>``), dropped after it. As root the cluster runs as the
``postgres`` user (PostgreSQL refuses to run as root), in a directory it owns outside
pytest's root-only tmp dirs. ``$CONVEYOR_TEST_POSTGRES_URL`` points the suite at an
external server instead (schemas keep tests apart there too). Without the binaries the
tests skip with a reason locally and fail when ``CI=true`` (``require_binary``).

Example (in a test)::

    def test_connect(postgres_url: str) -> None:
        assert psycopg.connect(postgres_url).execute("SELECT 1").fetchone() == (1,)
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from bench.postgres_cluster import PostgresCluster, find_binary


def require_binary(name: str) -> str:
    """Path of PostgreSQL's ``name``; skip (locally) or fail (``CI=true``) when missing."""
    found = find_binary(name)
    if found is None:
        reason = f"{name} not found (install PostgreSQL >= 13, Debian: postgresql)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class PostgresServer(PostgresCluster):
    """The tests' cluster (bench/postgres_cluster.py, shared with the benchmark): the
    binaries are looked up with the skip-or-fail rule first."""

    def __init__(self, listen: Sequence[str] = (), trust: Sequence[str] = ()) -> None:
        super().__init__(
            require_binary("initdb"), require_binary("pg_ctl"), listen=listen, trust=trust
        )


def with_schema(url: str, schema: str) -> str:
    """``url`` with conveyor's ``schema`` option added."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def drop_schema(url: str, schema: str) -> None:
    """Drop this test's schema (and only it): matters on a shared external server."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    except psycopg.OperationalError:
        pass  # a test that stopped its server has nothing left to clean


def isolated_url(request: pytest.FixtureRequest) -> str:
    """A URL on the session's PostgreSQL with a schema no other test sees: a fresh name,
    or a schema an earlier test left and :func:`_recycle` emptied (dropped instead when
    it could not prove it as good as new)."""
    base = request.getfixturevalue("postgres_url")
    pool = _pools.setdefault(base, [])
    schema = pool.pop() if pool else f"t_{uuid.uuid4().hex}"
    request.addfinalizer(lambda: _recycle(base, schema))
    return with_schema(base, schema)


#: Emptied schemas of each server, the next tests' (conveyor's migration of a new schema
#: on first open, six versions of DDL, cost more than most PostgreSQL tests themselves).
_pools: dict[str, list[str]] = {}
#: What conveyor's migration makes, read from the first schema it migrated here.
_fresh: dict[str, str] = {}
_FINGERPRINT = (  # pg_catalog, not information_schema's views: ten times quicker
    "SELECT c.relname, c.relkind, a.attname, a.attnum, format_type(a.atttypid, a.atttypmod),"
    " a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attcollation "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
    "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "WHERE n.nspname = %(s)s ORDER BY 1, 4",
    "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index i "
    "JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = %(s)s ORDER BY 1",
    "SELECT conname, pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_namespace n "
    "ON n.oid = c.connamespace WHERE n.nspname = %(s)s ORDER BY 1",
    "SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c "
    "ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = %(s)s AND NOT t.tgisinternal ORDER BY 1",
    "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n "
    "ON n.oid = p.pronamespace WHERE n.nspname = %(s)s ORDER BY 1",
)


#: The fingerprint of a schema never made.
_NOTHING = repr([[]] * len(_FINGERPRINT))


def _fingerprint(conn: Any, schema: str) -> str:
    """The schema's tables, columns, indexes, constraints, triggers, functions and
    schema_version rows, its own name written as ``S`` (it is in index definitions)."""
    prints = [conn.execute(sql, {"s": schema}).fetchall() for sql in _FINGERPRINT]
    if prints[0]:
        prints.append(conn.execute(f"SELECT version FROM {schema}.schema_version").fetchall())
    return repr(prints).replace(schema, "S")


def _reference(base: str, conn: Any) -> str:
    """The fingerprint of a schema conveyor's own migration just made (once per server;
    that schema then joins the pool)."""
    if base not in _fresh:
        from conveyor.backends.postgres.connection import migrate

        schema = f"t_{uuid.uuid4().hex}"
        migrate(conn, schema)
        _fresh[base] = _fingerprint(conn, schema)
        _pools.setdefault(base, []).append(schema)
    return _fresh[base]


def _others_connected(conn: Any) -> bool:
    """Whether a client session besides ``conn`` is on the server (a test's app or worker
    not closed yet): only then could something still write into a schema handed on. A
    closed session leaves pg_stat_activity a moment after its close: asked a few times."""
    for _ in range(10):
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid()"
        ).fetchone()
        if row[0] == 0:
            return False
        time.sleep(0.02)
    return True


def _recycle(base: str, schema: str) -> None:
    """Empty ``schema`` for the next test when it is exactly what conveyor's migration
    makes (or was never made) and no other session is open; drop it otherwise (a test
    that altered it, turned a search index on, or left a worker connected). Emptied:
    every table but schema_version truncated, identities restarted at 1."""
    import psycopg

    try:
        conn = psycopg.connect(base, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError:
        return  # a test that stopped its server has nothing left to clean
    try:
        with conn:
            if _others_connected(conn):
                raise LookupError(schema)
            found = _fingerprint(conn, schema)
            if found != _NOTHING:  # made: must be as new
                if found != _reference(base, conn):
                    raise LookupError(schema)
                tables = conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s "
                    "AND tablename <> 'schema_version'",
                    (schema,),
                ).fetchall()
                # DELETE, not TRUNCATE (new files for every table and index: 0.7 s);
                # triggers off (the search index's would note the deletes).
                conn.execute("SET lock_timeout = '5s'")
                conn.execute("SET session_replication_role = replica")
                for (table,) in tables:
                    conn.execute(f"DELETE FROM {schema}.{table}")
                used = conn.execute(
                    "SELECT c.relname FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
                    "AND pg_sequence_last_value(s.seqrelid) IS NOT NULL",
                    (schema,),
                ).fetchall()
                for (sequence,) in used:  # identities back at 1, as in a new schema
                    conn.execute(f"ALTER SEQUENCE {schema}.{sequence} RESTART")
            _pools.setdefault(base, []).append(schema)
    except (LookupError, psycopg.Error):
        drop_schema(base, schema)


def database_url(base: str, database: str) -> str:
    """``base`` (a server's URL) pointed at ``database`` instead, its query kept."""
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(base)._replace(path=f"/{database}"))


def drop_database(base: str, database: str) -> None:
    """Drop ``database`` (and only it), its sessions ended first (a worker SIGKILLed by a
    fault test can leave one behind for a moment)."""
    import psycopg

    try:
        with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    except psycopg.OperationalError:
        pass  # a test that stopped its server has nothing left to clean


def isolated_database_url(request: pytest.FixtureRequest) -> str:
    """A URL on a fresh database of the session's PostgreSQL, dropped after the test.

    For tests that must share nothing with others (the fault tests): NOTIFY is per
    database, and the drop (WITH FORCE) ends whatever sessions a killed worker left."""
    import psycopg

    base = request.getfixturevalue("postgres_url")
    database = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    request.addfinalizer(lambda: drop_database(base, database))
    return database_url(base, database)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer | None]:
    """The session's own cluster (None when ``$CONVEYOR_TEST_POSTGRES_URL`` is set).
    Lazy: started only when a test asks for PostgreSQL."""
    if os.environ.get("CONVEYOR_TEST_POSTGRES_URL"):
        yield None
        return
    server = PostgresServer().init().start()
    yield server
    server.stop("immediate")
    server.remove()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer | None) -> str:
    """Base URL of the session's PostgreSQL (no schema: add one per test)."""
    if postgres_server is None:
        return os.environ["CONVEYOR_TEST_POSTGRES_URL"]
    return postgres_server.url
