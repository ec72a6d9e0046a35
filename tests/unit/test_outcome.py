"""What an attempt's outcome becomes: a refused result is dead at once, a task's own
exception is retried; and the examples in the worker modules' docstrings hold."""

from __future__ import annotations

import doctest
import json
import types

import pytest

import conveyor.codec
import conveyor.metrics
import conveyor.worker.eventlog
import conveyor.worker.outcome
import conveyor.worker.runner
from conveyor.backends.base import ClaimedJob
from conveyor.errors import EncodeError
from conveyor.rules import REFUSED_REASON
from conveyor.states import FinishKind
from conveyor.worker.executors.wire import outcome_from_wire, outcome_to_wire
from conveyor.worker.outcome import REFUSED, Outcome, RemoteError, finish_params


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
