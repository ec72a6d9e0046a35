"""Tasks run by real worker processes in the fault tests (``tests.faults.fault_tasks:app``).

The store URL is ``$CONVEYOR_URL``. Every task that does work appends one fixed-format
line ``<job id> <attempt> <pid>`` to ``$FAULT_MARKS`` with ``O_APPEND`` (one ``write``:
atomic between processes, survives a SIGKILL right after it), so a test counts how often
each job really ran, independently of what the store says.

The poison tasks each break their worker in one way a real task can: ``os.abort()``,
``os._exit(0)``, ``sys.exit(3)``, a C call that never returns (libc ``pause()`` through
ctypes: no bytecode runs, so nothing Python can interrupt it) and a memory leak.

Example (what a worker process runs)::

    CONVEYOR_URL=sqlite:///jobs.db FAULT_MARKS=marks.log \\
        conveyor worker tests.faults.fault_tasks:app --burst
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import sqlite3
import sys
import time
from pathlib import Path

import conveyor

#: Kept alive on purpose by ``leak``: the child's RSS only grows.
_LEAKED: list[bytes] = []


def mark() -> None:
    """Record that the current job ran (one atomic append; see the module docstring)."""
    path = os.environ.get("FAULT_MARKS")
    if not path:
        return
    job = conveyor.current_job()
    line = f"{job.id} {job.attempt} {os.getpid()}\n".encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def work(seconds: float = 0.0) -> int:
    """An innocent job: mark, then sleep ``seconds`` (cooperatively: a released job
    stops early instead of running on after its worker let it go)."""
    mark()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        conveyor.current_job().raise_if_cancelled()
        time.sleep(min(0.01, seconds))
    return os.getpid()


def hold(gate: str) -> int:
    """Mark, then run until the file ``gate`` is gone (a job that is surely running
    when the test sends its signal). Cooperative like ``work``."""
    mark()
    while Path(gate).exists():
        conveyor.current_job().raise_if_cancelled()
        time.sleep(0.01)
    return os.getpid()


async def ahold(gate: str) -> int:
    """``hold`` as a coroutine (the async pool's natural task)."""
    mark()
    while Path(gate).exists():
        await asyncio.sleep(0.01)
    return os.getpid()


def blob(size: int, seconds: float = 0.0) -> str:
    """An innocent job with a ``size``-byte result (every finish grows the store), after
    ``seconds`` of sleep (so a worker is surely busy when its disk fills up)."""
    mark()
    time.sleep(seconds)
    return "x" * size


def abort() -> None:
    """SIGABRT in the process running the task (a crashing C extension)."""
    mark()
    os.abort()


def exit0() -> None:
    """Leave the process at once with status 0, skipping every cleanup."""
    mark()
    os._exit(0)


def sysexit(code: int = 3) -> None:
    """``SystemExit`` raised inside the task (a CLI entry point reused as a task)."""
    mark()
    sys.exit(code)


async def asysexit(code: int = 3) -> None:
    """``sys.exit`` inside a coroutine: ``SystemExit`` escapes into the event loop."""
    mark()
    sys.exit(code)


def cstuck() -> None:
    """Block in libc ``pause()``: a C call that never returns and never runs bytecode."""
    mark()
    ctypes.CDLL(None, use_errno=True).pause()


def leak(mib: int = 40) -> int:
    """Leak ``mib`` MiB (touched, so it counts in RSS) and keep it for the process's life."""
    mark()
    _LEAKED.append(os.urandom(1024) * (mib * 1024))
    return len(_LEAKED)


def step_work(position: int, seconds: float) -> int:
    """A durable job's step (``fault.step``): one line ``step <job id> <position> <pid>
    <start time>`` appended at its start (the test compares it with the checkpoint's
    time: a run that starts after its step was saved is a step run twice), then a sleep.
    """
    job = conveyor.current_job()
    line = f"step {job.id} {position} {os.getpid()} {time.time():.6f}\n".encode()
    path = os.environ.get("FAULT_MARKS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    time.sleep(seconds)
    return position


def _append(line: str) -> None:
    path = os.environ.get("FAULT_MARKS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def seq_work(key: str, n: int, seconds: float) -> int:
    """A job of sequence ``key`` (``fault.seq``): ``seqstart <key> <n> <job id> <pid>
    <time>`` at its start, ``seqend ...`` at its end (a killed run has no end line), so
    the sequence storm checks order and overlap per key from the runs themselves."""
    job = conveyor.current_job()
    tag = f"{key} {n} {job.id} {os.getpid()}"
    _append(f"seqstart {tag} {time.time():.6f}\n")
    time.sleep(seconds)
    _append(f"seqend {tag} {time.time():.6f}\n")
    return n


def steps(count: int, seconds: float) -> int:
    """A durable job of ``count`` steps (``fault.steps``); returns the sum of positions."""
    return sum(_STEP(n, seconds) for n in range(count))


#: The table a transactional step writes its effect to (one row per run that committed).
EFFECTS = (
    "CREATE TABLE IF NOT EXISTS fault_effects (job_id TEXT NOT NULL, position INTEGER NOT NULL)"
)


def tx_step_work(position: int, seconds: float) -> int:
    """A transactional step (``fault.txstep``, SQLite and PostgreSQL): the mark and the
    sleep of :func:`step_work`, then one ``fault_effects`` row written through the step's
    transaction, which commits with its checkpoint: exactly one row per finished step."""
    step_work(position, seconds)
    job_id = conveyor.current_job().id
    with conveyor.current_job().transaction() as conn:
        sql = "INSERT INTO fault_effects (job_id, position) VALUES (?, ?)"
        if not isinstance(conn, sqlite3.Connection):
            sql = sql.replace("?", "%s")  # psycopg
        conn.execute(sql, (job_id, position))
    return position


def mixed_steps(count: int, seconds: float) -> int:
    """``fault.mixed_steps``: :func:`steps` whose odd positions are transactional."""
    return sum((_TX_STEP if n % 2 else _STEP)(n, seconds) for n in range(count))


#: Task name -> function. Names, not module paths: a producer app in the test process
#: registers the same functions under the same names (see ``make_app``).
TASKS = {
    "fault.work": work,
    "fault.hold": hold,
    "fault.ahold": ahold,
    "fault.blob": blob,
    "fault.abort": abort,
    "fault.exit0": exit0,
    "fault.sysexit": sysexit,
    "fault.asysexit": asysexit,
    "fault.cstuck": cstuck,
    "fault.leak": leak,
}


def make_app(url: str | None = None) -> conveyor.App:
    """The fault tests' app on ``url`` (default ``$CONVEYOR_URL``), every task registered.

    Short liveness timings so rescues happen in well under a second on one host (a dead
    PID is seen at once by the next rescuer); immediate retries keep the tests short.

    >>> make_app("sqlite:///:memory:").tasks["fault.work"](0.0) > 0
    True
    """
    application = conveyor.App(
        url,
        heartbeat_interval=0.2,
        heartbeat_ttl=3.0,
        rescue_interval=0.2,
        lease=2.0,
        max_attempts=3,
        retry=conveyor.Backoff(base=0.0, jitter=0.0),
        # The poison-pill cap; the durable storm raises it: a job of steps killed with
        # its worker four times is charged like any other (it made progress meanwhile).
        max_rescues=int(os.environ.get("FAULT_MAX_RESCUES", "3")),
    )
    for name, fn in TASKS.items():
        application.task(name=name)(fn)
    application.task(name="fault.steps", max_attempts=50)(steps)
    application.task(name="fault.seq", sequence_key=lambda key, n, seconds: key, max_attempts=50)(
        seq_work
    )
    application.task(name="fault.mixed_steps", max_attempts=50)(mixed_steps)
    return application


#: The step of ``fault.steps`` (a plain call outside a job; a step is not bound to an app).
_STEP = conveyor.App("memory://fault-steps").step(name="fault.step")(step_work)
_TX_STEP = conveyor.App("memory://fault-steps").step(name="fault.txstep", transaction=True)(
    tx_step_work
)

app = make_app()
