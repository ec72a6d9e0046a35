"""Tasks and middlewares for the middleware tests, importable by pool children as
``tests.integration.hook_tasks:app`` (run with cwd = repo root).

No middleware is added at import: the tests add them after the app was loaded, so a
process or interpreter child only has them if the worker passed their class names on.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator
from typing import Any

import conveyor
from conveyor.context import JobContext
from conveyor.middleware import Attempt, NewJob

app = conveyor.App(
    os.environ.get("CONVEYOR_URL", "sqlite:///:memory:"),
    max_attempts=3,
    retry=conveyor.Backoff(base=0.0, jitter=0.0),  # retries due at once
)

#: What around_execute saw, read by the task body it wraps.
STAMP: contextvars.ContextVar[str] = contextvars.ContextVar("stamp")


class Stamp:
    """around_execute: tells the body (through a context variable) which job it wraps,
    and that it ran in the same thread/task/child as the body."""

    @contextlib.contextmanager
    def around_execute(self, job: JobContext) -> Iterator[None]:
        token = STAMP.set(f"{job.id}|{job.attempt}|{job.headers.get('tenant', '')}")
        try:
            yield
        finally:
            STAMP.reset(token)


class BrokenEnter:
    """around_execute that raises before the body: the attempt fails with this error."""

    @contextlib.contextmanager
    def around_execute(self, job: JobContext) -> Iterator[None]:
        raise RuntimeError("tracer unavailable")
        yield  # pragma: no cover


class Swallow:
    """around_execute that swallows the body's exception: still a failed attempt."""

    @contextlib.contextmanager
    def around_execute(self, job: JobContext) -> Iterator[None]:
        with contextlib.suppress(Exception):
            yield


class Recorder:
    """Every worker-side hook, recorded (added as an instance: parent process only)."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def on_start(self, job: JobContext) -> None:
        with self.lock:
            self.events.append(("start", job.id, job.attempt))

    def on_finish(self, job: JobContext, attempt: Attempt) -> None:
        with self.lock:
            self.events.append(("finish", job.id, job.attempt, attempt.outcome))

    def on_retry(self, job: JobContext, error: BaseException) -> None:
        with self.lock:
            self.events.append(("retry", job.id, job.attempt, _type_name(error)))

    def on_dead(self, job: JobContext, error: BaseException | None) -> None:
        with self.lock:
            self.events.append(("dead", job.id, job.attempt, _type_name(error)))


class TenantHeader:
    """on_enqueue: keeps a tenant the caller gave, else sets one; notes what it saw."""

    def on_enqueue(self, job: NewJob) -> None:
        job.headers["seen_tenant"] = job.headers.get("tenant", "")
        job.headers.setdefault("tenant", "from-middleware")


class BrokenEnqueue:
    def on_enqueue(self, job: NewJob) -> None:
        raise ValueError("metrics backend down")


def _type_name(error: BaseException | None) -> str | None:
    if error is None:
        return None
    return getattr(error, "type_name", None) or type(error).__name__


@app.task(name="hooks.stamped")
def stamped() -> dict[str, Any]:
    return {
        "stamp": STAMP.get(""),
        "pid": os.getpid(),
        "headers": dict(conveyor.current_job().headers),
    }


@app.task(name="hooks.astamped")
async def astamped() -> dict[str, Any]:
    return {"stamp": STAMP.get(""), "pid": os.getpid()}


@app.task(name="hooks.fails")
def fails() -> None:
    raise KeyError("always")


@app.task(name="hooks.noop")
def noop() -> str:
    return "ran"
