"""Store faults: a full disk under a SQLite worker or producer, a store file deleted or
replaced under a running worker, a PostgreSQL schema dropped under one (see
test_store_faults.py).

Example::

    result = store_replaced("sqlite:///t/jobs.db", Path("t/jobs.db"), replace=False)
    assert result.status not in (None, 0)
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import time
from pathlib import Path

from tests.faults.fault_tasks import make_app
from tests.faults.harness import Fleet, Tally, all_final, count, read_marks, wait_until
from tests.faults.scenarios import enqueue, report

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
    tmpfs); the file system is filled for ``outage`` s, then freed. The jobs take 20 ms
    on 2 slots (4 s for 400), so the worker is still busy writing when the disk fills:
    an idle worker that rode out the outage would prove nothing."""
    marks = directory.parent / "marks.log"
    ids = enqueue(url, "fault.blob", [(20_000, 0.02)] * jobs)
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


def schema_dropped(url: str, directory: Path, *, timeout: float = 10.0) -> StoreFaultResult:
    """A worker serves the PostgreSQL ``url``; its schema is dropped (``DROP SCHEMA ...
    CASCADE``, the twin of deleting a SQLite file). The worker should stop with a
    non-zero status within ``timeout`` s, with one line naming the schema."""
    import psycopg

    from conveyor.backends.postgres.url import parse_postgres_url

    target = parse_postgres_url(url)
    marks = directory / "marks.log"
    ids = enqueue(url, "fault.work", [(0.0,)] * 5)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        worker = fleet.spawn("-c", "2")
        wait_until(all_final(url, ids), 30, poll=0.05)
        with psycopg.connect(target.conninfo, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {target.schema} CASCADE")
        t0 = time.monotonic()
        died = wait_until(lambda: not worker.alive(), timeout, poll=0.05)
        seconds = time.monotonic() - t0 if died else None
        status = worker.proc.poll()
        if not died:
            worker.signal(signal.SIGTERM)
            worker.wait(15)
        tally = Tally("schema dropped", "postgresql", len(ids), seconds=time.monotonic() - started)
        tally.notes = f"worker exit={status if died else 'none (still running)'}"
        return StoreFaultResult(report(tally), status if died else None, seconds, worker.output())
