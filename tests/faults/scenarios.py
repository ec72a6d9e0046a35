"""The fault scenarios, sized by their caller: small in pytest, the issue's sizes in the
long runner (``python -m tests.faults --long``). Each returns a ``Tally`` (and prints its
line); the callers assert on it.

Example::

    tally = sigkill_storm("sqlite:///t/jobs.db", Path("t"), n=400)
    assert tally.lost == 0, tally.line()
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from bench.postgres_cluster import PostgresCluster

from tests.faults.fault_tasks import make_app
from tests.faults.harness import Fleet, Tally, all_final, count, read_marks, wait_until
from tests.integration.conftest import ROOT, worker_env
from tests.support.redis_server import RedisServer, with_prefix


def enqueue(
    url: str, task: str, calls: Sequence[tuple[object, ...]], **options: object
) -> list[str]:
    """Enqueue ``task`` once per argument tuple (batches of 1,000); the job ids."""
    app = make_app(url)
    try:
        t = app.tasks[task].with_options(**options) if options else app.tasks[task]  # type: ignore[arg-type]
        ids: list[str] = []
        for i in range(0, len(calls), 1000):
            ids += [j.id for j in t.enqueue_many(list(calls[i : i + 1000]))]
        return ids
    finally:
        app.close()


def report(tally: Tally) -> Tally:
    print(tally.line(), flush=True)
    return tally


@dataclasses.dataclass
class StormResult:
    tally: Tally
    kills: int
    #: (pid, status) of workers that exited without being killed
    exits: list[tuple[int, int]]
    #: exit statuses of the workers still running at the end, stopped with SIGTERM
    final_statuses: list[int | None]
    output: str
    last_words: list[str] = dataclasses.field(default_factory=list)


def sigkill_storm(
    url: str,
    directory: Path,
    n: int,
    *,
    workers: int = 3,
    kill_every: float = 0.5,
    concurrency: int = 10,
    job_seconds: float = 0.0,
    timeout: float = 120.0,
) -> StormResult:
    """``n`` jobs, ``workers`` workers, one SIGKILLed every ``kill_every`` s (round
    robin among those that are up) and restarted at once, until every job is final or
    ``timeout`` passes."""
    marks = directory / "marks.log"
    ids = enqueue(url, "fault.work", [(job_seconds,)] * n)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        fleet.start(workers, "-c", str(concurrency))
        fleet.supervise(kill_every=kill_every)
        wait_until(all_final(url, ids), timeout, poll=0.2)
        fleet.stop_supervisor()
        elapsed = time.monotonic() - started
        statuses = [w.stop() for w in fleet.standing()]
        tally = count("sigkill storm", url, ids, marks, started, kills=fleet.kills)
        tally.seconds = elapsed
        words = [fleet.last_words(pid) for pid, _ in fleet.exits]
        return StormResult(report(tally), fleet.kills, fleet.exits, statuses, fleet.output(), words)


# -- the store crashed and restarted: Redis (AOF, appendfsync always), PostgreSQL ---------


class AofRedis(RedisServer):
    """A redis-server that fsyncs every write: a SIGKILL loses nothing acknowledged."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, aof=True)

    def args(self) -> list[str]:
        return [*super().args(), "--appendfsync", "always"]


@dataclasses.dataclass
class RestartResult:
    tally: Tally
    #: seconds from the store answering again to the next job run
    resumed_after: float | None
    exits: list[tuple[int, int]]
    output: str
    #: the last line each exited worker printed
    last_words: list[str] = dataclasses.field(default_factory=list)


class Crashable(Protocol):
    """A store server a scenario can crash and bring back on the same port and data."""

    def kill(self) -> None: ...
    def start(self) -> object: ...


class CrashablePostgres(PostgresCluster):
    """A test-owned PostgreSQL cluster that commits durably (``fsync`` and
    ``synchronous_commit`` on, as in production: with them off a crash may lose commits
    already acknowledged) and is crashed by ``kill()``: ``pg_ctl stop -m immediate``, every
    server process quits at once without a checkpoint, so the restart runs crash recovery
    from the WAL. (SIGKILL of the postmaster alone would leave its backends serving.)"""

    def init(self, settings: Mapping[str, str] | None = None) -> CrashablePostgres:
        super().init({"max_connections": "300"} if settings is None else settings)
        return self

    def kill(self) -> None:
        self.stop("immediate")


def redis_kill_restart(server: RedisServer, directory: Path, n: int, **kw: Any) -> RestartResult:
    """:func:`kill_restart` on Redis (SIGKILL, restart from the AOF)."""
    url = with_prefix(server.url, "faults")
    return kill_restart(server, url, directory, n, "redis SIGKILL + restart (AOF always)", **kw)


def postgres_kill_restart(
    server: CrashablePostgres, directory: Path, n: int, **kw: Any
) -> RestartResult:
    """:func:`kill_restart` on PostgreSQL (immediate stop, restart with crash recovery)."""
    url = server.fresh_database("faults")
    scenario = "postgres crash (stop -m immediate) + restart"
    return kill_restart(server, url, directory, n, scenario, **kw)


def kill_restart(
    server: Crashable,
    url: str,
    directory: Path,
    n: int,
    scenario: str,
    *,
    workers: int = 3,
    concurrency: int = 10,
    job_seconds: float = 0.0,
    down_for: float = 1.0,
    timeout: float = 120.0,
) -> RestartResult:
    """``n`` jobs, ``workers`` workers on ``url``; once a third of the jobs ran, the
    store ``server`` is crashed, left down ``down_for`` s, and restarted on the same port."""
    marks = directory / "marks.log"
    ids = enqueue(url, "fault.work", [(job_seconds,)] * n)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        fleet.start(workers, "-c", str(concurrency))
        # Mid-run means every worker is up: one still starting when the store dies exits
        # 1 at its first heartbeat (by design: a worker that never reached its store).
        for w in fleet.workers:
            w.wait_ready()
        fleet.supervise()  # restarts a worker that exits (there should be none)
        wait_until(lambda: len(read_marks(marks)) >= n // 3, timeout)
        server.kill()
        time.sleep(down_for)
        server.start()
        answered = time.monotonic()
        before = sum(read_marks(marks).values())
        resumed = wait_until(lambda: sum(read_marks(marks).values()) > before, 30, poll=0.01)
        resumed_after = time.monotonic() - answered if resumed else None
        wait_until(all_final(url, ids), timeout, poll=0.2)
        fleet.stop_supervisor()
        elapsed = time.monotonic() - started
        tally = count(
            scenario,
            url,
            ids,
            marks,
            started,
            resumed_after=f"{resumed_after:.2f}s" if resumed_after is not None else "never",
        )
        tally.seconds = elapsed
        words = [fleet.last_words(pid) for pid, _ in fleet.exits]
        return RestartResult(report(tally), resumed_after, fleet.exits, fleet.output(), words)


# -- producers and workers on one SQLite file --------------------------------------------


@dataclasses.dataclass
class ProducersResult:
    tally: Tally
    producer_status: list[int]
    #: lines mentioning "database is locked" in any producer's or worker's output
    locked: list[str]
    runs_per_job: collections.Counter[int]
    output: str


def producers_and_workers(
    url: str,
    directory: Path,
    *,
    producers: int = 8,
    per_producer: int = 2000,
    workers: int = 3,
    concurrency: int = 10,
    timeout: float = 120.0,
) -> ProducersResult:
    """``producers`` processes each enqueue ``per_producer`` jobs one at a time while
    ``workers`` workers drain the same store (a SQLite file, a PostgreSQL database)."""
    marks = directory / "marks.log"
    app = make_app(url)
    app.backend.queue_stats()  # creates the store: workers refuse a missing one
    app.close()
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        fleet.start(workers, "-c", str(concurrency))
        outs = [directory / f"ids-{i}.txt" for i in range(producers)]
        errs = [directory / f"producer-{i}.log" for i in range(producers)]
        procs = []
        for out, err in zip(outs, errs, strict=True):
            with open(err, "wb") as e:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "tests.faults.producer", url,
                         str(per_producer), str(out)],
                        cwd=ROOT, env=worker_env(url), stdout=e, stderr=subprocess.STDOUT,
                    )
                )  # fmt: skip
        statuses = [p.wait(timeout) for p in procs]
        ids = [i for out in outs if out.exists() for i in out.read_text().split()]
        wait_until(all_final(url, ids), timeout, poll=0.2)
        elapsed = time.monotonic() - started
        for w in fleet.workers:
            w.stop()
        tally = count(
            f"{producers} producers + {workers} workers, one store", url, ids, marks, started
        )
        tally.seconds = elapsed
        tally.lost += producers * per_producer - len(ids)  # never enqueued
        tally.n = producers * per_producer
        output = fleet.output() + "".join(e.read_text(errors="replace") for e in errs)
        locked = [line for line in output.splitlines() if "database is locked" in line]
        runs = collections.Counter(read_marks(marks).values())
        return ProducersResult(report(tally), statuses, locked, runs, output)


# -- SIGTERM under load -------------------------------------------------------------------


@dataclasses.dataclass
class SigtermResult:
    tally: Tally
    status: int
    stop_seconds: float
    #: per job that was running at SIGTERM: (state right after, attempt, last outcome)
    released: list[tuple[str, int, str]]
    #: attempt number each job finally succeeded on
    final_attempts: collections.Counter[int]
    output: str


def sigterm_under_load(
    url: str,
    directory: Path,
    pool: str,
    *,
    concurrency: int = 4,
    queued: int = 20,
    shutdown_timeout: float = 0.5,
) -> SigtermResult:
    """``concurrency`` jobs surely running (they wait on a gate file) and ``queued`` more
    waiting; SIGTERM. Then the gate opens and a ``--burst`` worker finishes the rest."""
    marks = directory / "marks.log"
    gate = directory / "gate"
    gate.write_text("closed")
    task = "fault.ahold" if pool == "async" else "fault.hold"
    ids = enqueue(url, task, [(str(gate),)] * (concurrency + queued))
    args = ("--pool", pool, "-c", str(concurrency), "--shutdown-timeout", str(shutdown_timeout))
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        worker = fleet.spawn(*args)
        wait_until(lambda: sum(read_marks(marks).values()) >= concurrency, 60, poll=0.02)
        running = list(read_marks(marks))
        t0 = time.monotonic()
        worker.signal(signal.SIGTERM)
        try:
            status = worker.wait(shutdown_timeout + 20)
        except subprocess.TimeoutExpired:
            status = -999  # still running: the caller fails on it
        stop_seconds = time.monotonic() - t0
        app = make_app(url)
        try:
            released = []
            for rec in app.backend.job_get_many(running):
                history = app.backend.job_attempts(rec.id)
                released.append(
                    (rec.state.value, rec.attempt, history[-1].outcome if history else "")
                )
        finally:
            app.close()
        gate.unlink()
        drain = fleet.spawn(*args, "--burst")
        wait_until(all_final(url, ids), 60, poll=0.1)
        with contextlib.suppress(subprocess.TimeoutExpired):
            drain.wait(20)
        tally = count(
            f"SIGTERM under load, {pool} pool", url, ids, marks, started,
            explained_by=frozenset({"released"}),
        )  # fmt: skip
        app = make_app(url)
        try:
            finals = collections.Counter(r.attempt for r in app.backend.job_get_many(ids))
        finally:
            app.close()
        return SigtermResult(report(tally), status, stop_seconds, released, finals, fleet.output())
