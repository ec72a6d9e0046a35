"""A MariaDB server owned by the tests: ``mariadb-install-db`` + ``mariadbd`` on a free
loopback port with a temp datadir, stopped at the end of the session.

Never touches a server it did not start: each test gets its own database
(``/t_<uuid hex>``), dropped after it. As root the server runs with ``--user=root``
(mariadbd refuses root otherwise). ``$CONVEYOR_TEST_MARIADB_URL`` points the suite at an
external server instead (a ``mariadb://user:pass@host:port/`` URL whose user may create
databases). Without the binaries the tests skip with a reason locally and fail when
``CI=true``.

Example (in a test)::

    def test_connect(mariadb_url: str) -> None:
        assert mariadb_url.startswith("mariadb://")
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

#: Who the tests connect as: created by the bootstrap with every privilege.
USER, PASSWORD = "conveyor", "conveyor"


def require_binary(name: str) -> str:
    """Path of MariaDB's ``name``; skip (locally) or fail (``CI=true``) when missing."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if found is None:
        reason = f"{name} not found (install MariaDB >= 10.6, Debian: mariadb-server)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MariaDBServer:
    """One mariadbd on 127.0.0.1:``port``, its datadir and socket under ``root``."""

    def __init__(self) -> None:
        self.install_db = require_binary("mariadb-install-db")
        self.mariadbd = require_binary("mariadbd")
        self.root = Path(tempfile.mkdtemp(prefix="conveyor-mariadb-"))
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"mariadb://{USER}:{PASSWORD}@127.0.0.1:{self.port}/"

    def _user_args(self) -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    def start(self) -> MariaDBServer:
        data = self.root / "data"
        # The bootstrap's grant: a password user over TCP (root is unix_socket-only).
        init = self.root / "init.sql"
        init.write_text(
            f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';\n"
            f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%' WITH GRANT OPTION;\n"
        )
        done = subprocess.run(
            [
                self.install_db,
                "--no-defaults",
                f"--datadir={data}",
                # Its own temp dir: bootstraps sharing /tmp at once failed ("Error on
                # delete of '/tmp/#sql-temptable-...'").
                f"--tmpdir={self.root}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
                *self._user_args(),
            ],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if done.returncode != 0:  # say why
            raise RuntimeError(
                f"mariadb-install-db exited {done.returncode}: "
                + done.stderr.decode(errors="replace")[-2000:]
            )
        log = open(self.root / "server.log", "wb")  # noqa: SIM115 - the server's lifetime
        self.proc = subprocess.Popen(
            [
                self.mariadbd,
                "--no-defaults",
                f"--datadir={data}",
                f"--socket={self.root / 'mysqld.sock'}",
                f"--pid-file={self.root / 'mysqld.pid'}",
                "--bind-address=127.0.0.1",
                f"--port={self.port}",
                f"--tmpdir={self.root}",
                f"--init-file={init}",
                "--skip-log-bin",
                # Small and quick: a test server, its data thrown away at the end.
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=16M",
                "--innodb-flush-log-at-trx-commit=2",
                "--max-connections=500",
                *self._user_args(),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 60.0) -> None:
        import pymysql

        deadline = time.monotonic() + timeout
        while True:
            try:
                pymysql.connect(
                    host="127.0.0.1", port=self.port, user=USER, password=PASSWORD
                ).close()
                return
            except pymysql.err.OperationalError:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(
                        "mariadbd exited: " + (self.root / "server.log").read_text()[-2000:]
                    ) from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _connect(base: str) -> object:
    import pymysql

    parts = urlsplit(base)
    return pymysql.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=parts.username or "",
        password=parts.password or "",
        autocommit=True,
        connect_timeout=10,
    )


def execute(base: str, statement: str) -> None:
    """Run one statement on the server ``base`` names (no database), autocommitted."""
    _execute(base, statement)


def drop_database(base: str, database: str) -> None:
    """Drop ``database`` if it is there; nothing when the server is gone already."""
    import pymysql

    with contextlib.suppress(pymysql.err.OperationalError):
        _execute(base, f"DROP DATABASE IF EXISTS {database}")


def _execute(base: str, statement: str) -> None:
    conn = _connect(base)
    try:
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute(statement)
    finally:
        conn.close()  # type: ignore[attr-defined]


def database_url(base: str, database: str) -> str:
    """``base`` (a server's URL) pointed at ``database``."""
    return urlunsplit(urlsplit(base)._replace(path=f"/{database}"))


#: The server of a run outside pytest (``python -m tests.faults --long``), started once.
_run_server: list[MariaDBServer] = []


def run_database(database: str) -> str:
    """A URL on a new database of this process's own server (started on first use,
    stopped at exit): for the long fault runner, which has no pytest fixtures."""
    if not _run_server:
        _run_server.append(MariaDBServer().start())
        atexit.register(_run_server[0].stop)
    base = _run_server[0].url
    _execute(base, f"CREATE DATABASE {database} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    return database_url(base, database)


def isolated_url(request: pytest.FixtureRequest) -> str:
    """A URL on a database of the session's MariaDB that no other test sees: a fresh one,
    or one an earlier test left and :func:`_recycle` emptied (dropped instead when it
    could not prove the database as good as new)."""
    base = request.getfixturevalue("mariadb_url")
    pool = _pools.setdefault(base, [])
    if pool:
        database = pool.pop()
    else:
        database = f"t_{uuid.uuid4().hex}"
        _execute(base, f"CREATE DATABASE {database} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    request.addfinalizer(lambda: _recycle(base, database))
    return database_url(base, database)


#: Emptied databases of each server, the next tests' (a per-test database's CREATE
#: DATABASE, the 18 tables' CREATE TABLE on first open and the DROP after cost over a
#: second a test on a loaded box; InnoDB DDL, not the test, was most of a MariaDB test).
_pools: dict[str, list[str]] = {}
#: What conveyor's migration makes, read from the first database it migrated here.
_fresh: dict[str, tuple[object, ...]] = {}
_FINGERPRINT = (
    "SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE, "
    "COLUMN_DEFAULT, EXTRA, COLLATION_NAME FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = %s ORDER BY 1, 2",
    "SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, SUB_PART "
    "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s ORDER BY 1, 2, 3",
    "SELECT TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_COLLATION FROM information_schema.TABLES "
    "WHERE TABLE_SCHEMA = %s ORDER BY 1",
    "SELECT TRIGGER_NAME, ACTION_STATEMENT FROM information_schema.TRIGGERS "
    "WHERE TRIGGER_SCHEMA = %s ORDER BY 1",
    "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s",
    "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = %s",
    "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = %s AND ID <> CONNECTION_ID()",
)


def _reference(base: str, cur: Any) -> tuple[object, ...]:
    """The fingerprint of a database conveyor's own migration just made (computed once
    per server; that database then joins the pool)."""
    if base not in _fresh:
        from conveyor.backends.mariadb.connection import migrate
        from conveyor.backends.mariadb.url import parse_mariadb_url

        database = f"t_{uuid.uuid4().hex}"
        migrate(parse_mariadb_url(database_url(base, database)))  # creates it too
        prints = []
        for sql in _FINGERPRINT[:-1]:
            cur.execute(sql, (database,))
            prints.append(tuple(cur.fetchall()))
        cur.execute(f"SELECT version FROM {database}.schema_version")
        _fresh[base] = (*prints, tuple(cur.fetchall()))
        _pools.setdefault(base, []).append(database)
    return _fresh[base]


def _recycle(base: str, database: str) -> None:
    """Empty ``database`` for the next test when its tables are exactly what conveyor's
    migration made (or it has none) and nobody else is connected; drop it otherwise (a
    test that altered the schema, or a worker still connected). The check is strict so
    that a reused database is indistinguishable from a new one to conveyor: same tables,
    columns, indexes, one schema_version row, no rows, AUTO_INCREMENT back at 1."""
    import pymysql

    try:
        conn = _connect(base)
    except pymysql.err.OperationalError:
        return  # a test that stopped its server has nothing left to clean
    try:
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            prints = []
            for sql in _FINGERPRINT:
                cur.execute(sql, (database,))
                prints.append(tuple(cur.fetchall()))
            tables = [row[0] for row in prints[2]]
            if prints[-1]:  # still in use: only a DROP (which waits for it) is safe
                raise LookupError(database)
            if tables:
                cur.execute(f"SELECT version FROM {database}.schema_version")
                fingerprint = (*prints[:-1], tuple(cur.fetchall()))
                if fingerprint != _reference(base, cur):
                    raise LookupError(database)
                cur.execute("SET SESSION innodb_lock_wait_timeout = 5")
                for table in tables:
                    if table != "schema_version":
                        cur.execute(f"DELETE FROM {database}.`{table}`")
                # Only where a row was written (an ALTER costs ~50 ms; most tests write
                # no log line, event or action).
                cur.execute(
                    "SELECT TABLE_NAME FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = %s AND AUTO_INCREMENT > 1",
                    (database,),
                )
                for (table,) in cur.fetchall():
                    cur.execute(f"ALTER TABLE {database}.`{table}` AUTO_INCREMENT = 1")
        _pools.setdefault(base, []).append(database)
    except (LookupError, pymysql.err.Error):
        drop_database(base, database)
    finally:
        conn.close()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer | None]:
    """The session's own server (None when ``$CONVEYOR_TEST_MARIADB_URL`` is set).
    Lazy: started only when a test asks for MariaDB."""
    if os.environ.get("CONVEYOR_TEST_MARIADB_URL"):
        yield None
        return
    server = MariaDBServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mariadb_url(mariadb_server: MariaDBServer | None) -> str:
    """Base URL of the session's MariaDB (no database: add one per test)."""
    if mariadb_server is None:
        return os.environ["CONVEYOR_TEST_MARIADB_URL"]
    return mariadb_server.url
