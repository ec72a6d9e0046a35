"""Periodic jobs: slots, catch-up policies, exactly once per slot, status."""

from __future__ import annotations

import datetime
import time

import pytest
from click.testing import CliRunner

import conveyor
from conveyor.backends.base import Backend, JobListParams, PeriodicFireParams
from conveyor.cli.main import cli
from conveyor.errors import ConfigurationError
from conveyor.worker.worker import Worker
from tests.support.flow import needs


def _schedule(app: conveyor.App, catch_up: str, every: float = 10.0) -> object:
    @app.periodic(every=every, catch_up=catch_up, name=f"s-{catch_up}")
    @app.task(name=f"t-{catch_up}")
    def tick() -> None: ...

    return app.schedules[f"s-{catch_up}"]


def test_catch_up_policies() -> None:
    app = conveyor.App("sqlite:///:memory:")
    now = 1000.0 + 5  # slots every 10 s: ..., 970, 980, 990, 1000
    latest, every, none = (_schedule(app, c) for c in ("latest", "all", "none"))
    assert latest.due_slots(950.0, now) == [1000.0]  # type: ignore[attr-defined]
    assert every.due_slots(950.0, now) == [960.0, 970.0, 980.0, 990.0, 1000.0]  # type: ignore[attr-defined]
    assert none.due_slots(950.0, now) == []  # type: ignore[attr-defined]  (1000 is 5 s old)
    assert none.due_slots(950.0, 1001.0) == [1000.0]  # type: ignore[attr-defined]
    # never fired: nothing older than MISSED_AFTER
    assert every.due_slots(None, 1003.0) == [1000.0]  # type: ignore[attr-defined]
    assert every.due_slots(1000.0, 1003.0) == []  # type: ignore[attr-defined]


def test_cron_schedule_and_bad_options() -> None:
    app = conveyor.App("sqlite:///:memory:")

    @app.periodic(cron="*/5 * * * *", tz="Europe/Paris")
    def sweep() -> None: ...

    schedule = next(iter(app.schedules.values()))
    at = datetime.datetime(2026, 1, 1, 12, 3, tzinfo=datetime.UTC).timestamp()
    assert schedule.next_after(at) == at + 120
    assert schedule.due_slots(at - 600, at) == [at - 180]
    with pytest.raises(ConfigurationError):
        app.periodic(cron="* * * * *", every=1)
    with pytest.raises(ConfigurationError):
        app.periodic(every=1, tz="Mars/Olympus")
    with pytest.raises(ConfigurationError):
        app.periodic(every=1, catch_up="some")


def test_each_slot_fires_once(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "periodic")
    schedule = _schedule(app, "all")
    params = schedule.job_params  # type: ignore[attr-defined]
    first = backend.periodic_fire(
        PeriodicFireParams("s-all", "every 10s", [(10.0, params()), (20.0, params())], 30.0)
    )
    again = backend.periodic_fire(
        PeriodicFireParams("s-all", "every 10s", [(20.0, params()), (30.0, params())], 40.0)
    )
    assert first == [10.0, 20.0] and again == [30.0]
    assert len(backend.job_list(JobListParams(task="t-all"))) == 3
    (record,) = backend.periodic_list()
    assert record.last_slot == 30.0 and record.next_slot == 40.0


def test_worker_scheduler_fires_and_status_shows_it(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "periodic")
    ran: list[float] = []

    @app.periodic(every=0.2, catch_up="all")
    @app.task
    def beat() -> None:
        ran.append(time.time())

    worker = Worker(app, concurrency=2).start()
    time.sleep(1.2)
    worker.stop()
    jobs = backend.job_list(JobListParams(task=beat.name, limit=1000))
    assert 3 <= len(jobs) <= 8
    assert len(ran) >= 3
    (record,) = backend.periodic_list()
    assert record.next_slot is not None and record.last_slot is not None
    out = CliRunner().invoke(cli, ["status", "--url", app.url])
    assert out.exit_code == 0, out.output
    assert "periodic" in out.output and "every 0.2s" in out.output
