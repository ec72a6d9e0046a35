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
import uuid
from collections.abc import Iterator, Sequence

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
    """A URL on the session's PostgreSQL with a fresh schema, dropped after the test."""
    base = request.getfixturevalue("postgres_url")
    schema = f"t_{uuid.uuid4().hex}"
    request.addfinalizer(lambda: drop_schema(base, schema))
    return with_schema(base, schema)


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
