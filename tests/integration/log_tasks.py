"""Tasks run by the worker-log tests' real worker processes (URL from $CONVEYOR_URL)."""

from __future__ import annotations

import logging
import os

import conveyor

# Fast liveness (a killed worker is rescued within a second) and a fixed 0.5 s retry
# delay, so "next run at" in a failure line is a time the test can check.
app = conveyor.App(
    heartbeat_interval=0.2,
    heartbeat_ttl=3.0,
    rescue_interval=0.2,
    retry=conveyor.Backoff(base=0.5, factor=1, max=0.5, jitter=0),
)


def _note(marker: str) -> None:
    if marker:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()} {conveyor.current_job().attempt}\n")


@app.task(max_attempts=2)
def flaky() -> None:
    raise ValueError("boom 42")


@app.task
def noop() -> None:
    pass


@app.task
def patient(marker: str = "") -> str:
    """Waits (cooperatively) until cancelled or released, up to 30 s."""
    _note(marker)
    ctx = conveyor.current_job()
    ctx.wait_cancelled(30)
    ctx.raise_if_cancelled()
    return "not cancelled"


@app.task(queue="mail")
def send(to: str) -> str:
    return to


@app.task
def chatty(size: int) -> None:
    """Logs one line of ``size`` bytes (seed 002's 16 KiB JSON-like line)."""
    logging.getLogger("tests.chatty").info("x" * size)


@app.task(max_attempts=5)
def tags() -> set[str]:
    """Returns a set, which the codec refuses: dead at once, never retried."""
    return {"a", "b"}
