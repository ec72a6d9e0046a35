"""Result control per task: ``store_result=False`` (the job succeeds, nothing is encoded
or stored) and ``result_ttl`` (results cleared after it, the job kept), with a real
worker on a real SQLite file, and in the testing modes."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor import JobState, ResultNotStored
from conveyor.options import OptionTypeError, OptionValueError
from conveyor.worker.services.pruner import Pruner


@pytest.fixture
def app(tmp_path: Path) -> Iterator[conveyor.App]:
    application = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")
    yield application
    application.close()


def burst(app: conveyor.App, pool: str = "thread") -> None:
    conveyor.Worker(app, pool=pool, concurrency=1, burst=True).run(install_signals=False)


@pytest.mark.parametrize("pool", ["thread", "async"])
def test_store_result_false_succeeds_without_a_result(app: conveyor.App, pool: str) -> None:
    @app.task(store_result=False)
    def opaque() -> object:
        return object()  # not JSON: never encoded, so it cannot fail the job

    @app.task
    def kept() -> None:
        return None

    job, plain = opaque.enqueue(), kept.enqueue()
    burst(app, pool)
    record = job.wait(timeout=5)
    assert (record.state, record.result) == (JobState.SUCCEEDED, None)
    with pytest.raises(ResultNotStored, match="store_result=False"):
        job.result()
    # a task returning None stores "null": its result() is None, not an error
    assert plain.wait(timeout=5).result == "null"
    assert plain.result() is None


def test_store_result_false_in_the_testing_modes(app: conveyor.App) -> None:
    class Report(app.Task, store_result=False):
        def execute(self, day: str) -> str:
            return f"report {day}"

    with app.testing("inline"):
        job = Report.enqueue("monday")
        assert job.status is JobState.SUCCEEDED
        with pytest.raises(ResultNotStored):
            job.result()
    assert Report.task.execute("monday") is None  # nothing to decode
    assert Report().execute("monday") == "report monday"  # the body itself


def test_result_options_are_checked_where_given(app: conveyor.App) -> None:
    with pytest.raises(OptionTypeError, match="store_result"):
        app.task(store_result="no")(lambda: None)  # type: ignore[call-overload]
    with pytest.raises(OptionValueError, match="result_ttl"):
        app.task(result_ttl=0)(lambda: None)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="result_ttl"):
        conveyor.App("sqlite:///:memory:", result_ttl="1h")


def test_the_pruner_clears_results_past_their_ttl_once(app: conveyor.App) -> None:
    @app.task(result_ttl=datetime.timedelta(minutes=1))
    def short() -> int:
        return 1

    @app.task
    def forever() -> int:
        return 2

    class Brief(app.Task, result_ttl=60):
        def execute(self) -> int:
            return 3

    jobs = [short.enqueue(), forever.enqueue(), Brief.enqueue()]
    worker = conveyor.Worker(app, concurrency=1, burst=True)
    worker.run(install_signals=False)
    assert [j.result(timeout=5) for j in jobs] == [1, 2, 3]
    pruner = Pruner(worker, interval=60.0)
    finished = max(j.refresh().finished_at or 0.0 for j in jobs)
    assert pruner.clear_results(finished + 30) == 0  # within the ttl: kept
    assert pruner.clear_results(finished + 61) == 2
    with pytest.raises(ResultNotStored, match="result_ttl"):
        jobs[0].result()
    with pytest.raises(ResultNotStored, match="result_ttl=60"):
        jobs[2].result()
    assert jobs[1].result() == 2  # no result_ttl: kept as long as the job
    # the next pass starts where this one ended: nothing read twice, nothing left
    assert pruner.clear_results(finished + 3600) == 0
    assert all(j.refresh().state is JobState.SUCCEEDED for j in jobs)


def test_a_step_after_a_job_without_result_gets_none(app: conveyor.App) -> None:
    @app.task(store_result=False)
    def first() -> int:
        return 1

    @app.task
    def second(previous: int | None) -> str:
        return f"got {previous!r}"

    step = first.enqueue().then(second)
    burst(app)
    assert step.result(timeout=5) == "got None"
