"""Expiry through real workers and the CLI, on every backend: a job prefetched in time but
reached after its ``expires_at`` is finished ``expired`` without running; a worker's
pruner sweeps jobs of a queue nobody serves; ``conveyor status`` counts them and
``conveyor jobs --state expired`` lists them.

No assertion depends on speed: the prefetched job's expiry is waited for by the running
job itself (it returns only once the expiry has passed), so the second job cannot start
in time however fast or slow the machine is.
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import conveyor
from conveyor.cli.main import cli
from conveyor.rules import EXPIRED_REASON
from conveyor.states import JobState
from conveyor.worker.services.pruner import Pruner
from tests.support.backends import GENERIC_URLS

PAST = datetime.datetime(2001, 1, 1, tzinfo=datetime.UTC)


@pytest.fixture(params=sorted(GENERIC_URLS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return GENERIC_URLS[request.param](request, tmp_path)


def test_a_prefetched_job_reached_after_its_expiry_never_runs(url: str) -> None:
    app = conveyor.App(url)
    ran: list[str] = []
    deadline: list[float] = []

    @app.task(name="expiry.slow")
    def slow() -> str:
        # Holds the only slot until the prefetched job's expiry has passed.
        while not deadline or time.time() <= deadline[0]:
            time.sleep(0.01)
        ran.append("slow")
        return "slow"

    @app.task(name="expiry.quick")
    def quick() -> str:
        ran.append("quick")
        return "quick"

    try:
        first = slow.with_options(priority=10).enqueue()
        second = quick.with_options(expires=datetime.timedelta(seconds=2)).enqueue()
        expires_at = second.refresh().expires_at
        assert expires_at is not None
        deadline.append(expires_at)
        # One slot, one job prefetched: both are claimed at once, the second waits.
        conveyor.Worker(app, concurrency=1, prefetch=1, burst=True).run(install_signals=False)
        assert first.result(timeout=10) == "slow"
        record = second.refresh()
        assert record.state is JobState.EXPIRED and record.reason == EXPIRED_REASON
        assert ran == ["slow"]
        assert [a.outcome for a in app.backend.job_attempts(second.id)] == ["expired"]
    finally:
        app.close()


def test_the_pruner_sweeps_unclaimed_jobs_and_the_cli_shows_them(url: str) -> None:
    app = conveyor.App(url)

    @app.task(name="expiry.elsewhere", queue="nobody")
    def elsewhere() -> None:
        return None

    try:
        late = elsewhere.with_options(expires=PAST).enqueue()
        later = elsewhere.with_options(expires=PAST, delay=3600).enqueue()  # scheduled
        child = elsewhere.with_options(depends_on=[late]).enqueue()
        kept = elsewhere.with_options(expires=datetime.timedelta(days=1)).enqueue()
        worker = conveyor.Worker(app, queues=["default"])  # never claims from "nobody"
        assert Pruner(worker, interval=60.0).expire_due() == 2
        assert late.refresh().state is JobState.EXPIRED
        assert later.refresh().state is JobState.EXPIRED
        assert child.refresh().state is JobState.CANCELLED
        assert kept.refresh().state is JobState.QUEUED

        runner = CliRunner()
        listed = runner.invoke(cli, ["jobs", "--url", url, "--state", "expired", "--json"])
        assert listed.exit_code == 0, listed.output
        assert {j["id"] for j in json.loads(listed.output)["jobs"]} == {late.id, later.id}
        status = runner.invoke(cli, ["status", "--url", url])
        assert status.exit_code == 0 and "expired" in status.output
        queues = runner.invoke(cli, ["queues", "--url", url, "--json"])
        assert queues.exit_code == 0, queues.output
        (nobody,) = [q for q in json.loads(queues.output) if q["queue"] == "nobody"]
        assert nobody["counts"]["expired"] == 2 and nobody["counts"]["queued"] == 1
        _dashboard_shows_expired(app, late.id)
    finally:
        app.close()


def _dashboard_shows_expired(app: conveyor.App, job_id: str) -> None:
    """The dashboard: the state badge of the job and the listing filtered on it."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from conveyor.web import create_app

    with TestClient(create_app(app), base_url="http://127.0.0.1") as client:
        page = client.get(f"/jobs/{job_id}")
        assert page.status_code == 200 and 'badge s-expired"' in page.text
        assert EXPIRED_REASON in page.text
        listing = client.get("/jobs", params={"state": "expired"})
        assert listing.status_code == 200 and job_id in listing.text
