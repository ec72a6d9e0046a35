"""The sequences fault scenario (issue 24): worker processes run ``keys`` sequences of
``per_key`` jobs with random durations, with or without a SIGKILL storm, and the runs
themselves (``seqstart``/``seqend`` lines of ``fault_tasks.seq_work``, ``O_APPEND``)
are checked per key:

- **order**: the jobs of a key start in enqueue order: job ``n`` (every run of it)
  starts only after job ``n - 1``'s completed run ended;
- **no overlap**: no two runs of a key overlap. A run killed with its worker has no
  end line; its job's next run (the rescue) starts after it, and the key's next job
  only after that rerun ended: a rescued job keeps its place. (A run killed after its
  end line, before its finish was stored, is followed by a rerun of the same job: the
  at-least-once rerun, in its place.)

Example::

    result = sequence_storm("sqlite:///jobs.db", tmp_path, keys=5, per_key=10)
    assert result.violations == [] and result.succeeded == result.jobs
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import random
import time
from pathlib import Path

import conveyor
from conveyor.states import JobState
from tests.faults.harness import Fleet, all_final, wait_until
from tests.faults.scenarios import enqueue


@dataclasses.dataclass
class SequenceStormResult:
    jobs: int
    succeeded: int
    kills: int
    #: runs cut off by a kill (a start line without its end)
    killed_runs: int
    #: what broke order or overlap, one line each (must be empty)
    violations: list[str]
    seconds: float
    output: str

    def line(self) -> str:
        return (
            f"[sequence storm] jobs={self.jobs} succeeded={self.succeeded} kills={self.kills} "
            f"killed_runs={self.killed_runs} violations={len(self.violations)} "
            f"time={self.seconds:.1f}s {self.violations[:3]}"
        )


@dataclasses.dataclass
class Run:
    n: int
    job_id: str
    start: float
    end: float | None  # None: killed mid-run


def read_runs(marks: Path) -> dict[str, list[Run]]:
    """Key -> its runs, by start time."""
    starts: dict[tuple[str, int, str, str], float] = {}
    ends: dict[tuple[str, int, str, str], float] = {}
    if marks.exists():
        for line in marks.read_text().splitlines():
            word, *rest = line.split()
            if word not in ("seqstart", "seqend"):
                continue
            key, n, job_id, pid, at = rest
            (starts if word == "seqstart" else ends)[(key, int(n), job_id, pid)] = float(at)
    runs: dict[str, list[Run]] = collections.defaultdict(list)
    for (key, n, job_id, pid), start in starts.items():
        runs[key].append(Run(n, job_id, start, ends.get((key, n, job_id, pid))))
    for key_runs in runs.values():
        key_runs.sort(key=lambda r: r.start)
    return runs


def violations(runs: dict[str, list[Run]], per_key: int) -> list[str]:
    """Every break of order or overlap (see the module docstring)."""
    found: list[str] = []
    for key, key_runs in sorted(runs.items()):
        # A run killed after its end line but before its finish was stored runs again
        # (at least once): its job repeats, never goes back.
        done = [r.n for r in key_runs if r.end is not None]
        if sorted(set(done)) != list(range(per_key)) or done != sorted(done):
            found.append(f"{key}: completed runs in order {done[:20]}")
        for a, b in itertools.pairwise(key_runs):
            if a.end is not None and b.start < a.end:
                found.append(f"{key}: job {b.n} started {a.end - b.start:.4f}s before {a.n} ended")
            if b.n < a.n:
                found.append(f"{key}: job {b.n} started after job {a.n}")
            if a.end is None and b.n != a.n:
                found.append(f"{key}: killed run of {a.n} followed by job {b.n}, not its rerun")
    return found


def sequence_storm(
    url: str, directory: Path, *, keys: int = 20, per_key: int = 100, job_seconds: float = 0.01,
    workers: int = 3, concurrency: int = 4, kill_every: float | None = 0.5,
    timeout: float = 300.0, seed: int = 24,
) -> SequenceStormResult:  # fmt: skip
    """``keys`` x ``per_key`` jobs of ``fault.seq`` (durations random in 0 to 2 x
    ``job_seconds``), enqueued key by key interleaved, run by ``workers`` workers (one
    SIGKILLed every ``kill_every`` s and restarted, None: no kills) until every job is
    final or ``timeout`` passes."""
    marks = directory / "marks.log"
    rnd = random.Random(seed)
    calls = [
        (f"k{k:02}", n, round(rnd.uniform(0, 2 * job_seconds), 4))
        for n in range(per_key)
        for k in range(keys)
    ]
    # The poison-pill cap (max_rescues) would end a job killed with its worker 3 times
    # dead, and the sequence would block on it: not what is under test here.
    os.environ["FAULT_MAX_RESCUES"] = "1000"
    try:
        ids = enqueue(url, "fault.seq", calls)
        started = time.monotonic()
        with Fleet(url, directory, marks) as fleet:
            fleet.start(workers, "-c", str(concurrency))
            fleet.supervise(kill_every=kill_every)
            wait_until(all_final(url, ids), timeout, poll=0.2)
            fleet.stop_supervisor()
            elapsed = time.monotonic() - started
            for w in fleet.standing():
                w.stop()
            output, kills = fleet.output(), fleet.kills
    finally:
        os.environ.pop("FAULT_MAX_RESCUES", None)
    app = conveyor.App(url)
    try:
        records = app.backend.job_get_many(ids)
    finally:
        app.close()
    runs = read_runs(marks)
    return SequenceStormResult(
        jobs=len(ids),
        succeeded=sum(1 for r in records if r.state is JobState.SUCCEEDED),
        kills=kills,
        killed_runs=sum(1 for rs in runs.values() for r in rs if r.end is None),
        violations=violations(runs, per_key),
        seconds=elapsed,
        output=output,
    )
