"""Transactional steps (``@app.step(transaction=True)``, issue 23): a step's writes
through ``current_job().transaction()`` commit with its checkpoint, on the stores of
feature ``transactional_completion`` (SQLite, PostgreSQL); the others refuse. The
application's table and its connection: tests/contract/test_transactional_completion.py.
"""

from __future__ import annotations

import pytest

import conveyor
from conveyor.backends.base import JobReleaseParams
from conveyor.states import JobState
from tests.contract.test_transactional_completion import AT_ONCE, FEATURE, _rows, table
from tests.support.flow import drain, needs

__all__ = ["table"]  # the fixture, shared with transactional completion's tests


def test_a_transactional_step_takes_effect_once(app: conveyor.App, table: str) -> None:
    # Its first run raises after writing: rolled back, run again (the step's own retry).
    # The job then fails after the step: its retry serves the step, which writes nothing.
    runs: list[int] = []

    @app.step(name="debit", transaction=True, max_attempts=2, retry=AT_ONCE)
    def debit(order_id: int) -> str:
        runs.append(len(runs) + 1)
        with conveyor.current_job().transaction() as conn:
            conn.execute(f"INSERT INTO {table} VALUES ({len(runs)}, 'debit {order_id}')")
        if len(runs) == 1:
            raise RuntimeError("bank timeout after the write")
        return f"debited {order_id}"

    @app.task(max_attempts=2, retry=AT_ONCE)
    def pay(order_id: int) -> str:
        done = debit(order_id)
        if conveyor.current_job().attempt == 1:
            raise RuntimeError("crash after the step")
        return done

    job = pay.enqueue(7)
    drain(app)
    assert job.result(timeout=5) == "debited 7"
    assert runs == [1, 2]
    assert _rows(app, table) == [(2, "debit 7")]  # the failed run's row never landed
    (step,) = job.steps()
    assert (step.name, step.state, step.attempts) == ("debit", "succeeded", 2)


def test_a_stale_transactional_step_lands_nothing(app: conveyor.App, table: str) -> None:
    runs: list[int] = []

    @app.step(name="write", transaction=True)
    def write() -> int:
        runs.append(len(runs) + 1)
        ctx = conveyor.current_job()
        if len(runs) == 1:  # the job is taken from this run before its checkpoint
            # (released before the write: on SQLite the step's write holds the file's
            # write lock until its commit, so a release after it would wait for it)
            (record,) = app.backend.job_get_many([ctx.id])
            assert record.token is not None and record.worker_id is not None
            app.backend.job_release_many(
                JobReleaseParams(record.worker_id, [(ctx.id, record.token)])
            )
        with ctx.transaction() as conn:
            conn.execute(f"INSERT INTO {table} VALUES ({len(runs)}, 'run {len(runs)}')")
        return len(runs)

    @app.task(max_attempts=3, retry=AT_ONCE)
    def job_of_one_step() -> int:
        return int(write())

    job = job_of_one_step.enqueue()
    drain(app)
    assert job.result(timeout=5) == 2
    assert _rows(app, table) == [(2, "run 2")]  # the stale run's write was rolled back


def test_a_store_without_the_feature_refuses_a_transactional_step(app: conveyor.App) -> None:
    needs(app.backend, "steps")
    if FEATURE in app.backend.features:
        pytest.skip(f"backend {app.backend.name!r} declares {FEATURE!r} (tested above)")

    @app.step(name="tx", transaction=True)
    def tx() -> int:
        return 1

    @app.task(max_attempts=1)
    def uses() -> int:
        return int(tx())

    job = uses.enqueue()
    drain(app)
    record = job.refresh()
    assert record.state is JobState.DEAD
    assert "transaction=True" in (record.error or "")
    assert [s.state for s in job.steps()] == ["failed"]  # the refusal, shown on the step
