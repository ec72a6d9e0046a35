"""Flow control with real worker processes: periodic slots under SIGKILL, a chain whose
worker dies in the middle, a limit whose holder dies, a batch call whose worker dies. Each runs on SQLite and on Redis
(a test-owned redis-server, its own key prefix)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobListParams
from conveyor.states import JobState
from tests.support.backends import BACKEND_URLS, GENERIC_URLS

pytestmark = pytest.mark.slow

APP_MODULE = textwrap.dedent("""
    import datetime, os, time
    import conveyor

    app = conveyor.App(os.environ["FLOW_URL"], heartbeat_interval=0.2, heartbeat_ttl=2.0,
                       rescue_interval=0.2)

    if os.environ.get("FLOW_PERIODIC"):
        @app.periodic(every=datetime.timedelta(seconds=1), catch_up="all")
        @app.task(name="beat")
        def beat() -> None: ...

    @app.task(name="add")
    def add(x: int, y: int = 1) -> int:
        return x + y

    @app.task(name="slow_first")
    def slow_first(x: int) -> int:
        if conveyor.current_job().attempt == 1:
            time.sleep(60)  # the worker is killed during this
        return x + 1

    @app.task(name="seq_step", sequence_key="ledger")
    def seq_step(i: int) -> int:
        if i == 1 and conveyor.current_job().attempt == 1:
            time.sleep(60)  # the worker is killed during this
        return i

    @app.task(name="batched", batch=conveyor.Batch(size=10, wait=5.0))
    def batched(items: list[conveyor.BatchItem[[int]]]) -> list[int]:
        if os.environ.get("FLOW_STALL_BATCH") and any(i.attempt == 1 for i in items):
            time.sleep(60)  # the worker is killed during this call
        return [i.args[0] for i in items]

    @app.task(name="limited", concurrency=1)
    def limited(i: int) -> int:
        if i == 0 and conveyor.current_job().attempt == 1:
            time.sleep(60)
        return i
""")

Spawn = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture(params=sorted(BACKEND_URLS))
def flow_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return BACKEND_URLS[request.param](request, tmp_path)


@pytest.fixture
def spawn(tmp_path: Path, flow_url: str) -> Iterator[Spawn]:
    (tmp_path / "flowapp.py").write_text(APP_MODULE)
    procs: list[subprocess.Popen[bytes]] = []
    src = str(Path(__file__).resolve().parents[2] / "src")

    def start(**env: str) -> subprocess.Popen[bytes]:
        environment = {
            **os.environ,
            "FLOW_URL": flow_url,
            "PYTHONPATH": f"{tmp_path}{os.pathsep}{src}",
            **env,
        }
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from conveyor.cli.main import main; main()",
                "worker",
                "flowapp:app",
                "-c",
                "4",
                "--shutdown-timeout",
                "1",
                "--log-level",
                "WARNING",
            ],
            cwd=tmp_path,
            env=environment,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _fired_slots(app: conveyor.App, name: str) -> list[float]:
    """The slots of schedule ``name`` the store recorded as fired, in order."""
    backend = app.backend
    if backend.name == "redis":
        client = backend.client  # type: ignore[attr-defined]
        key = backend.keys.base + "slots:" + name  # type: ignore[attr-defined]
        return [float(s) for s in client.zrange(key, 0, -1)]
    if backend.name == "mariadb":
        found = backend._ops_rows(  # type: ignore[attr-defined]
            "SELECT slot FROM periodic_slots WHERE name = %s ORDER BY slot", (name,)
        )
        return [float(r[0]) for r in found]
    if backend.name == "postgres":
        with backend._tx() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT slot FROM periodic_slots WHERE name = %s ORDER BY slot", (name,))
            return [float(r[0]) for r in cur.fetchall()]
    with backend.lock:  # type: ignore[attr-defined]
        return [
            r[0]
            for r in backend.connection.execute(  # type: ignore[attr-defined]
                "SELECT slot FROM periodic_slots WHERE name = ? ORDER BY slot", (name,)
            )
        ]


def test_periodic_three_workers_one_killed_every_slot_once(spawn: Spawn, flow_url: str) -> None:
    app = conveyor.App(flow_url)
    workers = [spawn(FLOW_PERIODIC="1") for _ in range(3)]
    # Wait on what the store records, not on the clock: a loaded machine starts slowly.
    _wait_for(lambda: len(_fired_slots(app, "beat")) >= 2, timeout=30)
    workers[0].send_signal(signal.SIGKILL)
    fired_at_kill = len(_fired_slots(app, "beat"))
    _wait_for(lambda: len(_fired_slots(app, "beat")) >= fired_at_kill + 3, timeout=30)
    for w in workers[1:]:
        w.send_signal(signal.SIGTERM)
    for w in workers[1:]:
        assert w.wait(15) == 0
    slots = _fired_slots(app, "beat")
    jobs = app.backend.job_list(JobListParams(task="beat", limit=1000))
    assert len(slots) >= 4
    assert [b - a for a, b in itertools.pairwise(slots)] == [1.0] * (len(slots) - 1)
    assert len(jobs) == len(slots)  # one job per slot, no slot twice, none skipped
    app.close()


# The chain's resumption is the engine's settle, alike on every SQL store: GENERIC_URLS.
@pytest.mark.parametrize("flow_url", sorted(GENERIC_URLS), indirect=True)
def test_worker_dies_mid_chain_chain_resumes(spawn: Spawn, flow_url: str) -> None:
    app = conveyor.App(flow_url)
    add = app.task(name="add")(lambda x, y=1: x + y)
    slow_first = app.task(name="slow_first")(lambda x: x)
    last = conveyor.chain(add.s(1), slow_first.s(), add.s()).enqueue()
    middle = last.dependencies()[0]
    first = spawn()
    _wait_for(lambda: middle.status is JobState.RUNNING)
    assert last.status is JobState.WAITING
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    spawn()  # its rescuer sees the dead PID, requeues the middle step (one attempt used)
    assert last.result(timeout=20) == 4  # 1+1 -> +1 -> +1
    assert [a.outcome for a in middle.attempts()] == ["lost", "succeeded"]
    app.close()


def test_limit_holder_dies_slot_freed_on_rescue(spawn: Spawn, flow_url: str) -> None:
    app = conveyor.App(flow_url)
    limited = app.task(name="limited", concurrency=1)(lambda i: i)
    jobs = [limited.enqueue(i) for i in range(4)]
    holder = spawn()
    _wait_for(lambda: jobs[0].status is JobState.RUNNING)
    time.sleep(0.5)
    assert all(j.status is not JobState.RUNNING for j in jobs[1:])  # over the limit: waiting
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    spawn()
    assert [j.result(timeout=20) for j in jobs] == [0, 1, 2, 3]
    assert all(j.refresh().attempt == 1 for j in jobs[1:])  # waiting cost no attempt
    app.close()


def test_sequence_holder_dies_rescued_job_keeps_its_place(spawn: Spawn, flow_url: str) -> None:
    app = conveyor.App(flow_url)
    seq_step = app.task(name="seq_step", sequence_key="ledger")(lambda i: i)
    jobs = [seq_step.enqueue(i) for i in range(4)]
    first = spawn()
    _wait_for(lambda: jobs[1].status is JobState.RUNNING)
    assert [j.status for j in jobs[2:]] == [JobState.WAITING] * 2  # behind it, in order
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    spawn()  # its rescuer requeues job 1, which runs again before 2 and 3
    assert [j.result(timeout=20) for j in jobs] == [0, 1, 2, 3]
    assert [a.outcome for a in jobs[1].attempts()] == ["lost", "succeeded"]
    records = [j.refresh() for j in jobs]
    for before, after in itertools.pairwise(records):  # one at a time, in enqueue order
        assert before.finished_at is not None and after.started_at is not None
        assert before.finished_at <= after.started_at
    app.close()


def test_worker_killed_mid_batch_call_its_jobs_are_rescued(spawn: Spawn, flow_url: str) -> None:
    app = conveyor.App(flow_url)
    batched = app.task(name="batched", batch=conveyor.Batch(size=10))(lambda items: None)
    jobs = batched.enqueue_many([(n,) for n in range(10)])
    first = spawn(FLOW_STALL_BATCH="1")
    _wait_for(lambda: all(j.status is JobState.RUNNING for j in jobs))  # one call of 10
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    spawn()  # its rescuer sees the dead PID: each job back to queued, run again
    assert [j.result(timeout=30) for j in jobs] == list(range(10))
    records = app.backend.job_get_many([j.id for j in jobs])
    # Rescued, the attempt given back (a worker holding many jobs is not charged).
    assert {(r.attempt, r.rescues) for r in records} == {(1, 1)}
    app.close()
