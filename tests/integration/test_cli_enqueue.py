"""``conveyor enqueue TASK``: a job of the app's own task from the shell, through pipes."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
from pathlib import Path

import pytest

import conveyor
from conveyor.states import JobState
from tests.integration.cli_run import CONVEYOR, assert_one_error, clean_env
from tests.integration.cli_run import conveyor as run_cli
from tests.support import postgres_server
from tests.support.redis_server import isolated_url

TASKS = """
import conveyor

app = conveyor.App("sqlite:///a.db")


@app.task
def add(a: int, b: int) -> int:
    return a + b


@app.task(queue="mail")
def greet(name: str, *, punct: str = "!") -> dict:
    return {"text": f"hello {name}{punct}"}


@app.task(max_attempts=1)
def fail(why: str) -> None:
    raise ValueError(why)


@app.task
def keep(value: object) -> None: ...
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "tasks.py").write_text(TASKS.lstrip())
    return tmp_path


def _app(project: Path) -> conveyor.App:
    return conveyor.App(f"sqlite:///{project / 'a.db'}")


def test_enqueue_prints_the_id_of_a_job_with_those_arguments(project: Path) -> None:
    proc = run_cli(
        "enqueue", "tasks.greet", "--app", "tasks:app", "--args", '["ann"]',
        "--kwargs", '{"punct": "?"}', cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip()
    record = _app(project).job(job_id).refresh()
    assert (record.task, record.queue, record.state) == ("tasks.greet", "mail", JobState.QUEUED)
    assert json.loads(record.payload) == {"args": ["ann"], "kwargs": {"punct": "?"}}


def test_options_set_queue_priority_and_when(project: Path) -> None:
    before = time.time()
    delayed = run_cli(
        "enqueue", "add", "--app", "tasks:app", "--args", "[1, 2]", "--queue", "urgent",
        "--priority", "7", "--delay", "1h", "--json", cwd=project,
    )  # fmt: skip
    assert delayed.returncode == 0, delayed.stderr
    shown = json.loads(delayed.stdout)
    assert (shown["state"], shown["result"]) == ("scheduled", None)
    record = _app(project).job(shown["id"]).refresh()
    assert (record.queue, record.priority) == ("urgent", 7)
    assert record.run_at is not None and before + 3600 <= record.run_at <= time.time() + 3600
    at = run_cli(
        "enqueue", "add", "--app", "tasks:app", "--args", "[1, 2]",
        "--at", "2031-05-06T07:08:09+02:00", cwd=project,
    )  # fmt: skip
    assert at.returncode == 0, at.stderr
    when = dt.datetime(2031, 5, 6, 5, 8, 9, tzinfo=dt.UTC).timestamp()
    assert _app(project).job(at.stdout.strip()).refresh().run_at == when


def test_expires_sets_the_deadline_and_a_late_job_ends_expired(project: Path) -> None:
    before = time.time()
    proc = run_cli(
        "enqueue", "add", "--app", "tasks:app", "--args", "[1, 2]", "--expires", "2h",
        cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = _app(project).job(proc.stdout.strip()).refresh()
    assert record.expires_at is not None
    assert before + 7200 <= record.expires_at <= time.time() + 7200
    plain = run_cli("enqueue", "add", "--app", "tasks:app", "--args", "[1, 2]", cwd=project)
    assert _app(project).job(plain.stdout.strip()).refresh().expires_at is None
    late = run_cli(
        "enqueue", "add", "--app", "tasks:app", "--args", "[3, 4]", "--expires", "1s",
        cwd=project,
    )  # fmt: skip
    time.sleep(1.2)  # past its deadline before any worker starts
    ran = subprocess.run(
        [CONVEYOR, "worker", "tasks:app", "--burst"], cwd=project, env=clean_env(),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert _app(project).job(late.stdout.strip()).refresh().state is JobState.EXPIRED


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--args", "[1, 2, 3]"], ["add() takes 2 positional arguments but 3 were given"]),
        (["--args", "[1]"], ["missing 1 required positional argument: 'b'"]),
        (["--kwargs", '{"a": 1, "c": 2}'], ["unexpected keyword argument 'c'"]),
        (["--args", "[1,"], ["--args", "not JSON"]),
        (["--args", '{"a": 1}'], ["--args", "must be an array"]),
        (["--kwargs", "[1]"], ["--kwargs", "must be an object"]),
        (["--args", "[1, 2]", "--at", "2031-05-06T07:08"], ["--at", "no UTC offset"]),
        (["--args", "[1, 2]", "--delay", "30"], ["--delay", "has no unit"]),
        (["--args", "[1, 2]", "--expires", "soon"], ["--expires", "has no unit"]),
        (["--args", "[1, 2]", "--delay", "1m", "--at", "2031-05-06T07:08Z"], ["not both"]),
        (["--args", "[1, 2]", "--timeout", "3"], ["--timeout needs --wait"]),
        # what enqueue itself checks, as one line too (was a traceback): type hints,
        # options, values JSON cannot hold faithfully
        (["--args", '["abc", 2]'], ["argument 'a' must be int", "(task tasks.add)"]),
        (["--kwargs", '{"a": 1, "b": true}'], ["argument 'b' must be int"]),
        (["--args", "[1, 2]", "--priority", "5000"], ["priority must be in"]),
        (["--args", "[1, 2]", "--queue", ""], ["queue must not be empty"]),
    ],
)
def test_a_wrong_call_is_one_usage_error_and_writes_nothing(
    project: Path, args: list[str], fragments: list[str]
) -> None:
    proc = run_cli("enqueue", "add", "--app", "tasks:app", *args, cwd=project)
    assert_one_error(proc, 2, *fragments)
    assert proc.stdout == ""
    assert not (project / "a.db").exists()  # checked before the store is even opened


def test_values_json_cannot_hold_are_one_usage_error(project: Path) -> None:
    for value in ("[NaN]", "[[Infinity]]"):
        proc = run_cli("enqueue", "keep", "--app", "tasks:app", "--args", value, cwd=project)
        assert_one_error(proc, 2, "(task tasks.keep)")
    assert not (project / "a.db").exists()


def test_an_unknown_task_lists_the_registered_ones(project: Path) -> None:
    proc = run_cli("enqueue", "tasks.nope", "--app", "tasks:app", cwd=project)
    assert_one_error(proc, 2, "no task named 'tasks.nope'", "tasks.add, tasks.fail, tasks.greet")


def test_without_an_app_it_says_how_to_name_one(project: Path) -> None:
    assert_one_error(run_cli("enqueue", "add", cwd=project), 2, "--app MODULE:ATTR")


def _enqueue_and_work(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``conveyor enqueue ... --wait`` and burst workers until it returns."""
    waiting = subprocess.Popen(
        [str(CONVEYOR), "enqueue", *args, "--app", "tasks:app", "--wait", "--timeout", "30"],
        cwd=project, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while waiting.poll() is None:  # a burst worker may start before the job is written
            assert time.monotonic() < deadline, "enqueue --wait never returned"
            worker = run_cli("worker", "tasks:app", "--burst", cwd=project)
            assert worker.returncode == 0, worker.stderr
            time.sleep(0.1)
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait(10)
    return subprocess.CompletedProcess(waiting.args, waiting.returncode, out, err)


def test_wait_prints_the_id_then_the_result_as_json(project: Path) -> None:
    proc = _enqueue_and_work(project, "greet", "--args", '["bo"]')
    assert proc.returncode == 0, proc.stderr
    job_id, result = proc.stdout.splitlines()
    assert json.loads(result) == {"text": "hello bo!"}
    assert _app(project).job(job_id).status is JobState.SUCCEEDED


def test_wait_on_a_job_that_dies_exits_1_with_its_error_on_one_line(project: Path) -> None:
    proc = _enqueue_and_work(project, "fail", "--args", '["no\\nway"]')
    line = assert_one_error(proc, 1, "failed: ValueError: no; way")
    job_id = proc.stdout.strip()
    assert job_id in line and _app(project).job(job_id).status is JobState.DEAD


def test_wait_json_shows_id_state_and_result(project: Path) -> None:
    proc = _enqueue_and_work(project, "add", "--kwargs", '{"a": 2, "b": 3}', "--json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert {k: shown[k] for k in ("state", "result")} == {"state": "succeeded", "result": 5}


def test_wait_gives_up_after_the_timeout_and_leaves_the_job(project: Path) -> None:
    proc = run_cli(
        "enqueue", "add", "--app", "tasks:app", "--args", "[1, 2]", "--wait",
        "--timeout", "0.3", cwd=project,
    )  # fmt: skip
    job_id = proc.stdout.strip()
    assert_one_error(proc, 1, f"job {job_id} not finished after 0.3 s", "queued")
    assert _app(project).job(job_id).status is JobState.QUEUED


@pytest.mark.redis
def test_on_redis_the_same_commands_enqueue_and_wait(
    project: Path, request: pytest.FixtureRequest
) -> None:
    url = isolated_url(request)
    proc = run_cli(
        "enqueue", "greet", "--app", "tasks:app", "--url", url, "--args", '["cy"]', cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    worker = run_cli("worker", "tasks:app", "--url", url, "--burst", cwd=project)
    assert worker.returncode == 0, worker.stderr
    app = conveyor.App(url)
    assert app.job(proc.stdout.strip()).result(timeout=10) == {"text": "hello cy!"}
    wrong = run_cli("enqueue", "greet", "--app", "tasks:app", "--url", url, cwd=project)
    assert_one_error(wrong, 2, "missing 1 required positional argument: 'name'")
    app.close()


def test_on_postgres_enqueue_wait_and_its_timeout(
    project: Path, request: pytest.FixtureRequest
) -> None:
    url = postgres_server.isolated_url(request)
    proc = run_cli(
        "enqueue", "greet", "--app", "tasks:app", "--url", url, "--args", '["pg"]', cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    waited = run_cli(
        "enqueue", "add", "--app", "tasks:app", "--url", url, "--args", "[1, 2]", "--wait",
        "--timeout", "0.3", cwd=project,
    )  # fmt: skip
    assert_one_error(waited, 1, "not finished after 0.3 s", "queued")
    worker = run_cli("worker", "tasks:app", "--url", url, "--burst", cwd=project)
    assert worker.returncode == 0, worker.stderr
    app = conveyor.App(url)
    assert app.job(proc.stdout.strip()).result(timeout=10) == {"text": "hello pg!"}
    assert app.job(waited.stdout.strip()).result(timeout=10) == 3
    app.close()
