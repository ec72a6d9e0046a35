"""A Redis with a password, started by the test (``requirepass``): a wrong password is
"authentication failed" on the backend and in a running worker, never an outage to wait
out; and a password given as ``?password=`` is hidden in the dashboard header, the CLI's
titles and JSON, and the worker's start line."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import conveyor
from conveyor.errors import BackendUnavailable
from tests.integration.cli_run import CONVEYOR, in_pty
from tests.integration.cli_run import conveyor as run_conveyor
from tests.integration.conftest import ROOT, wait_for, worker_env
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.redis

PASSWORD = "pw-7QxZ-right"
WRONG = "pw-3Kd9-wrong"
TASKS = "tests.integration.log_tasks"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test alone, then given a password (as an operator would)."""
    started = RedisServer(tmp_path / "redis").start()
    client = redis.Redis(port=started.port)
    client.config_set("requirepass", PASSWORD)
    client.close()
    yield started
    started.stop()


def in_terminal(*command: str) -> str:
    """What ``command`` writes to a pseudo terminal (120 columns), as a user sees it."""
    out, _ = in_pty(command, columns=120)
    return out


def url(server: RedisServer, password: str, form: str = "userinfo") -> str:
    base = f"127.0.0.1:{server.port}/0"
    if form == "userinfo":
        return f"redis://:{password}@{base}"
    return f"redis://{base}?password={password}"


@pytest.mark.parametrize("form", ["userinfo", "query"])
def test_a_wrong_password_on_the_backend_is_authentication_failed(
    server: RedisServer, form: str
) -> None:
    app = conveyor.App(url(server, WRONG, form))
    try:
        with pytest.raises(BackendUnavailable) as caught:
            app.backend.queue_stats()
    finally:
        app.close()
    message = str(caught.value)
    assert "authentication failed" in message, message
    assert "retry once it is back" not in message and "unavailable" not in message
    assert WRONG not in message


def test_a_worker_whose_password_stops_working_logs_authentication_failed(
    server: RedisServer,
) -> None:
    right = url(server, PASSWORD)
    proc = subprocess.Popen(
        [sys.executable, "-m", "conveyor.cli", "worker", f"{TASKS}:app"],
        cwd=ROOT,
        env=worker_env(right),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        stream = proc.stderr
        reader = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
        reader.start()
        wait_for(lambda: any(" ready: " in line for line in lines), 20, what="ready")
        admin = redis.Redis(port=server.port, password=PASSWORD)
        admin.config_set("requirepass", "rotated-" + PASSWORD)  # the worker's is now wrong
        admin.client_kill_filter(_type="normal", skipme=True)  # its connections reconnect
        # A worker idle in a SUBSCRIBE (wake-ups) holds a pubsub connection, which the
        # kill above leaves: end it too, or the next command may come only much later.
        admin.client_kill_filter(_type="pubsub", skipme=True)
        admin.close()
        wait_for(
            lambda: any("authentication failed" in line for line in lines),
            20,
            what="an 'authentication failed' line",
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = "".join(lines)
    auth = [line for line in lines if "authentication failed" in line]
    assert auth and not any("retry once it is back" in line for line in auth), text
    assert PASSWORD not in text


def test_a_query_password_is_hidden_in_the_dashboard_cli_and_worker(
    server: RedisServer, tmp_path: Path
) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from conveyor.web import create_app

    secret_url = url(server, PASSWORD, "query") + "&prefix=auth-test"
    app = conveyor.App(secret_url)

    @app.task(queue="aside")  # a queue the worker below leaves alone
    def noop() -> None: ...

    noop.enqueue()
    try:
        with TestClient(create_app(app), base_url="http://127.0.0.1") as client:
            page = client.get("/").text
        assert PASSWORD not in page and "password=***" in page
        assert PASSWORD not in repr(app)
    finally:
        app.close()
    for command in ("jobs", "status"):  # the titles, shown in a terminal
        shown = in_terminal(str(CONVEYOR), command, "--url", secret_url)
        assert PASSWORD not in shown and "password=***" in shown, shown
    status = run_conveyor("status", "--json", "--url", secret_url, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert PASSWORD not in status.stdout and '"url": "redis://' in status.stdout
    worker = subprocess.run(
        [sys.executable, "-m", "conveyor.cli", "worker", f"{TASKS}:app", "--burst"],
        cwd=ROOT,
        env=worker_env(secret_url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert worker.returncode == 0, worker.stderr
    assert re.search(r"url=redis://127\.0\.0\.1:\d+/0\?password=\*\*\*&prefix=", worker.stderr)
    assert PASSWORD not in worker.stderr
