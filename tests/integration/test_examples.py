"""examples/ runs end to end: the web app enqueues, a real worker runs the job, the
periodic job fires, and both processes stop cleanly on SIGTERM.

The example is copied to a fresh directory and run there as its README says (the web app
with ``python web.py``, the worker with ``conveyor worker tasks:app``), on the default
store ``conveyor.db`` in that directory.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    workdir = tmp_path / "shop"
    shutil.copytree(
        ROOT / "examples",
        workdir,
        ignore=shutil.ignore_patterns("__pycache__", "outbox", "*.db*"),
    )
    return workdir


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:  # only after a failure: the test itself stops them
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONVEYOR_", "SHOP_"))}
    env.pop("PYTHONPATH", None)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env["SHOP_SWEEP_SECONDS"] = "1"  # the periodic job's interval, to see it fire
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        pytest.fail(f"no output within {timeout} s")


def _request(url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _stop(proc: subprocess.Popen[str], name: str) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        status = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name} still running 15 s after SIGTERM")
    assert status == 0, f"{name} exited {status} after SIGTERM"


def test_web_app_enqueues_worker_runs_it_and_the_periodic_job_fires(
    shop: Path, processes: list[subprocess.Popen[str]]
) -> None:
    env = _env()
    web = subprocess.Popen(
        [sys.executable, "web.py", "--port", "0"],
        cwd=shop,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    processes.append(web)
    line = _first_line(web, timeout=15)
    assert line.startswith("shop listening on http://127.0.0.1:"), line
    base = line.split(" on ", 1)[1].strip().rstrip("/")

    # Enqueued before any worker runs: the request returns at once, the job waits.
    status, body = _request(f"{base}/orders", {"order_id": 1, "email": "ada@example.com"})
    assert status == 202, body
    job_id = body["job_id"]
    assert _request(f"{base}/jobs/{job_id}") == (200, {"id": job_id, "state": "queued"})
    assert _request(f"{base}/orders", {"email": "no order id"})[0] == 400

    worker_log = shop / "worker.log"
    with worker_log.open("w") as log:
        worker = subprocess.Popen(
            [str(BIN / "conveyor"), "worker", "tasks:app", "--queue", "mail", "--queue", "default"],
            cwd=shop,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
    processes.append(worker)

    deadline = time.monotonic() + 20
    while True:
        status, body = _request(f"{base}/jobs/{job_id}")
        if body.get("state") == "succeeded" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert body == {"id": job_id, "state": "succeeded", "result": "order-1.txt"}, (
        worker_log.read_text()
    )
    assert "To: ada@example.com" in (shop / "outbox" / "order-1.txt").read_text()

    # The periodic sweep (every second here) fires and succeeds on this worker.
    swept: list[tuple[str, str]] = []
    while time.monotonic() < deadline and not swept:
        with sqlite3.connect(shop / "conveyor.db") as conn:
            swept = conn.execute(
                "SELECT state, result FROM jobs WHERE task = 'shop.sweep_outbox'"
                " AND state = 'succeeded'"
            ).fetchall()
        time.sleep(0.2)
    assert swept, worker_log.read_text()
    assert json.loads(swept[0][1]) == 0  # the receipt is new: nothing old to remove

    _stop(worker, "the worker")
    _stop(web, "the web app")


def test_saas_tenants_example_is_fair_and_in_order(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "saas_tenants.py")],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    positions = json.loads(lines["smallshop's jobs started at positions"])
    assert max(positions) < 20  # not after bigcorp's 200
    assert lines["acme's ledger ran in order"] == "['acme:1', 'acme:2', 'acme:3']"
