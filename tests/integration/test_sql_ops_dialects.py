"""The SQL engine's operations under the dialect choices no shipped store makes today:
no ``UPDATE ... RETURNING`` (MariaDB: ids selected locked, then updated) and id lists
split into chunks of two (a store whose parameters are capped low), on a real SQLite
file. The contract tests of the operations that take an app and its backend run on this
variant unchanged, so each choice must give the same answers as the stores'.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

import conveyor
from conveyor.backends.base import JobCancelParams
from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.backends.sqlite.dialect import SQLITE
from conveyor.states import JobState
from tests.contract import (
    test_cancel_wait,
    test_dashboard_reads,
    test_expires,
    test_job_filters,
    test_job_import,
    test_job_logs,
    test_queue,
    test_result_ttl,
    test_workflows,
)
from tests.contract.helpers import insert, register

#: The operations' contract modules (each test taking ``app`` and ``backend`` runs here).
MODULES: tuple[ModuleType, ...] = (
    test_cancel_wait,
    test_dashboard_reads,
    test_expires,
    test_job_filters,
    test_job_import,
    test_job_logs,
    test_queue,
    test_result_ttl,
    test_workflows,
)


class NoReturningSQLite(SQLiteBackend):
    """SQLite spelled as a store without RETURNING, with tiny IN lists."""

    _dialect = dataclasses.replace(SQLITE, name="sqlite-no-returning", returning=False, chunk=2)


def backend_only_tests() -> Iterator[tuple[str, Callable[..., None]]]:
    for module in MODULES:
        for name, fn in vars(module).items():
            if not (name.startswith("test_") and inspect.isfunction(fn)):
                continue
            if set(inspect.signature(fn).parameters) <= {"app", "backend"}:
                yield f"{module.__name__.rsplit('.', 1)[1]}::{name}", fn


TESTS = dict(backend_only_tests())


@pytest.fixture
def app(tmp_path: Path) -> Iterator[conveyor.App]:
    """An app whose store is the variant (as tests/conftest.py's app, on its URL)."""
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    application = conveyor.App(url, heartbeat_interval=0.2, heartbeat_ttl=2.0, rescue_interval=0.2)
    application._backend = NoReturningSQLite(url)
    yield application
    application.close()


def test_the_variant_runs_enough_of_the_contract() -> None:
    # A rename of the contract's fixtures must not silently leave nothing to run here.
    assert len(TESTS) >= 35


@pytest.mark.parametrize("name", sorted(TESTS))
def test_contract_without_returning_and_with_small_chunks(name: str, app: conveyor.App) -> None:
    fn = TESTS[name]
    given = {"app": app, "backend": app.backend}
    fn(**{p: given[p] for p in inspect.signature(fn).parameters})


def test_the_variant_sends_no_returning_and_small_lists(app: conveyor.App) -> None:
    # What the contract tests above prove is only worth something if this path ran.
    backend = app.backend
    assert isinstance(backend, NoReturningSQLite)
    register(backend)
    ids = insert(backend, 5)
    sent: list[str] = []
    backend.connection.set_trace_callback(sent.append)
    records = backend.job_cancel_many(JobCancelParams(ids))
    backend.connection.set_trace_callback(None)
    assert {r.state for r in records} == {JobState.CANCELLED}
    updates = [s for s in sent if s.startswith("UPDATE jobs SET state = 'cancelled'")]
    assert len(updates) == 3  # chunks of 2, 2 and 1
    assert not [s for s in sent if "RETURNING" in s]
