"""``conveyor worker -C FILE``, ``[tool.conveyor]`` in pyproject.toml and ``conveyor config``.

One precedence: flags > -C file > ./pyproject.toml > defaults; for the store URL
``--url`` > ``App(url)`` > ``$CONVEYOR_URL`` > the files > the default. Real processes
through pipes; the worker's JSON start line says what it really runs with.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import conveyor
from tests.integration.cli_run import assert_one_error, clean_env
from tests.integration.cli_run import conveyor as run_cli

SERVICE = """
import conveyor

app = conveyor.App()  # no URL in code: the environment or the files name the store


@app.task(queue="mail")
def send(to: str) -> str:
    return f"sent to {to}"
"""
PINNED = """
import conveyor

app = conveyor.App("sqlite:///pinned.db")
"""

FILE = """
app = "service:app"
url = "sqlite:///from-file.db"

[worker]
queues = {mail = 3, default = 1}
concurrency = 3
pool = "async"
shutdown_timeout = 5
log_format = "json"
"""

PYPROJECT = """
[project]
name = "service"

[tool.conveyor]
app = "service:app"
url = "sqlite:///from-pyproject.db"

[tool.conveyor.worker]
concurrency = 6
prefetch = 2
log_format = "json"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "service.py").write_text(SERVICE.lstrip())
    (tmp_path / "pinned.py").write_text(PINNED.lstrip())
    return tmp_path


def started(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``worker.started`` event of a worker run with log_format json."""
    assert proc.returncode == 0, proc.stderr
    for line in proc.stderr.splitlines():
        event = json.loads(line)
        if event.get("event") == "worker.started":
            return event
    raise AssertionError(proc.stderr)


def effective(project: Path, *args: str, **env: str) -> dict[str, Any]:
    proc = run_cli("config", *args, "--json", cwd=project, env=clean_env(**env))
    assert proc.returncode == 0, proc.stderr
    shown: dict[str, Any] = json.loads(proc.stdout)
    return shown


def test_the_worker_runs_with_the_files_settings(project: Path) -> None:
    (project / "conveyor.toml").write_text(FILE)
    proc = run_cli("worker", "-C", "conveyor.toml", "--burst", cwd=project)
    event = started(proc)
    assert (event["concurrency"], event["pool"]) == (3, "async")
    first = json.loads(proc.stderr.splitlines()[0])["message"]
    assert first.startswith("config: conveyor.toml (")  # says where its settings came from
    assert event["queues"] == {"mail": 3, "default": 1}
    assert event["url"] == "sqlite:///from-file.db"  # App() names none, nor does the env
    assert (project / "from-file.db").exists()


def test_json_files_have_the_same_schema(project: Path) -> None:
    (project / "conveyor.json").write_text(
        json.dumps({"app": "service:app", "worker": {"queues": ["mail:2"], "log_format": "json"}})
    )
    event = started(run_cli("worker", "--config", "conveyor.json", "--burst", cwd=project))
    assert event["queues"] == {"mail": 2}


def test_flags_win_over_the_file_which_wins_over_pyproject(project: Path) -> None:
    (project / "conveyor.toml").write_text(FILE)
    (project / "pyproject.toml").write_text(PYPROJECT)
    args = ("worker", "-C", "conveyor.toml", "-c", "2", "-q", "default", "--burst")
    event = started(run_cli(*args, cwd=project))
    assert (event["concurrency"], event["queues"], event["pool"]) == (2, {"default": 1}, "async")
    assert event["prefetch"] == 2  # only pyproject.toml sets it
    shown = effective(project, "-C", "conveyor.toml")
    worker = shown["worker"]
    assert worker["concurrency"] == {"value": 3, "source": "conveyor.toml"}
    assert worker["prefetch"] == {
        "value": 2,
        "source": "pyproject.toml [tool.conveyor.worker]",
    }
    assert worker["max_jobs_per_child"] == {"value": None, "source": "default"}
    assert shown["files"] == ["conveyor.toml", "pyproject.toml [tool.conveyor]"]


def test_pyproject_alone_names_the_app_and_its_settings(project: Path) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT)
    event = started(run_cli("worker", "--burst", cwd=project))  # no APP argument
    assert (event["concurrency"], event["prefetch"]) == (6, 2)
    assert event["queues"] == {"mail": 1, "default": 1}  # default: the app's queues
    assert event["url"] == "sqlite:///from-pyproject.db"


def test_the_url_rule_puts_the_files_below_the_environment(project: Path) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT)
    url = effective(project)["url"]
    assert url == {
        "value": "sqlite:///from-pyproject.db",
        "source": "pyproject.toml [tool.conveyor]",
    }
    (project / "conveyor.toml").write_text(FILE)  # found too, and above pyproject.toml
    url = effective(project)["url"]
    assert url == {"value": "sqlite:///from-file.db", "source": "conveyor.toml"}
    (project / "deploy.toml").write_text('url = "sqlite:///from-deploy.db"\n')
    url = effective(project, "-C", "deploy.toml")["url"]
    assert url == {"value": "sqlite:///from-deploy.db", "source": "deploy.toml"}
    env = {"CONVEYOR_URL": "sqlite:///env.db"}
    assert effective(project, "-C", "conveyor.toml", **env)["url"]["source"] == "$CONVEYOR_URL"
    pinned = effective(project, "-C", "conveyor.toml", "--app", "pinned:app", **env)["url"]
    assert pinned == {"value": "sqlite:///pinned.db", "source": "App(url)"}
    given = effective(project, "--app", "pinned:app", "--url", "sqlite:///cli.db")["url"]
    assert given == {"value": "sqlite:///cli.db", "source": "--url"}
    # And the worker really serves the environment's store, where producers write.
    worker = run_cli("worker", "-C", "conveyor.toml", "--burst", cwd=project, env=clean_env(**env))
    assert started(worker)["url"] == "sqlite:///env.db"
    assert not (project / "from-file.db").exists()


def test_config_text_names_every_source_and_hides_passwords(project: Path) -> None:
    (project / "conveyor.toml").write_text(
        'app = "service:app"\nurl = "redis://:s3cret@cache.internal:6379/0"\n'
        "[worker]\nconcurrency = 4\n"
    )
    proc = run_cli("config", "-C", "conveyor.toml", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "s3cret" not in proc.stdout + proc.stderr
    rows = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()[1:]}
    assert rows["url"] == ["redis://:***@cache.internal:6379/0", "conveyor.toml"]
    assert rows["app"] == ["service:app", "conveyor.toml"]
    assert rows["worker.concurrency"] == ["4", "conveyor.toml"]
    assert rows["worker.pool"] == ["thread", "default"]
    assert rows["worker.queues"] == ["mail:1,", "default:1", "default", "(the", "app's", "queues)"]
    shown = effective(project, "-C", "conveyor.toml")
    assert shown["url"]["value"] == "redis://:***@cache.internal:6379/0"


@pytest.mark.parametrize(
    ("name", "text", "fragments"),
    [
        ("c.toml", "[worker]\nconcurency = 4\n", ["c.toml", "unknown key worker.concurency"]),
        ("c.toml", "[worker]\nconcurrency = '4'\n", ["c.toml", "worker.concurrency", "integer"]),
        ("c.toml", "[worker]\nconcurrency = 0\n", ["c.toml", "worker.concurrency", ">= 1"]),
        ("c.toml", "[worker]\npool = 'fork'\n", ["c.toml", "worker.pool", "'thread'"]),
        ("c.toml", "[worker]\nqueues = 'mail'\n", ["c.toml", "worker.queues", "a list"]),
        ("c.toml", "[worker]\nqueues = {mail = 0}\n", ["c.toml", "worker.queues", "'mail'"]),
        ("c.toml", "[worker]\nmetrics_port = true\n", ["c.toml", "worker.metrics_port"]),
        ("c.toml", "queue = 'mail'\n", ["c.toml", "unknown key queue", "known: app, url"]),
        ("c.toml", "url = 'sqlite://x'\n", ["c.toml", "url must be a store URL"]),
        ("c.toml", "app = 'service'\n", ["c.toml", "app must be", "module:attribute"]),
        ("c.toml", "worker = 3\n", ["c.toml", "worker must be a table"]),
        ("c.toml", "[worker\n", ["c.toml", "not valid TOML"]),
        ("c.json", '{"worker": {"prefetch": -1}}', ["c.json", "worker.prefetch", ">= 0"]),
        ("c.toml", "[worker]\nprefetch = 'lots'\n", ["c.toml", "worker.prefetch", '"auto"']),
        ("c.json", "[1]", ["c.json", "must be an object"]),
        ("c.yaml", "worker: {}\n", ["c.yaml", "must end in .toml or .json"]),
    ],
)
def test_a_bad_file_is_one_usage_error_naming_file_and_key(
    project: Path, name: str, text: str, fragments: list[str]
) -> None:
    (project / name).write_text(text)
    for command in (["worker", "service:app"], ["config"]):
        proc = run_cli(*command, "-C", name, cwd=project)
        assert_one_error(proc, 2, *fragments)
    assert not list(project.glob("*.db"))  # nothing was started


def test_a_bad_pyproject_table_is_named_too(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.conveyor.worker]\nlog_format = 'xml'\n")
    proc = run_cli("worker", "service:app", cwd=project)
    assert_one_error(proc, 2, "pyproject.toml", "tool.conveyor.worker.log_format", "'json'")
    missing = run_cli("worker", "-C", "nowhere.toml", cwd=project)
    assert_one_error(missing, 2, "nowhere.toml", "cannot read")


def test_no_app_anywhere_is_a_usage_error_saying_where_to_put_one(project: Path) -> None:
    proc = run_cli("worker", cwd=project)
    assert_one_error(proc, 2, "Missing argument 'APP'", "[tool.conveyor]")


def test_enqueue_takes_its_app_and_store_from_the_files(project: Path) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT)
    proc = run_cli("enqueue", "send", "--args", '["ann"]', cwd=project)
    assert proc.returncode == 0, proc.stderr
    app = conveyor.App(f"sqlite:///{project / 'from-pyproject.db'}")
    assert app.job(proc.stdout.strip()).refresh().queue == "mail"


def _in_terminal(project: Path, *args: str, columns: int) -> str:
    """What ``conveyor ARGS`` writes to a pseudo terminal COLUMNS wide."""
    from tests.integration.cli_run import CONVEYOR, in_pty

    out, _ = in_pty([str(CONVEYOR), *args], columns=columns, rows=40, cwd=project)
    return out


def test_config_in_a_narrow_terminal_prints_whole_values(project: Path) -> None:
    long_url = "sqlite:///" + "very-long-directory-name/" * 4 + "jobs.db"
    (project / "conveyor.toml").write_text(f'app = "service:app"\nurl = "{long_url}"\n')
    shown = _in_terminal(project, "config", "-C", "conveyor.toml", columns=40)
    assert "\x1b[" not in shown  # plain text, as through a pipe
    piped = run_cli("config", "-C", "conveyor.toml", cwd=project).stdout
    assert shown == piped  # nothing cut or wrapped to fit the terminal
    assert f"url                          {long_url}  conveyor.toml" in shown


def test_dash_c_takes_another_projects_pyproject_table(project: Path) -> None:
    (project / "deploy").mkdir()
    (project / "deploy" / "pyproject.toml").write_text(PYPROJECT)
    shown = effective(project, "-C", "deploy/pyproject.toml")
    assert shown["files"] == ["deploy/pyproject.toml [tool.conveyor]"]
    assert shown["worker"]["concurrency"]["value"] == 6
