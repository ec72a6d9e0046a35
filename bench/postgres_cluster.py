"""A throwaway PostgreSQL cluster: ``initdb`` + ``pg_ctl`` on a free loopback port in a
temp dir. Shared by the test suite (tests/support/postgres_server.py wraps it with the
skip-or-fail rule) and the benchmark (the PostgreSQL arms, bench/pg_bloat.py), so both
start their server the same way and neither touches a server it did not start.

As root the cluster runs as the ``postgres`` user (PostgreSQL refuses to run as root),
in a directory it owns outside root-only tmp dirs.

Example::

    cluster = PostgresCluster().init().start()
    try:
        print(cluster.url)  # postgresql://postgres@127.0.0.1:<port>/postgres
        print(cluster.settings())  # shared_buffers, fsync, ... read back from the server
    finally:
        cluster.stop("immediate")
        cluster.remove()
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

#: Where Debian puts the server binaries when they are not on PATH.
_DEBIAN_BIN = Path("/usr/lib/postgresql")
STARTUP_TIMEOUT = 30

#: Speed over durability: a test or bench cluster is thrown away (never for production).
#: Every arm of the bench runs on the same cluster, so all see the same settings.
FAST_SETTINGS: Mapping[str, str] = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
}

#: A real deployment's durability: PostgreSQL's own defaults for fsync, synchronous_commit
#: and full_page_writes (all on), so a commit returns after its WAL is on disk. The
#: bench's PostgreSQL arms run here; FAST_SETTINGS is their labelled fsync-off variant.
DURABLE_SETTINGS: Mapping[str, str] = {"max_connections": "300"}

#: Settings the bench reads back and prints with every result.
REPORTED = (
    "server_version",
    "shared_buffers",
    "work_mem",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "max_connections",
    "autovacuum",
    "autovacuum_naptime",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_cost_limit",
)


def find_binary(name: str) -> str | None:
    """Path of PostgreSQL's ``name`` (PATH first, then Debian's versioned dirs)."""
    found = shutil.which(name)
    if found is None and _DEBIAN_BIN.is_dir():
        versions = sorted(_DEBIAN_BIN.iterdir(), reverse=True)
        found = next((str(v / "bin" / name) for v in versions if (v / "bin" / name).exists()), None)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresCluster:
    """One throwaway cluster; ``restart()`` keeps its port and data."""

    def __init__(
        self,
        initdb: str | None = None,
        pg_ctl: str | None = None,
        listen: Sequence[str] = (),
        trust: Sequence[str] = (),
    ) -> None:
        #: Addresses served besides loopback, and the networks (CIDR) let in without a
        #: password from them (the partition test's veth ends: tests/support/netns.py).
        self.listen = ("127.0.0.1", *listen)
        self.trust = tuple(trust)
        initdb = initdb or find_binary("initdb")
        pg_ctl = pg_ctl or find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise FileNotFoundError("initdb/pg_ctl not found (install PostgreSQL >= 13)")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="conveyor-pg-"))
        self.data = self.directory / "data"
        self.as_root = os.geteuid() == 0
        if self.as_root:
            user = pwd.getpwnam("postgres")
            os.chown(self.directory, user.pw_uid, user.pw_gid)

    @property
    def url(self) -> str:
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

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

    def init(self, settings: Mapping[str, str] | None = None) -> PostgresCluster:
        """``initdb`` and append ``settings`` (default :data:`FAST_SETTINGS`) to the conf."""
        self._run([self.initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N"])
        conf = {
            "port": str(self.port),
            "listen_addresses": f"'{','.join(self.listen)}'",
            "unix_socket_directories": f"'{self.directory}'",
            **(FAST_SETTINGS if settings is None else settings),
        }
        with (self.data / "postgresql.conf").open("a") as f:
            f.writelines(f"{k} = {v}\n" for k, v in conf.items())
        with (self.data / "pg_hba.conf").open("a") as hba:
            hba.writelines(f"host all all {network} trust\n" for network in self.trust)
        return self

    def start(self) -> PostgresCluster:
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

    # -- used by the bench (psycopg imported lazily: the cluster itself needs none) --------
    def settings(self, names: Sequence[str] = REPORTED) -> dict[str, str]:
        """The server's settings as it reports them (``SHOW``), not as we wrote them."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return {n: str(conn.execute(f"SHOW {n}").fetchone()[0]) for n in names}  # type: ignore[index]

    def fresh_database(self, name: str) -> str:
        """Drop and create database ``name``; return its URL (a fresh store per measurement)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
        return self.url_for(name)
