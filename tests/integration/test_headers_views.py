"""Headers where operators look -- ``conveyor job ID`` (human and ``--json``) and the
dashboard's job page -- and ``on_rescue`` fed by a real rescue, on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import conveyor
from conveyor.cli.main import cli
from conveyor.middleware import RescuedJob
from conveyor.worker.services.rescuer import Rescuer
from tests.contract.helpers import claim, insert, register

HEADERS = {"tenant": "acme", "note": "<b>bold</b>"}


@pytest.fixture
def app(tmp_path: Path) -> conveyor.App:
    return conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")


def test_cli_job_view_shows_headers(app: conveyor.App) -> None:
    @app.task(name="views.t")
    def t() -> None: ...

    job = t.with_options(headers=HEADERS).enqueue()
    plain = t.enqueue()
    run = CliRunner()
    data = json.loads(
        run.invoke(cli, ["job", "--url", app.url, job.id, "--json"], catch_exceptions=False).output
    )
    assert data["job"]["headers"] == HEADERS
    none = json.loads(run.invoke(cli, ["job", "--url", app.url, plain.id, "--json"]).output)
    assert none["job"]["headers"] == {}
    human = run.invoke(cli, ["job", "--url", app.url, job.id], catch_exceptions=False).output
    assert "headers" in human and '"tenant": "acme"' in human.replace("\n", " ")


def test_dashboard_job_page_shows_headers_escaped(app: conveyor.App) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from conveyor.web import create_app

    @app.task(name="views.t")
    def t() -> None: ...

    job = t.with_options(headers=HEADERS).enqueue()
    with TestClient(create_app(app), base_url="http://127.0.0.1") as client:
        page = client.get(f"/jobs/{job.id}").text
    assert "<dt>headers</dt>" in page
    assert "tenant: acme" in page
    assert "note: &lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page


class Rescues:
    def __init__(self) -> None:
        self.seen: list[RescuedJob] = []

    def on_rescue(self, job: RescuedJob) -> None:
        self.seen.append(job)


def test_on_rescue_is_called_by_the_rescuer(app: conveyor.App) -> None:
    rescues = app.add_middleware(Rescues())
    worker = conveyor.Worker(app, concurrency=1)
    backend = app.backend
    (job_id,) = insert(backend)
    register(backend, "gone", pid=999_999, host=worker.info.host)  # a pid that is not alive
    assert [j.id for j in claim(backend, worker_id="gone")] == [job_id]
    Rescuer(worker, 1.0).tick()
    assert rescues.seen == [RescuedJob(job_id, "gone", "queued")]


def test_migrate_keeps_headers(app: conveyor.App, tmp_path: Path) -> None:
    @app.task(name="views.t")
    def t() -> None: ...

    job = t.with_options(headers=HEADERS).enqueue()
    target = f"sqlite:///{tmp_path / 'target.db'}"
    done = CliRunner().invoke(
        cli, ["migrate", "--from", app.url, "--to", target], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    moved = conveyor.App(target).job(job.id)
    assert dict(moved.headers) == HEADERS
