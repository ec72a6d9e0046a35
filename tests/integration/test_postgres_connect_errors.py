"""A PostgreSQL store that cannot be reached is one line, from every command and from
Python, as Redis's is (issue 21): a database that does not exist, a role that does not
exist, a server that is down, a role that may not create the schema.

Each case against a cluster these tests start and stop themselves (never a server on a
standard port). The CLI runs as a subprocess through a pipe: exactly one ``Error:`` line
on stderr, exit status 1 (runtime: the command line was fine), as for Redis. From Python,
the first enqueue raises :class:`conveyor.BackendUnavailable` saying what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import conveyor
from tests.integration.cli_run import assert_one_error, write_project
from tests.integration.cli_run import conveyor as run_cli
from tests.support.postgres_server import PostgresServer
from tests.support.redis_server import free_port

#: Every kind of command that opens the store: read-only, writing, the worker.
COMMANDS = [
    ["status"],
    ["jobs"],
    ["queues"],
    ["migrate-schema"],
    ["dashboard", "--port", str(free_port())],
    ["enqueue", "tasks.hello", "--app", "tasks:app", "--args", '["x"]'],
    ["worker", "tasks:app", "--burst"],
]


CASES = ["database", "role", "password", "no-password", "down", "privilege"]


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """This module's own cluster: a role that may log in but create nothing, and one that
    must give a password (the rest of the cluster trusts loopback)."""
    cluster = PostgresServer().init()
    hba = cluster.data / "pg_hba.conf"  # the first matching line wins: put ours first
    hba.write_text(f"host all carol 127.0.0.1/32 scram-sha-256\n{hba.read_text()}")
    cluster.start()
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute("CREATE ROLE carol LOGIN PASSWORD 'right'")
        conn.execute("CREATE ROLE visitor LOGIN")
        conn.execute("REVOKE CREATE ON DATABASE postgres FROM PUBLIC")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    yield cluster
    cluster.stop("immediate")
    cluster.remove()


@pytest.fixture(scope="module")
def stopped() -> Iterator[str]:
    """The URL of a cluster that was started and stopped: nothing listens on its port."""
    cluster = PostgresServer().init().start()
    cluster.stop("immediate")
    yield cluster.url
    cluster.remove()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path)


def _cases(server: PostgresServer, stopped: str) -> dict[str, tuple[str, list[str]]]:
    """case -> (URL, fragments of the one line)."""
    port = server.port
    return {
        "database": (
            server.url_for("nosuchdb"),
            ["database 'nosuchdb' does not exist", "createdb nosuchdb"],
        ),
        "role": (
            f"postgresql://nobody@127.0.0.1:{port}/postgres",
            ["role 'nobody' does not exist", "CREATE ROLE nobody LOGIN"],
        ),
        "password": (
            f"postgresql://carol:wrong@127.0.0.1:{port}/postgres",
            ["password authentication failed", "postgresql://USER:PASSWORD@host/db"],
        ),
        "no-password": (
            f"postgresql://carol@127.0.0.1:{port}/postgres",
            ["password authentication failed", "no password supplied"],
        ),
        "down": (stopped, ["is unavailable", "Connection refused", "is the server running?"]),
        "privilege": (
            f"postgresql://visitor@127.0.0.1:{port}/postgres",
            ["cannot create the schema 'conveyor'", "migrate-schema --sql"],
        ),
    }


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_says_it_in_one_line(
    project: Path, server: PostgresServer, stopped: str, case: str, command: list[str]
) -> None:
    url, fragments = _cases(server, stopped)[case]
    if case == "privilege" and command[0] in ("status", "jobs", "queues", "dashboard"):
        # Read-only commands create nothing: for them the schema is simply not there.
        fragments = ["no conveyor schema 'conveyor'", "--url"]
    proc = run_cli(*command, "--url", url, cwd=project)
    line = assert_one_error(proc, 1, *fragments)
    assert "Traceback" not in proc.stderr and "psycopg" not in line, line
    assert "wrong" not in line, line  # a password is never shown
    assert "cannot join thread" not in proc.stderr, line  # the cause, not the cleanup


@pytest.mark.parametrize("case", CASES)
def test_enqueue_from_python_raises_backend_unavailable(
    server: PostgresServer, stopped: str, case: str
) -> None:
    url, fragments = _cases(server, stopped)[case]
    app = conveyor.App(url)

    @app.task
    def hello(name: str) -> str:
        return f"hello {name}"

    with pytest.raises(conveyor.BackendUnavailable) as caught:
        hello.enqueue("x")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("PostgreSQL at "), message
    for fragment in fragments:
        if fragment != "is the server running?":  # the CLI's hint, not the error's
            assert fragment in message, (fragment, message)
    assert isinstance(caught.value.__cause__, psycopg.Error)  # the driver's error, kept
    app.close()


def test_the_same_server_works_once_the_database_exists(
    project: Path, server: PostgresServer
) -> None:
    url = server.url_for("shop")
    assert_one_error(run_cli("status", "--url", url, cwd=project), 1, "createdb shop")
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE shop")
    assert (
        run_cli(
            "enqueue",
            "tasks.hello",
            "--app",
            "tasks:app",
            "--args",
            '["x"]',
            "--url",
            url,
            cwd=project,
        ).returncode
        == 0
    )
    status = run_cli("status", "--url", url, cwd=project)
    assert status.returncode == 0, status.stderr
