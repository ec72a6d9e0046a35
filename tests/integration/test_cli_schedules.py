"""``conveyor schedules`` through pipes, as a shell runs it: the list (next fire, paused,
last job and its state), pause / resume / run of one schedule, obeyed by a worker's
scheduler, each action in ``conveyor audit``; an unknown name refused in one line.

On SQLite in make test (~4 s: eight subprocesses); the contract suite
(tests/contract/test_schedules.py) runs the store methods on all five stores.
``CONVEYOR_CLI_SCHEDULES_STORES=redis,postgres,mariadb`` adds those (each passed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobListParams
from conveyor.worker.services.scheduler import Scheduler
from conveyor.worker.worker import Worker
from tests.integration.cli_run import conveyor as run
from tests.support.backends import CLI_URLS

_MORE = [s for s in os.environ.get("CONVEYOR_CLI_SCHEDULES_STORES", "").split(",") if s]


@pytest.fixture(params=["sqlite", *_MORE])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return CLI_URLS[request.param](request, tmp_path)


def _app(url: str) -> tuple[conveyor.App, Scheduler]:
    app = conveyor.App(url)

    @app.periodic(every=3600.0, name="nightly")
    @app.task(name="nightly-report")
    def report() -> None: ...

    return app, Scheduler(Worker(app, concurrency=1))


def _listed(url: str, tmp_path: Path) -> dict[str, dict[str, object]]:
    done = run("schedules", "--url", url, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return {s["name"]: s for s in json.loads(done.stdout)}


def test_schedules_list_pause_run_resume_through_pipes(url: str, tmp_path: Path) -> None:
    app, scheduler = _app(url)
    scheduler.tick()  # a worker's first tick records the schedule in the store
    (nightly,) = _listed(url, tmp_path).values()
    assert nightly["paused"] is False and nightly["next_fire"] is not None

    done = run("schedules", "--url", url, "pause", "nightly", cwd=tmp_path)
    assert done.returncode == 0 and "nightly paused" in done.stdout
    table = run("schedules", "--url", url, "--utc", cwd=tmp_path)
    assert table.returncode == 0
    assert "nightly" in table.stdout and "PAUSED" in table.stdout and "every 3600s" in table.stdout

    done = run("schedules", "--url", url, "run", "nightly", cwd=tmp_path)
    assert done.returncode == 0 and "run requested" in done.stdout
    scheduler.tick()  # paused, yet the run asked for is enqueued, once
    scheduler.tick()
    (job,) = app.backend.job_list(JobListParams(task="nightly-report"))
    listed = _listed(url, tmp_path)["nightly"]
    assert listed["last_job_id"] == job.id and listed["last_job_state"] == "queued"
    assert listed["run_requested_at"] is None and listed["paused"] is True

    assert run("schedules", "--url", url, "resume", "nightly", cwd=tmp_path).returncode == 0
    assert _listed(url, tmp_path)["nightly"]["paused"] is False

    typo = run("schedules", "--url", url, "pause", "nigthly", cwd=tmp_path)
    assert typo.returncode == 1
    assert typo.stderr.strip().splitlines() == [
        "Error: no schedule named 'nigthly'; known: nightly"
    ]
    audit = run("audit", "--url", url, "--json", cwd=tmp_path)
    actions = [json.loads(line) for line in audit.stdout.splitlines()]
    assert [(a["action"], a["detail"]) for a in actions] == [
        ("schedule_resume", "schedule nightly"),
        ("schedule_run", "schedule nightly"),
        ("schedule_pause", "schedule nightly"),
    ]
    app.close()
