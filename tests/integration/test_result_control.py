"""Result control per task: ``store_result=False`` (the job succeeds, nothing is encoded
or stored) and ``result_ttl`` (results cleared after it, the job kept), with a real
worker on a real SQLite file, and in the testing modes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor import JobState, ResultNotStored
from conveyor.options import OptionTypeError, OptionValueError


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
