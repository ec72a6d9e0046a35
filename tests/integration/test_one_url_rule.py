"""One store-URL rule for ``App()`` and every command, config files included (issue 21).

``--url`` > ``App(url)`` > ``$CONVEYOR_URL`` > ``url`` of ``-C`` FILE > of ./conveyor.toml
> of ./pyproject.toml ``[tool.conveyor]`` > ``sqlite:///conveyor.db``. The scenario of the
issue: docs/configuration.md's own example, a producer built as ``App()`` and a worker
given the file; the producer wrote conveyor.db, the worker served jobs.db, and the jobs
waited forever. Real processes through pipes, real SQLite files in ``tmp_path``.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

import conveyor
from conveyor.cli.main import COMMANDS
from conveyor.config import ConfigFileError
from tests.integration.cli_run import CONVEYOR, assert_one_error, clean_env
from tests.integration.cli_run import conveyor as run_cli

SERVICE = """
import conveyor

app = conveyor.App()  # no URL in code: the environment or the files name the store


@app.task(queue="mail")
def send(to: str) -> str:
    return f"sent to {to}"
"""
FILE = 'app = "service:app"\nurl = "sqlite:///jobs.db"\n\n[worker]\nqueues = ["mail", "default"]\n'
PYPROJECT = '[project]\nname = "shop"\n\n[tool.conveyor]\nurl = "sqlite:///from-pyproject.db"\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "service.py").write_text(SERVICE.lstrip())
    return tmp_path


def produce(project: Path, env: dict[str, str] | None = None) -> None:
    """Enqueue one job as a user's script would: ``App()``, run in the project."""
    subprocess.run(
        [sys.executable, "-c", "import service; service.send.enqueue('ann')"],
        cwd=project,
        env=env or clean_env(),
        check=True,
        timeout=60,
    )


def states(project: Path, *args: str) -> list[str]:
    proc = run_cli("jobs", "--json", *args, cwd=project)
    assert proc.returncode == 0, proc.stderr
    return [job["state"] for job in json.loads(proc.stdout)["jobs"]]


def test_the_docs_example_producer_and_worker_meet_on_the_files_store(project: Path) -> None:
    (project / "conveyor.toml").write_text(FILE)
    produce(project)
    assert (project / "jobs.db").exists() and not (project / "conveyor.db").exists()
    worker = run_cli("worker", "-C", "conveyor.toml", "--burst", cwd=project)
    assert worker.returncode == 0, worker.stderr
    assert "WARNING" not in worker.stderr, worker.stderr
    # Every reader finds the same store, with -C and without (./conveyor.toml is found).
    assert states(project) == ["succeeded"]
    assert states(project, "-C", "conveyor.toml") == ["succeeded"]
    status = run_cli("status", "--json", cwd=project)
    [queue] = json.loads(status.stdout)["queues"]
    assert queue["queue"] == "mail" and queue["counts"] == {"succeeded": 1}
    assert not (project / "conveyor.db").exists()


def test_pyproject_names_the_store_for_the_producer_and_every_command(project: Path) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT)
    produce(project)
    assert (project / "from-pyproject.db").exists()
    assert states(project) == ["queued"]
    worker = run_cli("worker", "service:app", "--burst", cwd=project)
    assert worker.returncode == 0, worker.stderr
    assert states(project) == ["succeeded"]


@pytest.mark.parametrize(
    "command",
    [["status"], ["jobs"], ["queues"], ["export"], ["dashboard", "--port", "1"], ["check"]],
    ids=lambda c: c[0],
)
def test_every_store_command_takes_dash_c(project: Path, command: list[str]) -> None:
    (project / "deploy.toml").write_text('url = "sqlite:///nowhere.db"\n')
    proc = run_cli(*command, "-C", "deploy.toml", cwd=project)
    # The file's store, named with where it came from; read-only commands create nothing.
    assert_one_error(proc, 1, "nowhere.db", "(from deploy.toml)")
    assert not (project / "nowhere.db").exists() and not (project / "conveyor.db").exists()


def test_every_command_with_url_has_dash_c() -> None:
    import importlib

    missing = []
    for name, (module_name, attr) in COMMANDS.items():
        command = getattr(importlib.import_module(module_name), attr)
        for cmd in [command, *getattr(command, "commands", {}).values()]:
            opts = {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts}
            if "--url" in opts and not {"-C", "--config"} <= opts:
                missing.append(f"{name} {cmd.name}")
    assert not missing, missing


def test_a_bad_file_is_one_usage_error_for_store_commands(project: Path) -> None:
    (project / "conveyor.toml").write_text("[worker]\nconcurency = 8\n")
    proc = run_cli("status", cwd=project)
    assert_one_error(proc, 2, "conveyor.toml: unknown key worker.concurency")


def test_app_follows_the_rule_in_process(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    monkeypatch.delenv("CONVEYOR_URL", raising=False)
    assert (conveyor.App().url, conveyor.App().url_source) == ("sqlite:///conveyor.db", "default")
    (project / "pyproject.toml").write_text(PYPROJECT)
    found = conveyor.App()
    assert (found.url, found.url_source) == (
        "sqlite:///from-pyproject.db",
        "pyproject.toml [tool.conveyor]",
    )
    (project / "conveyor.toml").write_text(FILE)
    assert (conveyor.App().url, conveyor.App().url_source) == ("sqlite:///jobs.db", "conveyor.toml")
    monkeypatch.setenv("CONVEYOR_URL", "sqlite:///env.db")
    assert (conveyor.App().url, conveyor.App().url_source) == ("sqlite:///env.db", "$CONVEYOR_URL")
    pinned = conveyor.App("sqlite:///pinned.db")
    assert (pinned.url, pinned.url_source) == ("sqlite:///pinned.db", "App(url)")


def test_app_refuses_a_file_it_cannot_use(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    monkeypatch.delenv("CONVEYOR_URL", raising=False)
    (project / "conveyor.toml").write_text('url = "oracle://db/x"\n')
    with pytest.raises(ConfigFileError, match=r"conveyor.toml: url must be a store URL"):
        conveyor.App()


def test_a_worker_says_when_jobs_wait_in_another_store(project: Path) -> None:
    produce(project)  # no file yet: the producer writes the default conveyor.db
    (project / "deploy.toml").write_text('url = "sqlite:///jobs.db"\n')
    worker = run_cli("worker", "service:app", "-C", "deploy.toml", "--burst", cwd=project)
    assert worker.returncode == 0, worker.stderr
    warnings = [line for line in worker.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, worker.stderr
    assert "1 in sqlite:///conveyor.db" in warnings[0], warnings
    assert "this worker serves sqlite:///jobs.db (from deploy.toml)" in warnings[0], warnings
    # The worker that serves the default store runs the job; then nothing waits elsewhere.
    assert run_cli("worker", "service:app", "--burst", cwd=project).returncode == 0
    again = run_cli("worker", "service:app", "-C", "deploy.toml", "--burst", cwd=project)
    assert again.returncode == 0 and "WARNING" not in again.stderr, again.stderr


def test_the_env_store_with_waiting_jobs_is_named_too(project: Path) -> None:
    env = clean_env(CONVEYOR_URL="sqlite:///env.db")
    produce(project, env)
    (project / "pinned.py").write_text('import conveyor\n\napp = conveyor.App("sqlite:///a.db")\n')
    worker = run_cli("worker", "pinned:app", "--burst", cwd=project, env=env)
    assert worker.returncode == 0, worker.stderr
    assert "1 in sqlite:///env.db (from $CONVEYOR_URL)" in worker.stderr, worker.stderr


def test_no_warning_when_a_live_worker_serves_the_other_store(project: Path) -> None:
    produce(project)  # one job in the default conveyor.db...
    paused = run_cli("queues", "pause", "mail", cwd=project)  # ...that stays queued
    assert paused.returncode == 0, paused.stderr
    other = subprocess.Popen(
        [str(CONVEYOR), "worker", "service:app"],
        cwd=project,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not _live_workers(project / "conveyor.db"):
            assert time.monotonic() < deadline, "the other worker never registered"
            time.sleep(0.1)
        (project / "deploy.toml").write_text('url = "sqlite:///jobs.db"\n')
        worker = run_cli("worker", "service:app", "-C", "deploy.toml", "--burst", cwd=project)
        assert worker.returncode == 0, worker.stderr
        assert "WARNING" not in worker.stderr, worker.stderr  # served there: not forgotten
    finally:
        other.send_signal(signal.SIGTERM)
        assert other.wait(30) == 0


def _live_workers(path: Path) -> int:
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT count(*) FROM workers").fetchone()[0])
