"""Durable jobs in a running worker and the CLI (one store: both are store-neutral; the
store side is tests/contract/test_durable.py): a wait's timeout fires from the worker's
deadlines service; ``conveyor job ID`` shows the steps and what the job waits for,
``conveyor jobs --state waiting`` lists it, ``conveyor send`` delivers the event."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import conveyor
from conveyor.cli.main import cli
from conveyor.states import JobState
from conveyor.worker.worker import Worker
from tests.support.flow import drain


def test_job_shows_steps_and_send_resumes_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    app = conveyor.App(url)

    @app.step(name="charge")
    def charge(order: int) -> str:
        return f"receipt-{order}"

    @app.task(name="fulfil")
    def fulfil(order: int) -> list[object]:
        receipt = charge(order)
        return [receipt, conveyor.wait_for("approved", timeout=3600)]

    job = fulfil.enqueue(9)
    drain(app)
    assert job.status is JobState.WAITING
    run = CliRunner()
    shown = run.invoke(cli, ["job", job.id, "--url", url])
    assert shown.exit_code == 0, shown.output
    assert "steps (2)" in shown.output and "receipt-9" in shown.output
    assert "waits for: event 'approved' (times out" in shown.output
    as_json = json.loads(run.invoke(cli, ["job", job.id, "--url", url, "--json"]).output)
    assert [s["name"] for s in as_json["steps"]] == ["charge", "wait_for:approved"]
    assert as_json["waits_for"].startswith("event 'approved'")
    listed = run.invoke(cli, ["jobs", "--state", "waiting", "--url", url, "--json"])
    assert [j["id"] for j in json.loads(listed.output)["jobs"]] == [job.id]

    bad = run.invoke(cli, ["send", job.id, "approved", "--data", "{nope", "--url", url])
    assert bad.exit_code != 0 and "not JSON" in bad.output
    sent = run.invoke(
        cli, ["send", job.id[:12], "approved", "--data", '{"by": "ada"}', "--url", url]
    )
    assert sent.exit_code == 0, sent.output
    assert "(woken)" in sent.output
    missing = run.invoke(cli, ["send", "0" * 26, "approved", "--url", url])
    assert missing.exit_code != 0 and "no job" in missing.output
    drain(app)
    assert job.result(timeout=5) == ["receipt-9", {"by": "ada"}]


def test_a_running_worker_times_out_the_waits_it_parked(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 't.db'}")

    @app.task
    def ask() -> str:
        try:
            return str(conveyor.wait_for("answer", timeout=0.3))
        except TimeoutError:
            return "no answer"

    worker = Worker(app, concurrency=2)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False})
    thread.start()
    try:
        started = time.monotonic()
        job = ask.enqueue()
        assert job.result(timeout=10) == "no answer"
        # parked, then queued by the service within its check interval of the deadline
        assert time.monotonic() - started < 3.0
        assert [s.state for s in job.steps()] == ["timed_out"]
    finally:
        worker.stop()
        thread.join(10)


def test_a_step_refuses_where_it_cannot_be_saved() -> None:
    # A job context no runner linked to a store (made by hand):
    # the step refuses instead of running unsaved; outside any job it is a plain call.
    from conveyor.context import JobContext, reset_current, set_current
    from conveyor.errors import ConfigurationError

    app = conveyor.App("memory://")

    @app.step
    def double(x: int) -> int:
        return 2 * x

    assert double(4) == 8
    token = set_current(JobContext("j", "t", "q", 1, 3))
    try:
        with pytest.raises(ConfigurationError, match="made by hand"):
            double(4)
    finally:
        reset_current(token)


def test_a_different_step_on_replay_ends_the_job_dead(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'n.db'}")
    seen: list[int] = []

    @app.step(name="first")
    def first() -> int:
        return 1

    @app.step(name="other")
    def other() -> int:
        return 2

    @app.task(max_attempts=5, retry=conveyor.Backoff(base=0.0, jitter=0.0))
    def drifting() -> int:
        seen.append(1)
        value = (first if len(seen) == 1 else other)()
        if len(seen) == 1:
            raise RuntimeError("retry me")
        return value

    job = drifting.enqueue()
    drain(app)
    record = job.refresh()
    assert record.state is JobState.DEAD and len(seen) == 2  # not retried further
    assert "NonDeterministic" in (record.error or "") and "'other'" in (record.error or "")


def test_job_page_and_cli_show_steps_wake_time_and_published(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from conveyor.web import create_app

    url = f"sqlite:///{tmp_path / 's.db'}"
    app = conveyor.App(url)

    @app.step(name="fetch")
    def fetch() -> str:
        return "<rows>"

    @app.task(name="nap")
    def nap() -> str:
        conveyor.current_job().publish("stage", "fetched")
        rows = fetch()
        conveyor.sleep(3600)
        return rows

    job = nap.enqueue()
    drain(app)
    assert job.status is JobState.SCHEDULED
    wake = float(job.steps()[1].result or "0")
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wake))
    run = CliRunner()
    shown = run.invoke(cli, ["job", job.id, "--url", url, "--utc"])
    assert shown.exit_code == 0, shown.output
    assert f"wakes {iso}" in shown.output and repr(wake) not in shown.output
    assert "waits for: sleep until" in shown.output and "published (1)" in shown.output
    as_json = json.loads(run.invoke(cli, ["job", job.id, "--url", url, "--json"]).output)
    assert as_json["steps"][1]["at"].startswith(iso[:-1]) and as_json["published"] == {
        "stage": "fetched"
    }
    with TestClient(create_app(app), base_url="http://127.0.0.1") as web:
        page = web.get(f"/jobs/{job.id}").text
    assert "<h2>Steps (2)</h2>" in page and "&lt;rows&gt;" in page  # escaped
    assert f"wakes {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(wake))}" in page
    assert "Waits for: sleeping until" in page and "fetched" in page


def test_metrics_count_steps_and_replays(tmp_path: Path) -> None:
    pytest.importorskip("prometheus_client")
    from conveyor.metrics import WorkerMetrics

    app = conveyor.App(f"sqlite:///{tmp_path / 'm.db'}")
    tries: list[int] = []

    @app.step(name="one")
    def one() -> int:
        return 1

    @app.task(name="twice", max_attempts=2, retry=conveyor.Backoff(base=0.0, jitter=0.0))
    def twice() -> int:
        value = one() + one()
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("again")  # the retry replays both saved steps
        return value

    worker = Worker(app, burst=True)
    metrics = WorkerMetrics(worker)
    job = twice.enqueue()
    worker.run(install_signals=False)
    assert job.result(timeout=5) == 2
    sample = metrics.registry.get_sample_value
    assert sample("conveyor_steps_run_total") == 2.0
    assert sample("conveyor_steps_replayed_total") == 2.0
    assert sample("conveyor_jobs_replayed_total") == 1.0
