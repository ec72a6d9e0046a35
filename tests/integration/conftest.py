"""Helpers to run real ``conveyor worker`` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def worker_env(url: str) -> dict[str, str]:
    env = dict(os.environ)
    env["CONVEYOR_URL"] = url
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def spawn_worker(sqlite_url: str) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []

    def spawn(*args: str, url: str | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "conveyor.cli",
                "worker",
                "tests.integration.app_tasks:app",
                *args,
            ],
            cwd=ROOT,
            env=worker_env(url or sqlite_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        return proc

    yield spawn
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def server(web: Any) -> Iterator[str]:
    """The test module's ``web`` dashboard on a real uvicorn server (its base URL)."""
    from tests.support.dashboard import served

    with served(web) as base:
        yield base
