"""``conveyor export`` -> ``conveyor import`` into a fresh store carries durable jobs'
waits, through the real console script, on every store: a job parked on
``conveyor.wait_for`` still waits there and resumes when the event is sent; an event
sent before its job waited survives and is consumed when the job waits; a job parked in
``conveyor.join(child)`` still waits there and its child's end (on the target) wakes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import conveyor
from conveyor.states import JobState
from conveyor.worker.worker import Worker
from tests.integration.cli_run import conveyor as run
from tests.support.backends import BACKEND_URLS


def _tasks(app: conveyor.App) -> tuple[Any, Any, Any]:
    @app.task(name="t.approve", queue="parked")
    def approve() -> Any:
        return conveyor.wait_for("go", timeout=3600)

    @app.task(name="t.early", queue="early")
    def early() -> Any:
        return conveyor.wait_for("go", timeout=3600)

    @app.task(name="t.kid", queue="kids")
    def kid() -> int:
        return 7

    @app.task(name="t.parent", queue="parked")
    def parent() -> int:
        return int(conveyor.join(conveyor.spawn(kid))) + 1

    return approve, early, parent


@pytest.fixture(params=sorted(BACKEND_URLS))
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    source = BACKEND_URLS[request.param](request, tmp_path / "a")
    target = BACKEND_URLS[request.param](request, tmp_path / "b")
    return source, target


def test_a_parked_job_and_an_early_event_survive_export_and_import(
    two_stores: tuple[str, str], tmp_path: Path
) -> None:
    source, target = two_stores
    app = conveyor.App(source)
    approve, early, parent = _tasks(app)
    parked, joining = approve.enqueue(), parent.enqueue()
    Worker(app, burst=True, queues=["parked"]).run(install_signals=False)
    assert parked.status is JobState.WAITING
    assert joining.status is JobState.WAITING  # its kid queued, in a queue not served
    sent_early = early.enqueue()
    assert sent_early.send("go", {"n": 1}) is False  # not waiting yet: stored
    app.close()

    done = run("export", "--url", source, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = {d["id"]: d for d in map(json.loads, done.stdout.splitlines())}
    assert lines[parked.id]["state"] == "waiting" and lines[parked.id]["events"] == []
    assert [(e["name"], json.loads(e["payload"])) for e in lines[sent_early.id]["events"]] == [
        ("go", {"n": 1})
    ]
    path = tmp_path / "jobs.jsonl"
    path.write_text(done.stdout)
    imported = run("import", str(path), "--url", target, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr

    app = conveyor.App(target)
    try:
        _tasks(app)
        assert app.job(parked.id).status is JobState.WAITING  # still parked
        assert app.job(joining.id).status is JobState.WAITING  # still in its join
        assert app.job(parked.id).send("go", "approved") is True
        Worker(app, burst=True, queues=["parked", "early", "kids"]).run(install_signals=False)
        assert app.job(parked.id).result(timeout=10) == "approved"
        assert app.job(joining.id).result(timeout=10) == 8  # woken by its kid's end here
        assert app.job(sent_early.id).result(timeout=10) == {"n": 1}
    finally:
        app.close()
