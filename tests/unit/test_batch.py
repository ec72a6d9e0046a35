"""Batch handlers' declaration checks, the pools that refuse them, and how a batch
task runs outside a worker (a call of one: the testing modes, ``task.execute``)."""

from __future__ import annotations

import math

import pytest

import conveyor
from conveyor.errors import ConfigurationError
from conveyor.worker.worker import Worker


def _app() -> conveyor.App:
    return conveyor.App("sqlite:///:memory:")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"size": 0}, "Batch size must be an integer from 1 to 10000, got 0"),
        ({"size": 2.5}, "Batch size must be an integer from 1 to 10000, got 2.5"),
        ({"size": True}, "Batch size must be an integer from 1 to 10000, got True"),
        ({"wait": -1}, "Batch wait must be a number of seconds >= 0, got -1"),
        ({"wait": math.inf}, "Batch wait must be a number of seconds >= 0, got inf"),
    ],
)
def test_batch_options_are_checked_with_one_line(given: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        conveyor.Batch(**given)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_batch_refuses_what_it_cannot_be_combined_with() -> None:
    app = _app()
    with pytest.raises(ConfigurationError, match="cannot take sequence_key"):
        app.task(batch=conveyor.Batch(), sequence_key="k")(lambda items: None)
    with pytest.raises(ConfigurationError, match="cannot take secret"):
        app.task(batch=conveyor.Batch(), secret=["token"])(lambda items: None)
    with pytest.raises(ConfigurationError, match=r"batch must be conveyor.Batch\(size=, wait=\)"):
        app.task(batch=100)(lambda items: None)
    with pytest.raises(TypeError, match="unknown"):  # per task, not an app default
        conveyor.App("sqlite:///:memory:", batch=conveyor.Batch())


@pytest.mark.parametrize("pool", ["process", "interpreter"])
def test_a_process_or_interpreter_pool_refuses_a_batch_task_at_start(pool: str) -> None:
    app = _app()

    @app.task(name="send", batch=conveyor.Batch(size=10))
    def send(items: list[conveyor.BatchItem[[str]]]) -> None: ...

    with pytest.raises(ConfigurationError) as raised:
        Worker(app, pool=pool, app_spec="x:app")
    assert str(raised.value) == (
        f"batch task send needs --pool thread or async: a {pool} pool runs one job per call"
    )


def test_the_claim_allowance_grows_to_the_batch_size_whatever_the_prefetch() -> None:
    app = _app()

    @app.task(batch=conveyor.Batch(size=64), queue="mail")
    def send(items: list[conveyor.BatchItem[[str]]]) -> None: ...

    assert Worker(app, queues=["mail"], prefetch=0).claims.extra() == 64
    assert Worker(app, queues=["other"], prefetch=0).claims.extra() == 0


def test_outside_a_worker_each_job_is_a_call_of_one() -> None:
    app = _app()
    calls: list[list[tuple[object, ...]]] = []

    @app.task(batch=conveyor.Batch(size=10), max_attempts=1)
    def double(items: list[conveyor.BatchItem[[int]]]) -> list[object]:
        calls.append([item.args for item in items])
        return [ValueError("negative") if i.args[0] < 0 else 2 * i.args[0] for i in items]

    assert double.execute(4) == 8
    with pytest.raises(ValueError, match="negative"):
        double.execute(-1)
    with app.testing("inline"):
        assert double.enqueue(5).result() == 10
    with app.testing("capture") as captured:
        jobs = [double.enqueue(n) for n in (1, 2, -3)]
        captured.drain()
        states = [job.refresh().state.value for job in jobs]
    assert states == ["succeeded", "succeeded", "dead"]
    assert calls == [[(4,)], [(-1,)], [(5,)], [(1,)], [(2,)], [(-3,)]]


def test_a_body_answering_the_wrong_count_fails_its_items() -> None:
    app = _app()

    @app.task(batch=conveyor.Batch(size=10), max_attempts=1)
    def short(items: list[conveyor.BatchItem[[int]]]) -> list[int]:
        return []

    with pytest.raises(TypeError, match="returned 0 outcome"):
        short.execute(1)
