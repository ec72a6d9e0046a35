"""Sentry (conveyor.contrib.sentry) on a real worker: sentry-sdk's own client, with a
Transport subclass that keeps the envelopes it would send, and an in-process burst
worker running real jobs from a real SQLite file (thread and async pools)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

# The dev extra brings sentry-sdk: missing, this module fails to import (never a skip).
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

import conveyor
from conveyor.contrib.sentry import instrument
from conveyor.states import JobState


class Captured(Transport):
    """Keeps every envelope instead of sending it."""

    envelopes: ClassVar[list[Envelope]] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        Captured.envelopes.append(envelope)


def events() -> list[dict[str, Any]]:
    found = []
    for envelope in Captured.envelopes:
        event = envelope.get_event()
        if event is not None:
            found.append(event)
    return found


@pytest.fixture
def sentry() -> Iterator[None]:
    Captured.envelopes = []
    sentry_sdk.init(dsn="https://key@sentry.invalid/1", transport=Captured)
    yield
    sentry_sdk.get_client().close()
    sentry_sdk.get_global_scope().set_client(None)  # later tests report nothing


@pytest.fixture(params=["thread", "async"])
def pool(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def test_task_errors_are_reported_with_the_job_as_context(
    sentry: None, pool: str, tmp_path: Path
) -> None:
    app = conveyor.App(
        f"sqlite:///{tmp_path / 'jobs.db'}",
        max_attempts=2,
        retry=conveyor.Backoff(base=0.0, jitter=0.0),
    )
    instrument(app)

    @app.task(name="billing.charge", queue="billing")
    def charge(amount: int) -> None:
        raise ValueError(f"card declined for {amount}")

    @app.task(name="billing.ok", queue="billing")
    async def fine() -> str:
        return "ok"

    bad, good = charge.enqueue(12), fine.enqueue()
    conveyor.Worker(app, pool=pool, queues=["billing"], burst=True).run(install_signals=False)
    assert bad.refresh().state is JobState.DEAD and good.result(timeout=1) == "ok"
    sentry_sdk.get_client().flush()

    reported = events()
    # One per failed attempt, nothing else (the successful job, the worker's own log
    # lines through Sentry's logging integration: none).
    assert len(reported) == 2 and all(e.get("exception") for e in reported)
    reported.sort(key=lambda e: e["tags"]["conveyor.attempt"])
    for attempt, event in enumerate(reported, 1):
        (exc,) = event["exception"]["values"]
        assert exc["type"] == "ValueError" and exc["value"] == "card declined for 12"
        assert exc["mechanism"] == {"type": "conveyor", "handled": False}
        assert any(f["function"] == "charge" for f in exc["stacktrace"]["frames"])
        assert event["tags"] == {
            "conveyor.job_id": bad.id,
            "conveyor.task": "billing.charge",
            "conveyor.queue": "billing",
            "conveyor.attempt": str(attempt),
        }
        assert event["contexts"]["conveyor"] == {
            "job_id": bad.id,
            "task": "billing.charge",
            "queue": "billing",
            "attempt": attempt,
            "max_attempts": 2,
            "final_attempt": attempt == 2,
        }
        assert event["transaction"] == "billing.charge"

    # The attempt's scope is gone: an event outside a job carries none of its tags.
    sentry_sdk.capture_message("outside any job")
    sentry_sdk.get_client().flush()
    (outside,) = [e for e in events() if e.get("message") == "outside any job"]
    assert "conveyor.job_id" not in outside.get("tags", {})
