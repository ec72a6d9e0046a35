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
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.redis_server import free_port

#: Where Debian puts the server binaries when they are not on PATH.
_DEBIAN_BIN = Path("/usr/lib/postgresql")
STARTUP_TIMEOUT = 30


def require_binary(name: str) -> str:
    """Path of PostgreSQL's ``name``; skip (locally) or fail (``CI=true``) when missing."""
    found = shutil.which(name)
    if found is None and _DEBIAN_BIN.is_dir():
        versions = sorted(_DEBIAN_BIN.iterdir(), reverse=True)
        found = next((str(v / "bin" / name) for v in versions if (v / "bin" / name).exists()), None)
    if found is None:
        reason = f"{name} not found (install PostgreSQL >= 13, Debian: postgresql)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class PostgresServer:
    """One throwaway cluster; ``restart()`` keeps its port and data."""

    def __init__(self, listen: Sequence[str] = (), trust: Sequence[str] = ()) -> None:
        #: Addresses served besides loopback, and the networks (CIDR) let in without a
        #: password from them (the veth ends and subnet of tests/support/netns.py).
        self.listen = ("127.0.0.1", *listen)
        self.trust = tuple(trust)
        self.initdb = require_binary("initdb")
        self.pg_ctl = require_binary("pg_ctl")
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="conveyor-pg-"))
        self.data = self.directory / "data"
        self.as_root = os.geteuid() == 0
        if self.as_root:
            user = pwd.getpwnam("postgres")
            os.chown(self.directory, user.pw_uid, user.pw_gid)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url_at(self, address: str) -> str:
        """The URL through one of the ``listen`` addresses (for a client in a namespace)."""
        return f"postgresql://postgres@{address}:{self.port}/postgres"

    def _run(self, args: Sequence[str], timeout: float = STARTUP_TIMEOUT) -> None:
        command = ["runuser", "-u", "postgres", "--", *args] if self.as_root else list(args)
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            log = self.directory / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({done.returncode}):\n{done.stderr}\n{tail}")

    def init(self) -> PostgresServer:
        self._run([self.initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N"])
        # Speed over durability: a test cluster is thrown away (never for production).
        settings = {
            "port": str(self.port),
            "listen_addresses": f"'{','.join(self.listen)}'",
            "unix_socket_directories": f"'{self.directory}'",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "300",
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())
        with (self.data / "pg_hba.conf").open("a") as hba:
            hba.writelines(f"host all all {network} trust\n" for network in self.trust)
        return self

    def start(self) -> PostgresServer:
        log = self.directory / "server.log"
        for _ in range(5):
            try:
                self._run([self.pg_ctl, "-D", str(self.data), "-l", str(log), "-w", "start"])
                return self
            except RuntimeError as exc:
                # The free port was taken between the check and the bind (parallel runs
                # share the machine): another port; a later "port =" line wins.
                if "could not create any TCP/IP sockets" not in str(exc):
                    raise
                self.port = free_port()
                with (self.data / "postgresql.conf").open("a") as conf:
                    conf.write(f"port = {self.port}\n")
        raise RuntimeError(f"no free port for PostgreSQL in {self.directory}")

    def stop(self, mode: str = "fast") -> None:
        self._run([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"])

    def restart(self) -> None:
        self.stop()
        self.start()

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


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
