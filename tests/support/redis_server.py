"""A redis-server owned by the tests: started on a free loopback port in a tmp dir.

Never touches a server it did not start (no FLUSHALL anywhere): isolation comes from a
unique key prefix per test. ``$CONVEYOR_TEST_REDIS_URL`` points the suite at an external
server instead (prefixes keep tests apart there too). Without the binary the tests skip
with a reason locally and fail when ``CI=true``, so CI never passes by skipping.

Example (in a test)::

    def test_ping(redis_url: str) -> None:
        assert redis.Redis.from_url(redis_url).ping()
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

STARTUP_TIMEOUT = 10.0


def require_binary(name: str = "redis-server") -> str:
    """Path of ``name``; skip (locally) or fail (``CI=true``) when it is missing."""
    found = shutil.which(name)
    if found is None:
        reason = f"{name} not found on PATH (install Redis >= 7 to run the Redis tests)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(bus: bool = False) -> int:
    """A free loopback port; with ``bus``, port + 10000 is free too (Cluster bus)."""
    for _ in range(200):
        port = random.randint(20000, 54000)
        if _port_free(port) and (not bus or _port_free(port + 10000)):
            return port
    raise RuntimeError("no free port found")


def ping(port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process; ``restart()`` keeps its port and data directory."""

    def __init__(
        self,
        directory: Path,
        *,
        aof: bool = False,
        cluster: bool = False,
        port: int | None = None,
        bind: Sequence[str] = (),
    ) -> None:
        self.binary = require_binary()
        #: Addresses served besides loopback (the veth ends of tests/support/netns.py).
        self.bind = ("127.0.0.1", *bind)
        self.directory = directory
        self.aof = aof
        self.cluster = cluster
        self.port = port or free_port(bus=cluster)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def url_at(self, address: str) -> str:
        """The URL through one of the ``bind`` addresses (for a client in a namespace)."""
        return f"redis://{address}:{self.port}/0"

    def args(self) -> list[str]:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            " ".join(self.bind),
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "yes" if self.aof else "no",
            "--daemonize",
            "no",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        if len(self.bind) > 1:  # clients beyond loopback, without a password: a test's own
            args += ["--protected-mode", "no"]
        if self.cluster:
            args += [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
            ]
        return args

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            self.args(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not ping(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = self.directory / "redis.log"
                tail = log.read_text()[-2000:] if log.exists() else ""
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not start:\n{tail}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def kill(self) -> None:
        """SIGKILL: a crash, not a shutdown (nothing saved beyond what AOF already has)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def redis_cluster(directory: Path, nodes: int = 3) -> Iterator[Sequence[RedisServer]]:
    """A Redis Cluster of ``nodes`` primaries on loopback, torn down on exit."""
    cli = require_binary("redis-cli")
    servers = [RedisServer(directory / f"node{i}", cluster=True) for i in range(nodes)]
    try:
        for s in servers:
            s.start()
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{s.port}" for s in servers),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        deadline = time.monotonic() + 20
        while True:
            info = subprocess.run(
                [cli, "-p", str(servers[0].port), "cluster", "info"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
            if "cluster_state:ok" in info:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster did not become ready:\n{info}")
            time.sleep(0.1)
        yield servers
    finally:
        for s in servers:
            s.stop()


def with_prefix(url: str, prefix: str) -> str:
    """``url`` with conveyor's ``prefix`` option added."""
    return f"{url}{'&' if '?' in url else '?'}prefix={prefix}"


def unique_prefix() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


def delete_prefix(url: str, prefix: str) -> None:
    """Delete this test's keys (and only them): matters on a shared external server."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match="{" + prefix + "}:*", count=1000))
        for i in range(0, len(keys), 500):
            client.delete(*keys[i : i + 500])
    except redis.exceptions.ConnectionError:
        pass  # a test that stopped its server has nothing left to clean
    finally:
        client.close()


def isolated_url(request: pytest.FixtureRequest) -> str:
    """A URL on the session's Redis with a fresh prefix, cleaned up after the test."""
    base = request.getfixturevalue("redis_url")
    prefix = unique_prefix()
    request.addfinalizer(lambda: delete_prefix(base, prefix))
    return with_prefix(base, prefix)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer | None]:
    """The session's own redis-server (None when ``$CONVEYOR_TEST_REDIS_URL`` is set).

    Lazy: started only when a test asks for Redis. Tests that restart it must use
    ``restartable_redis`` instead, so other tests never see it go down.
    """
    if os.environ.get("CONVEYOR_TEST_REDIS_URL"):
        yield None
        return
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer | None) -> str:
    """Base URL of the session's Redis (no prefix: add one per test with ``with_prefix``)."""
    if redis_server is None:
        return os.environ["CONVEYOR_TEST_REDIS_URL"]
    return redis_server.url


@pytest.fixture
def restartable_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test alone, which it may stop, kill and restart."""
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()
