"""Contract: queue pause / resume / list; a claim never takes a job of a paused queue."""

from __future__ import annotations

import pytest

import conveyor
from conveyor.backends.base import Backend, JobClaimParams, QueuePauseParams, QueueResumeParams
from tests.support.features import needs


@pytest.fixture(autouse=True)
def _needs_queues(backend: Backend) -> None:
    needs(backend, "queues")


def test_pause_blocks_claims_until_resume(app: conveyor.App, backend: Backend) -> None:
    @app.task(name="t.q")
    def q() -> None: ...

    q.enqueue()
    q.with_options(queue="mail").enqueue()
    backend.queue_pause(QueuePauseParams("mail"))
    got = backend.job_claim(JobClaimParams("w", [("mail", 5), ("default", 5)], 10))
    assert [j.queue for j in got] == ["default"]
    listed = {i.queue: i for i in backend.queue_list()}
    assert listed["mail"].paused and listed["mail"].counts == {"queued": 1}
    assert not listed["default"].paused
    backend.queue_resume(QueueResumeParams("mail"))
    assert [j.queue for j in backend.job_claim(JobClaimParams("w", [("mail", 5)], 5))] == ["mail"]
    assert not {i.queue: i for i in backend.queue_list()}["mail"].paused


def test_pause_of_an_empty_queue_is_listed(backend: Backend) -> None:
    backend.queue_pause(QueuePauseParams("later"))
    assert [(i.queue, i.paused, i.counts) for i in backend.queue_list()] == [("later", True, {})]
