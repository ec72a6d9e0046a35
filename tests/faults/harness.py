"""Real worker processes, a supervisor that kills and restarts them, and the tally.

Workers are ``python -m conveyor.cli worker tests.faults.fault_tasks:app`` subprocesses
with their output in a log file each (never a pipe: a pipe nobody reads fills up and
blocks the worker, which would be a fault of the test, not of conveyor).

Example (in a test)::

    with Fleet(url, tmp_path, marks) as fleet:
        fleet.start(3, "-c", "10")
        ...
        tally = count(url, ids, marks, started)
    assert tally.lost == 0, tally.line()
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import conveyor
from conveyor.states import JobState
from tests.integration.conftest import ROOT, worker_env

APP_SPEC = "tests.faults.fault_tasks:app"
FINAL = {JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED}


def fault_env(url: str, marks: Path) -> dict[str, str]:
    env = worker_env(url)
    env["FAULT_MARKS"] = str(marks)
    env.pop("CONVEYOR_DASHBOARD_TOKEN", None)
    return env


class Worker:
    """One ``conveyor worker`` process; its output goes to ``log``."""

    def __init__(self, url: str, marks: Path, log: Path, args: Sequence[str]) -> None:
        self.log = log
        self._ready = False
        self._out = open(log, "ab")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "conveyor.cli", "worker", APP_SPEC, *args],
            cwd=ROOT,
            env=fault_env(url, marks),
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        """Exit status (raises ``subprocess.TimeoutExpired`` if still running)."""
        code = self.proc.wait(timeout)
        self._out.close()
        return code

    def is_ready(self) -> bool:
        """The worker printed its start line (it has registered and claims jobs)."""
        if not self._ready:
            self._ready = " ready: " in self.output()
        return self._ready

    def wait_ready(self, timeout: float = 15.0) -> bool:
        """True once the worker printed its start line (its signal handlers are in
        place from then on: a SIGTERM before that kills a starting Python outright)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            if self.is_ready():
                return True
            time.sleep(0.02)
        return self.is_ready()

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM once ready; the exit status, or None if it did not exit in time."""
        self.wait_ready()
        self.signal(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text(errors="replace")


class Fleet:
    """Workers of one test: started, optionally killed and restarted by a supervisor
    thread, and always SIGKILLed at exit so nothing outlives the test."""

    def __init__(self, url: str, directory: Path, marks: Path) -> None:
        self.url = url
        self.directory = directory
        self.marks = marks
        self.workers: list[Worker] = []
        #: (pid, exit status) of every worker that exited on its own (not killed by us).
        self.exits: list[tuple[int, int]] = []
        self.kills = 0
        self.restarts = 0
        self._slots: list[Worker] = []
        self._killed: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_supervisor()
        for w in self.workers:
            if w.alive():
                w.signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.wait(10)

    def spawn(self, *args: str) -> Worker:
        n = len(self.workers)
        worker = Worker(self.url, self.marks, self.directory / f"worker-{n:04}.log", args)
        self.workers.append(worker)
        return worker

    def start(self, count: int, *args: str) -> list[Worker]:
        self._args = args
        self._slots = [self.spawn(*args) for _ in range(count)]
        return list(self._slots)

    def supervise(self, kill_every: float | None = None, restart: bool = True) -> None:
        """Keep ``start``'s workers running (restart any that exits); with
        ``kill_every``, SIGKILL one of them (round robin) every that many seconds."""
        self._thread = threading.Thread(
            target=self._supervise, args=(kill_every, restart), daemon=True
        )
        self._thread.start()

    def stop_supervisor(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _supervise(self, kill_every: float | None, restart: bool) -> None:
        next_kill = time.monotonic() + (kill_every or 0)
        victim = 0
        while not self._stop.is_set():
            now = time.monotonic()
            if kill_every is not None and now >= next_kill:
                # The next worker (round robin) that is up: one killed while Python still
                # imports would test start-up time, not conveyor (on a loaded 2-core box
                # a start can outlast the 1.5 s each worker lives in the storm).
                for _ in range(len(self._slots)):
                    target = self._slots[victim % len(self._slots)]
                    victim += 1
                    if target.alive() and target.is_ready():
                        self._killed.add(target.pid)
                        target.signal(signal.SIGKILL)
                        self.kills += 1
                        next_kill = now + kill_every
                        break
            for i, w in enumerate(self._slots):
                code = w.proc.poll()
                if code is None:
                    continue
                w.wait(1)
                if w.pid not in self._killed:
                    self.exits.append((w.pid, code))
                if restart and not self._stop.is_set():
                    self._slots[i] = self.spawn(*self._args)
                    self.restarts += 1
            self._stop.wait(0.02)

    def last_words(self, pid: int) -> str:
        """The last line of the worker ``pid``'s output (its error, when it died of one)."""
        for w in self.workers:
            if w.pid == pid:
                lines = [line for line in w.output().splitlines() if line.strip()]
                return lines[-1] if lines else ""
        return ""

    def output(self) -> str:
        return "".join(f"--- {w.log.name} (pid {w.pid})\n{w.output()}" for w in self.workers)


@dataclasses.dataclass
class Tally:
    """What became of N jobs: the figures every scenario prints."""

    scenario: str
    backend: str
    n: int
    succeeded: int = 0
    #: not in a final state at the end, missing from the store, or final without its side
    #: effect ever happening (succeeded but never ran)
    lost: int = 0
    #: extra runs: the side effect happened more than once for a job
    duplicated: int = 0
    #: duplicates not explained by a rescued ("lost") attempt of the same job
    unexplained_duplicates: int = 0
    dead: int = 0
    #: dead jobs not explained by the rescue limit: a reason other than "worker lost",
    #: or an attempt in their history that ended otherwise than "lost" or "released"
    unexplained_dead: int = 0
    seconds: float = 0.0
    notes: str = ""
    dead_reasons: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)

    def line(self) -> str:
        reasons = ", ".join(f"{r!r} x{c}" for r, c in self.dead_reasons.most_common(3))
        return (
            f"[{self.scenario}] backend={self.backend} n={self.n} lost={self.lost} "
            f"duplicated={self.duplicated} (unexplained {self.unexplained_duplicates}) "
            f"dead={self.dead}{' (' + reasons + ')' if reasons else ''} "
            f"(unexplained {self.unexplained_dead}) "
            f"time={self.seconds:.1f}s{' ' + self.notes if self.notes else ''}"
        )


def read_marks(marks: Path) -> collections.Counter[str]:
    """Runs per job id, from the side-effect file."""
    runs: collections.Counter[str] = collections.Counter()
    if marks.exists():
        for line in marks.read_text().splitlines():
            job_id = line.split(" ", 1)[0]
            if job_id:
                runs[job_id] += 1
    return runs


def count(
    scenario: str,
    url: str,
    ids: Sequence[str],
    marks: Path,
    started: float,
    explained_by: frozenset[str] = frozenset({"lost"}),
    **notes: object,
) -> Tally:
    """The tally of ``ids`` now: states from the store, runs from ``marks``. A second run
    of a job is a duplicate; it is explained when the job's attempt history has an
    attempt that ended in one of ``explained_by`` (a rescue: "lost"; a SIGTERM: "released")."""
    backend = url.split(":", 1)[0]
    tally = Tally(scenario, backend, len(ids), seconds=time.monotonic() - started)
    tally.notes = " ".join(f"{k}={v}" for k, v in notes.items())
    runs = read_marks(marks)
    app = conveyor.App(url)
    try:
        found = {}
        for i in range(0, len(ids), 500):
            for rec in app.backend.job_get_many(list(ids[i : i + 500])):
                found[rec.id] = rec
        for job_id in ids:
            rec = found.get(job_id)
            ran = runs.get(job_id, 0)
            if rec is None or rec.state not in FINAL:
                tally.lost += 1
                continue
            if rec.state is JobState.SUCCEEDED:
                tally.succeeded += 1
                if ran == 0:
                    tally.lost += 1  # "succeeded" without ever running
            elif rec.state is JobState.DEAD:
                tally.dead += 1
                tally.dead_reasons[_reason(rec)] += 1
                outcomes = {a.outcome for a in app.backend.job_attempts(job_id)}
                # Explained by the rescue limit: "worker lost", at least one attempt lost
                # with a killed worker and none that ran to an end of its own ("released"
                # attempts were given back unstarted or unfinished: poison isolation's
                # batch-mates, prefetched jobs on stop; they count no attempt).
                if (
                    rec.reason != "worker lost"
                    or "lost" not in outcomes
                    or not outcomes <= {"lost", "released"}
                ):
                    tally.unexplained_dead += 1
            if ran > 1:
                tally.duplicated += ran - 1
                lost_attempts = sum(
                    1 for a in app.backend.job_attempts(job_id) if a.outcome in explained_by
                )
                tally.unexplained_duplicates += max(0, ran - 1 - lost_attempts)
    finally:
        app.close()
    return tally


def _reason(rec: object) -> str:
    reason = getattr(rec, "reason", None) or ""
    error = getattr(rec, "error", None) or ""
    return str(reason or error)[:60]


def wait_until(predicate: Callable[[], bool], timeout: float, poll: float = 0.1) -> bool:
    """True once ``predicate()`` holds; False after ``timeout`` seconds (never raises,
    so the caller prints its tally before failing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return predicate()


def all_final(url: str, ids: Iterable[str]) -> Callable[[], bool]:
    """A predicate: every job of ``ids`` is in a final state (one store read per call)."""
    wanted = list(ids)

    def check() -> bool:
        app = conveyor.App(url)
        try:
            done = 0
            for i in range(0, len(wanted), 500):
                batch = app.backend.job_get_many(wanted[i : i + 500])
                done += sum(1 for r in batch if r.state in FINAL)
            return done == len(wanted)
        finally:
            app.close()

    return check


def pids_alive(pids: Iterable[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    return alive
