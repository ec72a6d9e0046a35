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
from collections.abc import Sequence
from pathlib import Path

from conveyor.states import JobState
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
        statuses = [w.stop() for w in fleet.workers if w.alive()]
        tally = count("sigkill storm", url, ids, marks, started, kills=fleet.kills)
        tally.seconds = elapsed
        words = [fleet.last_words(pid) for pid, _ in fleet.exits]
        return StormResult(report(tally), fleet.kills, fleet.exits, statuses, fleet.output(), words)


# -- Redis SIGKILL + restart (AOF, appendfsync always) ----------------------------------


class AofRedis(RedisServer):
    """A redis-server that fsyncs every write: a SIGKILL loses nothing acknowledged."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, aof=True)

    def args(self) -> list[str]:
        return [*super().args(), "--appendfsync", "always"]


@dataclasses.dataclass
class RestartResult:
    tally: Tally
    #: seconds from Redis answering again to the next job run
    resumed_after: float | None
    exits: list[tuple[int, int]]
    output: str
    #: the last line each exited worker printed
    last_words: list[str] = dataclasses.field(default_factory=list)


def redis_kill_restart(
    server: RedisServer,
    directory: Path,
    n: int,
    *,
    workers: int = 3,
    concurrency: int = 10,
    job_seconds: float = 0.0,
    down_for: float = 1.0,
    timeout: float = 120.0,
) -> RestartResult:
    """``n`` jobs, ``workers`` workers; once a third of the jobs ran, Redis is SIGKILLed,
    left down ``down_for`` s, and restarted from its AOF on the same port."""
    url = with_prefix(server.url, "faults")
    marks = directory / "marks.log"
    ids = enqueue(url, "fault.work", [(job_seconds,)] * n)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        fleet.start(workers, "-c", str(concurrency))
        # Mid-run means every worker is up: one still starting when Redis dies exits 1
        # at its first heartbeat (by design: a worker that never reached its store).
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
            "redis SIGKILL + restart (AOF always)",
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
    ``workers`` workers drain the same SQLite file."""
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
            f"{producers} producers + {workers} workers, one file", url, ids, marks, started
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


# -- poison pills -------------------------------------------------------------------------


@dataclasses.dataclass
class PoisonResult:
    tally: Tally  # of the innocent jobs
    poison_state: str
    poison_reason: str
    #: (pid, status) of workers that exited without being asked to
    exits: list[tuple[int, int]]
    #: innocent jobs that ended dead, with their reason
    innocent_dead: list[str]
    #: statuses of the workers stopped with SIGTERM at the end (None: did not stop)
    final_statuses: list[int | None]
    output: str
    #: every awaited job was final before the timeout
    in_time: bool = True
    #: the poison job's state at the timeout, before the final SIGTERM
    poison_state_at_end: str = ""


def poison_pill(
    url: str,
    directory: Path,
    poison: str,
    *,
    pool: str = "thread",
    innocents: int = 20,
    innocent_seconds: float = 0.3,
    concurrency: int = 4,
    timeout: float = 30.0,
    poison_options: dict[str, object] | None = None,
    poison_args: tuple[object, ...] = (),
    worker_args: Sequence[str] = (),
    poison_ends: bool = True,
) -> PoisonResult:
    """One ``poison`` job enqueued first, then ``innocents`` jobs that take
    ``innocent_seconds`` (so they are surely running when the poison strikes). One
    worker, restarted by a supervisor whenever it exits. Waits until every job is final
    or ``timeout`` passes (a jammed worker fails the test; it never hangs it); with
    ``poison_ends=False`` (a job no pool can end), only until the innocent ones are."""
    marks = directory / "marks.log"
    [poison_id] = enqueue(url, poison, [poison_args], **(poison_options or {}))
    ids = enqueue(url, "fault.work", [(innocent_seconds,)] * innocents)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        fleet.start(
            1, "--pool", pool, "-c", str(concurrency), "--shutdown-timeout", "1", *worker_args
        )
        fleet.supervise()
        awaited = [poison_id, *ids] if poison_ends else ids
        in_time = wait_until(all_final(url, awaited), timeout, poll=0.1)
        fleet.stop_supervisor()
        elapsed = time.monotonic() - started
        app = make_app(url)
        try:
            [before_stop] = app.backend.job_get_many([poison_id])
        finally:
            app.close()
        final_statuses = [w.stop(15) for w in fleet.workers if w.alive()]
        tally = count(f"poison {poison}, {pool} pool", url, ids, marks, started)
        tally.seconds = elapsed
        app = make_app(url)
        try:
            [rec] = app.backend.job_get_many([poison_id])
            innocent_dead = [
                f"{r.id}: {r.reason or r.error}"
                for r in app.backend.job_get_many(ids)
                if r.state is JobState.DEAD
            ]
        finally:
            app.close()
        tally.notes = f"poison={rec.state.value} worker exits={[c for _, c in fleet.exits]}"
        return PoisonResult(
            report(tally),
            rec.state.value,
            str(rec.reason or rec.error or ""),
            fleet.exits,
            innocent_dead,
            final_statuses,
            fleet.output(),
            in_time,
            before_stop.state.value,
        )


# -- store faults (SQLite) ----------------------------------------------------------------


@dataclasses.dataclass
class StoreFaultResult:
    tally: Tally
    #: the worker's exit status when it exited by itself during the run (None: it did not)
    status: int | None
    seconds_to_exit: float | None
    output: str
    error: str = ""


def fill(directory: Path) -> Path:
    """Fill the file system holding ``directory`` to the last byte; the filler file."""
    filler = directory / "filler"
    with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as f:
        for size in (1 << 20, 65536, 4096, 512):  # big chunks, then the last few bytes
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * size)
    return filler


def disk_full(
    url: str, directory: Path, *, jobs: int = 400, outage: float = 2.0, timeout: float = 30.0
) -> StoreFaultResult:
    """A worker drains jobs with 20 kB results on a store in ``directory`` (a small
    tmpfs); the file system is filled for ``outage`` s, then freed."""
    marks = directory.parent / "marks.log"
    ids = enqueue(url, "fault.blob", [(20_000,)] * jobs)
    started = time.monotonic()
    with Fleet(url, directory.parent, marks) as fleet:
        worker = fleet.spawn("-c", "2")
        wait_until(lambda: sum(read_marks(marks).values()) >= 10, 30, poll=0.02)
        filler = fill(directory)
        t0 = time.monotonic()
        died = wait_until(lambda: not worker.alive(), outage, poll=0.05)
        filler.unlink()
        if not died:
            wait_until(all_final(url, ids), timeout, poll=0.2)
            died = not worker.alive()
        status = worker.proc.poll()
        seconds = time.monotonic() - t0 if died else None
        if worker.alive():
            worker.signal(signal.SIGTERM)
            worker.wait(15)
        tally = count("disk full (tmpfs)", url, ids, marks, started)
        return StoreFaultResult(report(tally), status if died else None, seconds, worker.output())


def producer_on_full_disk(url: str, directory: Path) -> Exception | None:
    """Fill the file system, enqueue 500 jobs; the exception the producer got (None if
    the enqueue went through)."""
    ids = enqueue(url, "fault.work", [(0.0,)])
    assert ids
    filler = fill(directory)
    try:
        app = make_app(url)
        try:
            app.tasks["fault.work"].enqueue_many([(0.0,)] * 500)
        finally:
            app.close()
    except Exception as exc:
        return exc
    finally:
        filler.unlink()
    return None


def describe(exc: BaseException | None) -> str:
    """``module.Type: message`` of ``exc`` ("no error" for None)."""
    if exc is None:
        return "no error"
    return f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"


def store_replaced(
    url: str, path: Path, *, replace: bool, timeout: float = 10.0
) -> StoreFaultResult:
    """A worker serves the SQLite file ``path``; it is deleted (``replace=False``) or
    replaced by a fresh store holding one queued job (``replace=True``). The worker
    should notice and stop with a non-zero status within ``timeout`` s."""
    directory = path.parent
    marks = directory / "marks.log"
    ids = enqueue(url, "fault.work", [(0.0,)] * 5)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        worker = fleet.spawn("-c", "2")
        wait_until(all_final(url, ids), 30, poll=0.05)
        fresh = directory / "fresh.db"
        if replace:
            enqueue(f"sqlite:///{fresh}", "fault.work", [(0.0,)])
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        if replace:
            fresh.rename(path)
        t0 = time.monotonic()
        died = wait_until(lambda: not worker.alive(), timeout, poll=0.05)
        seconds = time.monotonic() - t0 if died else None
        status = worker.proc.poll()
        if not died:
            worker.signal(signal.SIGTERM)
            worker.wait(15)
        what = "replaced" if replace else "deleted"
        tally = Tally(f"store file {what}", "sqlite", len(ids), seconds=time.monotonic() - started)
        tally.notes = f"worker exit={status if died else 'none (still running)'}"
        return StoreFaultResult(report(tally), status if died else None, seconds, worker.output())
