"""Tasks for the pool tests, importable by worker subprocesses, child processes and
subinterpreters as ``tests.integration.pool_tasks:app`` (run with cwd = repo root).

The store URL is ``$CONVEYOR_URL`` for worker subprocesses; in-process tests point
``app.url`` at their own tmp database. Children and subinterpreters only run tasks (they
never open the store), so their copy's URL does not matter.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import conveyor

app = conveyor.App(
    os.environ.get("CONVEYOR_URL", "sqlite:///:memory:"),
    heartbeat_interval=0.2,
    heartbeat_ttl=2.0,
    rescue_interval=0.2,
    max_attempts=3,
    retry=conveyor.Backoff(base=0.0, jitter=0.0),  # retries due at once: tests stay fast
)


@app.task(name="pool.add")
def add(a: int, b: int) -> int:
    return a + b


@app.task(name="pool.flaky")
def flaky() -> str:
    """Fails on its first attempt, succeeds on the next."""
    if conveyor.current_job().attempt == 1:
        raise ValueError("first attempt fails")
    return f"ok on attempt {conveyor.current_job().attempt}"


@app.task(name="pool.sleepy")
def sleepy(seconds: float) -> str:
    # Short sleeps: the thread and interpreter pools interrupt between bytecodes only.
    # Cooperative: stops early when the worker asks (cancel, release at shutdown).
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        conveyor.current_job().raise_if_cancelled()
        time.sleep(0.01)
    return "slept"


@app.task(name="pool.asleepy")
async def asleepy(seconds: float) -> str:
    import asyncio

    await asyncio.sleep(seconds)
    return "slept"


@app.task(name="pool.crash_once")
def crash_once(code: int) -> str:
    """Kills its own process on the first attempt (a crashing C extension, an OOM kill)."""
    if conveyor.current_job().attempt == 1:
        os._exit(code)
    return "recovered"


@app.task(name="pool.pid")
def pid() -> int:
    return os.getpid()


@app.task(name="pool.block_once")
def block_once(marker: str) -> str:
    """First attempt: say it started (marker file), then block for a long time."""
    if conveyor.current_job().attempt == 1:
        Path(marker).write_text(str(os.getpid()))
        sleepy(30.0)
    return f"done on attempt {conveyor.current_job().attempt}"


@app.task(name="pool.stubborn_once")
def stubborn_once(marker: str) -> str:
    """Like block_once, but ignores cancellation (a blocking C call)."""
    if conveyor.current_job().attempt == 1:
        Path(marker).write_text(str(os.getpid()))
        time.sleep(30.0)
    return f"done on attempt {conveyor.current_job().attempt}"


class Scale(app.Task):
    """A class-based task under its default name (``module.qualname``), which the
    children and subinterpreters find by importing this module, as for a function.
    Fails its first attempt; ``retry_delay`` archives a ``LookupError`` at once."""

    def execute(self, x: int, by: int = 2) -> int:
        if x < 0:
            raise LookupError("negative: archived by retry_delay")
        if conveyor.current_job().attempt == 1:
            raise ValueError("first attempt fails")
        return x * by

    @classmethod
    def retry_delay(cls, attempt: int, error: BaseException) -> float | str | None:
        # process and interpreter pools hand back a RemoteError carrying the type name
        kind = getattr(error, "type_name", type(error).__name__)
        return "archive" if kind == "LookupError" else 0.0


class AsyncScale(app.Task, queue="default", max_attempts=2):
    async def execute(self, x: int) -> list[int]:
        import asyncio

        await asyncio.sleep(0)
        return [x, x * 3]


@app.task(name="pool.opaque", store_result=False)
def opaque() -> object:
    """Returns what JSON cannot hold: with store_result=False it is never encoded."""
    return object()


# -- durable jobs in every pool (tests/integration/test_pool_steps.py) ----------------------


@app.step(name="pool.note")
def note(log: str, text: str) -> str:
    """A step that leaves a line per run in ``log`` (O_APPEND): a replay adds none."""
    with open(log, "a") as f:
        f.write(f"{text}\n")
    return text.upper()


@app.step(name="pool.anote")
async def anote(log: str, text: str) -> str:
    with open(log, "a") as f:
        f.write(f"{text}\n")
    return text.upper()


@app.task(name="pool.flow")
def flow(log: str) -> list[object]:
    """Every durable call in a sync task: step, sleep, spawn/join, publish, wait_for."""
    first = note(log, "charge")
    conveyor.sleep(0.2)
    child = conveyor.spawn(add, 20, 22)
    total = conveyor.join(child)
    conveyor.current_job().publish("total", total)
    answer = conveyor.wait_for("approved", timeout=60)
    return [first, total, answer, note(log, "ship")]


@app.task(name="pool.aflow")
async def aflow(log: str) -> list[object]:
    """The same in an async task (its steps awaited)."""
    first = await anote(log, "charge")
    conveyor.sleep(0.2)
    answer = conveyor.wait_for("approved", timeout=60)
    return [first, answer, await anote(log, "ship")]


@app.task(name="pool.approve")
def approve(log: str) -> list[object]:
    """A step, a wait that parks, a step: two bursts of a worker on any store."""
    return [note(log, "charge"), conveyor.wait_for("approved", timeout=60), note(log, "ship")]
