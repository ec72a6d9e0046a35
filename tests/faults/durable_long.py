"""Issue 23's durable fault proof at its full size, for ``python -m tests.faults --long``:
1,000 jobs of 5 steps, each step appending ``step <job> <position> ...`` to an
``O_APPEND`` file, 3 workers, one SIGKILLed every 0.5 s, on every store; and on Redis
and PostgreSQL the same storm with the store itself crashed and restarted once a third
of the steps have run (a redis-server with ``appendfsync always`` SIGKILLed and started
from its AOF; a PostgreSQL cluster stopped ``-m immediate`` and started with crash
recovery).

Checked (:func:`durable_run`): every job ends succeeded; no step runs after its saved
checkpoint (a step cut off mid-way may run again: counted, not a failure); on SQLite and
PostgreSQL the odd steps are transactional (``fault.mixed_steps``) and each wrote its
effect row exactly once.

Example::

    outcome = durable_run("sqlite:///jobs.db", tmp_path, "sqlite", 1000)
    assert outcome.ok, outcome.why
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.faults.durable import DurableStormResult, durable_storm, recovery
from tests.faults.fault_tasks import EFFECTS
from tests.faults.scenarios import AofRedis, Crashable, CrashablePostgres
from tests.support.redis_server import with_prefix

#: The stores whose steps can be transactional (the others refuse ``transaction=True``).
TRANSACTIONAL = ("sqlite", "postgres")
STEPS = 5


@dataclasses.dataclass
class DurableOutcome:
    """One run's verdict, for the suite's row (``tests/faults/__main__.py``)."""

    scenario: str
    backend: str
    n: int
    lost: int
    seconds: float
    ok: bool
    why: str
    detail: str
    storm: DurableStormResult | None


def _connect(url: str) -> contextlib.AbstractContextManager[object]:
    if url.startswith("sqlite"):
        return contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///")))
    import psycopg

    return psycopg.connect(url, autocommit=True)


def prepare_effects(url: str) -> None:
    """The transactional steps' table, in the store's database (default schema)."""
    with _connect(url) as conn:
        conn.execute(EFFECTS)  # type: ignore[attr-defined]
        if isinstance(conn, sqlite3.Connection):
            conn.commit()


def effects(url: str) -> collections.Counter[tuple[str, int]]:
    """Rows per ``(job, position)`` the transactional steps committed."""
    with _connect(url) as conn:
        rows = conn.execute("SELECT job_id, position FROM fault_effects").fetchall()  # type: ignore[attr-defined]
    return collections.Counter((str(j), int(p)) for j, p in rows)


def durable_run(
    url: str, directory: Path, backend: str, n: int, *, restart: Crashable | None = None,
    timeout: float = 1200.0,
) -> DurableOutcome:  # fmt: skip
    """The storm (and the store's restart, with ``restart``), then every check."""
    transactional = backend in TRANSACTIONAL
    if transactional:
        prepare_effects(url)
    restarted: list[float] = []

    def crash_and_restart() -> None:
        assert restart is not None
        restart.kill()
        time.sleep(1.0)
        restart.start()
        restarted.append(time.monotonic())

    # The poison-pill cap is not under test: a job of steps killed with its worker
    # again and again is charged a rescue each time (docs/durable.md says so).
    os.environ["FAULT_MAX_RESCUES"] = "1000"
    try:
        r = durable_storm(
            url, directory, n, steps=STEPS, timeout=timeout,
            task="fault.mixed_steps" if transactional else "fault.steps",
            midway=crash_and_restart if restart is not None else None,
        )  # fmt: skip
    finally:
        os.environ.pop("FAULT_MAX_RESCUES", None)
    ok = r.succeeded == r.jobs and r.rerun_after_checkpoint == 0 and r.saved_never_ran == 0
    why = r.line()
    detail = (
        f"; {r.kills} SIGKILLs, {r.step_runs} step runs, {r.reruns} cut off mid-step and "
        f"run again, {r.rerun_after_checkpoint} after their checkpoint"
    )
    if transactional:
        counts = effects(url)
        wanted = n * (STEPS // 2)
        twice = sum(1 for c in counts.values() if c != 1)
        ok = ok and twice == 0 and len(counts) == wanted
        why += f"; transactional effects: {len(counts)} of {wanted}, {twice} not exactly once"
        detail += f"; {len(counts)} transactional steps, each committed its effect exactly once"
    if restart is not None:
        ok = ok and bool(restarted)
        detail += "; store crashed and restarted mid-run" if restarted else "; no restart"
    scenario = "durable steps storm" + (" + store restart" if restart is not None else "")
    return DurableOutcome(
        scenario, backend, r.jobs, r.jobs - r.succeeded, r.seconds, ok, why, detail, r
    )


@contextlib.contextmanager
def durable_store(
    backend: str, directory: Path, restart: bool, shared: Callable[[], str]
) -> Iterator[tuple[str, Crashable | None]]:
    """The run's URL and, with ``restart``, the server to crash: a store of its own (the
    run's shared servers are not to be crashed); else ``shared()``'s store."""
    if not restart:
        yield shared(), None
    elif backend == "redis":
        redis = AofRedis(directory / "redis").start()
        try:
            yield with_prefix(redis.url, "durable"), redis
        finally:
            redis.stop()
    else:
        cluster = CrashablePostgres().init().start()
        try:
            yield cluster.fresh_database("durable"), cluster
        finally:
            cluster.stop("immediate")
            cluster.remove()


def recovery_runs(url_for: Callable[[int], tuple[str, Path]], runs: int = 3) -> DurableOutcome:
    """Issue 23's recovery proof ``runs`` times (a fresh store and directory each, from
    ``url_for(i)``): a worker SIGKILLed in a job's second step, a worker started then
    resumes the job within 0.5 s of its ready line, and no saved step runs again."""
    results = []
    started = time.monotonic()
    for i in range(runs):
        url, directory = url_for(i)
        results.append(recovery(url, directory, steps=3, step_seconds=0.5))
    worst = max(r.from_ready for r in results)
    reran = sum(r.saved_reran for r in results)
    ok = worst <= 0.5 and reran == 0
    detail = (
        "; resumed "
        + ", ".join(f"{r.from_ready:.3f}" for r in results)
        + " s after the restarted worker's ready line ("
        + ", ".join(f"{r.from_start:.2f}" for r in results)
        + f" s after its start), {reran} saved steps run again"
    )
    return DurableOutcome(
        "durable recovery after SIGKILL", "", runs, 0, time.monotonic() - started, ok,
        f"worst {worst:.3f} s > 0.5 s or {reran} saved steps run again", detail, None,
    )  # fmt: skip
