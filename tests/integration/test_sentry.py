"""Sentry (conveyor.contrib.sentry) on a real worker: sentry-sdk's own client, with a
Transport subclass that keeps the envelopes it would send, and an in-process burst
worker running real jobs from a real SQLite file (thread and async pools).

Runs with whichever sentry-sdk is installed: the newest (3.x) in ``make test``, the
lowest the ``sentry`` extra declares (2.x) in ``.ci/lowest``."""

from __future__ import annotations

import base64
import logging
import os
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
    # later tests report nothing (sentry_sdk.get_global_scope() is 2.x's newer spelling)
    sentry_sdk.Scope.get_global_scope().set_client(None)


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
        # sentry-sdk 3 adds its own keys (exception_id) beside conveyor's two
        assert exc["mechanism"]["type"] == "conveyor" and exc["mechanism"]["handled"] is False
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


def test_the_sdk_version_under_test_is_a_supported_major() -> None:
    major = int(sentry_sdk.VERSION.split(".")[0])
    print(f"sentry-sdk {sentry_sdk.VERSION}")
    assert major in (2, 3)


CARD = "4111 1111 1111 1111"
TOKEN = "tok_live_very_secret_42"


def test_secret_arguments_never_reach_an_event(
    sentry: None, pool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sentry sends frames' local variables by default (on here, explicitly): the task's
    own frame holds ``card``, conveyor's runner frame the argument list, and a log line
    the task wrote becomes a breadcrumb. None of them may carry a secret's value."""
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", "k1:" + base64.b64encode(os.urandom(32)).decode())
    sentry_sdk.get_client().options["include_local_variables"] = True
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}", max_attempts=1)
    instrument(app)

    @app.task(name="shop.charge", secret=["card"])
    def charge(card: str, amount: int, token: conveyor.Secret[str] = "") -> None:
        logging.getLogger("shop").warning("charging %s with %s", card, token)
        sentry_sdk.add_breadcrumb(category="shop", message=f"charging {card} with {token}")
        sentry_sdk.capture_message(f"about to charge {card[-4:]} (card {card})")
        raise ValueError(f"card {card} declined for {amount}")

    job = charge.enqueue(CARD, 30, token=TOKEN)
    conveyor.Worker(app, pool=pool, burst=True).run(install_signals=False)
    assert job.refresh().state is JobState.DEAD
    sentry_sdk.get_client().flush()

    sent = b"".join(envelope.serialize() for envelope in Captured.envelopes)
    reported = events()
    error = next(e for e in reported if e.get("exception"))
    message = next(e for e in reported if str(e.get("message", "")).startswith("about"))
    # Both events arrived, scrubbed, with what is not secret kept for debugging.
    assert message["message"] == "about to charge 1111 (card •••)"
    (exc,) = error["exception"]["values"]
    assert exc["value"] == "card ••• declined for 30"
    frames = exc["stacktrace"]["frames"]
    task_frame = next(f for f in frames if f["function"] == "charge")
    assert task_frame["vars"]["amount"] == "30" and "•••" in task_frame["vars"]["card"]
    crumbs = [c["message"] for c in message["breadcrumbs"]["values"] if c["category"] == "shop"]
    # one from add_breadcrumb, and on sentry-sdk 2 one from its logging integration
    assert crumbs and set(crumbs) == {"charging ••• with •••"}
    # Nowhere in what would have been sent: not in frames, breadcrumbs or messages.
    for secret in (CARD, TOKEN, CARD.replace(" ", "")):
        i = sent.find(secret.encode())
        assert i < 0, sent[max(0, i - 300) : i + 60]
