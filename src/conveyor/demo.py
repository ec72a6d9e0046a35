"""Sample tasks for ``conveyor demo`` (importable, so a separate worker can run them too:
``conveyor worker conveyor.demo:app --queue default --queue slow``).

Example:
    >>> square(7)
    49
"""

from __future__ import annotations

import os
import time

import conveyor

DEMO_URL = os.environ.get("CONVEYOR_DEMO_URL", "sqlite:///.conveyor-demo/demo.db")

app = conveyor.App(DEMO_URL, retry=conveyor.Backoff(base=0.05, factor=2, max=0.5))


@app.task(name="demo.square")
def square(n: int) -> int:
    """Fast: a little arithmetic."""
    return n * n


@app.task(name="demo.sleepy", queue="slow")
def sleepy(ms: int) -> int:
    """Slow: sleeps ``ms`` milliseconds."""
    time.sleep(ms / 1000)
    return ms


@app.task(name="demo.flaky")
def flaky(n: int, failures: int) -> str:
    """Fails its first ``failures`` attempts, then succeeds (retried with backoff)."""
    job = conveyor.current_job()
    if job.attempt <= failures:
        raise ConnectionError(f"flaky #{n}: attempt {job.attempt} hit a transient error")
    return f"flaky #{n} ok on attempt {job.attempt}"


@app.task(name="demo.doomed", max_attempts=2)
def doomed(n: int) -> None:
    """Always fails: ends ``dead`` after 2 attempts, error and traceback kept."""
    raise ValueError(f"doomed #{n} cannot succeed")
