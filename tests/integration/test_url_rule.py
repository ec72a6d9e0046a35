"""One store-URL rule for producers, workers and the CLI:
``--url`` > explicit ``App(url)`` > ``$CONVEYOR_URL`` > ``sqlite:///conveyor.db``.

The scenario from issue 11: ``App("sqlite:///a.db")`` in code and ``CONVEYOR_URL`` set.
The producer writes to a.db, so ``conveyor worker`` must serve a.db too (it used to serve
the env URL, and the jobs sat queued forever)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import conveyor
from tests.integration.cli_run import assert_one_error, clean_env, write_project
from tests.integration.cli_run import conveyor as run_cli


def test_app_url_wins_over_env_for_producer_and_worker(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    env = clean_env(CONVEYOR_URL=f"sqlite:///{project / 'env.db'}")
    subprocess.run(
        [sys.executable, "-c", "import tasks; tasks.hello.enqueue('a')"],
        cwd=project,
        env=env,
        check=True,
        timeout=60,
    )
    assert (project / "a.db").exists() and not (project / "env.db").exists()
    worker = run_cli("worker", "tasks:app", "--burst", cwd=project, env=env)
    assert worker.returncode == 0, worker.stderr
    status = run_cli("status", "--app", "tasks:app", "--json", cwd=project, env=env)
    [queue] = json.loads(status.stdout)["queues"]
    assert queue["counts"].get("succeeded") == 1 and not queue["counts"].get("queued")
    assert not (project / "env.db").exists()
    # Without --app the CLI has no App(url) to follow: the env URL, which has no store.
    assert_one_error(run_cli("status", cwd=project, env=env), 1, "env.db", "$CONVEYOR_URL")


def test_url_option_wins_over_the_app(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    env = clean_env(CONVEYOR_URL=f"sqlite:///{project / 'env.db'}")
    other = f"sqlite:///{project / 'other.db'}"
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"import tasks; tasks.app.url = {other!r}; tasks.hello.enqueue('b')",
        ],
        cwd=project,
        env=env,
        check=True,
        timeout=60,
    )
    worker = run_cli("worker", "tasks:app", "--burst", "--url", other, cwd=project, env=env)
    assert worker.returncode == 0, worker.stderr
    jobs = json.loads(run_cli("jobs", "--json", "--url", other, cwd=project, env=env).stdout)
    assert [j["state"] for j in jobs["jobs"]] == ["succeeded"]
    assert not (project / "a.db").exists() and not (project / "env.db").exists()


def test_app_remembers_where_its_url_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVEYOR_URL", "sqlite:///from-env.db")
    explicit = conveyor.App("sqlite:///given.db")
    assert (explicit.url, explicit.url_source, explicit.url_explicit) == (
        "sqlite:///given.db",
        "App(url)",
        True,
    )
    from_env = conveyor.App()
    assert (from_env.url, from_env.url_source, from_env.url_explicit) == (
        "sqlite:///from-env.db",
        "$CONVEYOR_URL",
        False,
    )
    from_env.override_url("sqlite:///typed.db")
    assert (from_env.url, from_env.url_source) == ("sqlite:///typed.db", "--url")
    monkeypatch.delenv("CONVEYOR_URL")
    default = conveyor.App()
    assert (default.url, default.url_source) == ("sqlite:///conveyor.db", "default")
