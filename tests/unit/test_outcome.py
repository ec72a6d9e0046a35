"""What an attempt's outcome becomes: a refused result is dead at once, a task's own
exception is retried; and the examples in the worker modules' docstrings hold."""

from __future__ import annotations

import doctest
import json
import sqlite3
import types

import pytest

import conveyor.codec
import conveyor.metrics
import conveyor.worker.eventlog
import conveyor.worker.outcome
import conveyor.worker.runner
from conveyor.backends.base import ClaimedJob, JobFinishParams
from conveyor.errors import EncodeError
from conveyor.rules import REFUSED_REASON
from conveyor.states import FinishKind
from conveyor.worker.executors.wire import outcome_from_wire, outcome_to_wire
from conveyor.worker.outcome import (
    REFUSED,
    Outcome,
    RemoteError,
    finish_params,
    refused_finish,
    too_large_for_store,
)


def _job(attempt: int = 1, max_attempts: int = 5) -> ClaimedJob:
    return ClaimedJob("j", "t", "q", "{}", attempt, max_attempts, 1, None, 30.0, 0.0, 0.0, 0, 0)


def test_a_refused_result_is_dead_at_once_whatever_attempts_are_left() -> None:
    outcome = Outcome.refused(EncodeError("cannot encode result: object of type set ..."))
    params = finish_params(outcome, _job(attempt=1, max_attempts=5), None, "w1")
    assert params.kind is FinishKind.DEAD
    assert params.reason == REFUSED_REASON
    assert json.loads(params.error or "{}")["type"] == "EncodeError"


def test_the_same_error_raised_by_the_task_is_retried() -> None:
    # A task's own EncodeError (say, from an enqueue inside it) is the task's failure.
    outcome = Outcome.failed(EncodeError("cannot encode argument 'x'"))
    assert finish_params(outcome, _job(), None, "w1").kind is FinishKind.RETRY


def test_a_refusal_crosses_the_process_pool_wire() -> None:
    sent = Outcome.refused(EncodeError("cannot encode result: nan is not a JSON number"))
    back = outcome_from_wire(outcome_to_wire(sent))
    assert back.status == REFUSED and back.error_json == sent.error_json
    assert isinstance(back.error, RemoteError) and back.error.type_name == "EncodeError"
    assert finish_params(back, _job(), None, "w1").kind is FinishKind.DEAD


class ResponseError(Exception):
    """Named as redis-py's: the classification goes by the drivers' names and codes."""


class PgError(Exception):
    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _toobig() -> sqlite3.DataError:
    exc = sqlite3.DataError("string or blob too big")
    exc.sqlite_errorcode = 18  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(
    ("refusal", "too_large"),
    [
        (_toobig(), True),
        (ResponseError("Protocol error: invalid bulk length"), True),
        (ResponseError("ERR string exceeds maximum allowed size (proto-max-bulk-len)"), True),
        (PgError("total size of jsonb array elements exceeds the maximum", "54000"), True),
        (ResponseError("OOM command not allowed when used memory > 'maxmemory'"), False),
        (ResponseError("READONLY You can't write against a read only replica."), False),
        (PgError("deadlock detected", "40P01"), False),
        (sqlite3.IntegrityError("UNIQUE constraint failed"), False),
    ],
)
def test_only_a_size_refusal_counts_as_one(refusal: BaseException, too_large: bool) -> None:
    assert too_large_for_store(refusal) is too_large


def test_a_size_refusal_is_found_behind_what_wraps_it() -> None:
    wrapper = RuntimeError("the backend says: string or blob too big")
    wrapper.__cause__ = _toobig()
    assert too_large_for_store(wrapper)
    assert not too_large_for_store(RuntimeError("string or blob too big"))  # codes, not words


def test_a_result_too_large_for_the_store_ends_dead_an_error_too_large_keeps_its_retry() -> None:
    ok = JobFinishParams("j", 1, FinishKind.SUCCEEDED, "w1", 1, '"' + "x" * 98 + '"')
    dead = refused_finish(ok, _toobig())
    assert dead is not None and dead.kind is FinishKind.DEAD and dead.result is None
    assert dead.reason == REFUSED_REASON
    assert json.loads(dead.error or "{}")["message"].startswith(
        "the store refused to write the result (100 characters): DataError"
    )
    huge = json.dumps({"type": "ValueError", "message": "x" * 1000, "traceback": ""})
    retry = JobFinishParams("j", 1, FinishKind.RETRY, "w1", 1, None, huge, None, 5.0)
    kept = refused_finish(retry, _toobig())
    assert kept is not None and kept.kind is FinishKind.RETRY and kept.run_at == 5.0
    assert json.loads(kept.error or "{}")["type"] == "FinishRefused"
    assert refused_finish(ok, ResponseError("OOM command not allowed")) is None  # it passes
    snooze = JobFinishParams("j", 1, FinishKind.SNOOZE, "w1", 1)
    assert refused_finish(snooze, _toobig()) is None


@pytest.mark.parametrize(
    "module",
    [
        conveyor.codec,
        conveyor.metrics,
        conveyor.worker.eventlog,
        conveyor.worker.outcome,
        conveyor.worker.runner,
    ],
)
def test_doctests(module: types.ModuleType) -> None:
    assert doctest.testmod(module).failed == 0
