"""The durable-jobs fault scenario: jobs of steps, workers SIGKILLed in a storm, and the
check that no step whose checkpoint was saved ran again.

Every step appends ``step <job> <position> <pid> <start>`` to the marks file
(``fault_tasks.step_work``, ``O_APPEND``). A step may run more than once only when its
worker died during it, before its checkpoint: a run that *started* after the saved
checkpoint's ``finished_at`` is a finished step run twice, which must never happen.

Example::

    result = durable_storm("sqlite:///jobs.db", tmp_path, 40, steps=5)
    assert result.rerun_after_checkpoint == 0
"""

from __future__ import annotations

import collections
import dataclasses
import signal
import time
from collections.abc import Callable
from pathlib import Path

import conveyor
from conveyor.states import JobState
from tests.faults.harness import Fleet, all_final, wait_until
from tests.faults.scenarios import enqueue


@dataclasses.dataclass
class DurableStormResult:
    jobs: int
    succeeded: int
    kills: int
    #: step runs in the marks file, and how many of them were second runs of a step
    step_runs: int
    reruns: int
    #: runs that started after their step's checkpoint was saved (must be 0)
    rerun_after_checkpoint: int
    #: steps saved without a run in the marks file (must be 0)
    saved_never_ran: int
    seconds: float
    output: str

    def line(self) -> str:
        return (
            f"[durable storm] jobs={self.jobs} succeeded={self.succeeded} kills={self.kills} "
            f"step_runs={self.step_runs} reruns={self.reruns} "
            f"rerun_after_checkpoint={self.rerun_after_checkpoint} "
            f"saved_never_ran={self.saved_never_ran} time={self.seconds:.1f}s"
        )


def durable_storm(
    url: str, directory: Path, n: int, *, steps: int = 5, step_seconds: float = 0.05,
    workers: int = 3, concurrency: int = 2, kill_every: float = 0.5, timeout: float = 120.0,
    task: str = "fault.steps", midway: Callable[[], None] | None = None,
) -> DurableStormResult:  # fmt: skip
    """``n`` jobs of ``steps`` steps (``task``: ``fault.steps``, or ``fault.mixed_steps``
    whose odd steps are transactional), ``workers`` workers, one SIGKILLed every
    ``kill_every`` s and restarted, until every job is final or ``timeout`` passes;
    ``midway`` (a store restart) is called once a third of the steps have run."""
    marks = directory / "marks.log"
    ids = enqueue(url, task, [(steps, step_seconds)] * n)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        fleet.start(workers, "-c", str(concurrency))
        fleet.supervise(kill_every=kill_every)
        if midway is not None:
            third = lambda: marks.exists() and marks.read_bytes().count(b"\n") >= n * steps // 3  # noqa: E731
            wait_until(third, timeout, poll=0.1)
            midway()
        wait_until(all_final(url, ids), timeout, poll=0.2)
        fleet.stop_supervisor()
        elapsed = time.monotonic() - started
        for w in fleet.standing():
            w.stop()
        output = fleet.output()
        kills = fleet.kills
    runs: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    if marks.exists():
        for line in marks.read_text().splitlines():
            word, job_id, position, _pid, start = line.split()
            if word == "step":
                runs[(job_id, int(position))].append(float(start))
    app = conveyor.App(url)
    try:
        records = app.backend.job_get_many(ids)
        after = never = 0
        for job_id in ids:
            for step in app.backend.job_step_list(job_id):
                starts = runs.get((job_id, step.position), [])
                never += not starts
                after += sum(1 for s in starts if s > step.finished_at)
    finally:
        app.close()
    return DurableStormResult(
        jobs=n,
        succeeded=sum(1 for r in records if r.state is JobState.SUCCEEDED),
        kills=kills,
        step_runs=sum(len(v) for v in runs.values()),
        reruns=sum(len(v) - 1 for v in runs.values()),
        rerun_after_checkpoint=after,
        saved_never_ran=never,
        seconds=elapsed,
        output=output,
    )


@dataclasses.dataclass
class RecoveryResult:
    #: from the restarted worker's process start, and from its "ready" line, to the
    #: interrupted job's next step starting in it (seconds)
    from_start: float
    from_ready: float
    #: runs of the steps saved before the kill, after it (must be 0)
    saved_reran: int

    def line(self) -> str:
        return (
            f"[durable recovery] resumed {self.from_start:.3f}s after the restart "
            f"({self.from_ready:.3f}s after its ready line), saved_reran={self.saved_reran}"
        )


def _step_marks(marks: Path, job_id: str) -> list[tuple[int, int, float]]:
    """(position, pid, start) of each run of ``job_id``'s steps in the marks file."""
    if not marks.exists():
        return []
    out = []
    for line in marks.read_text().splitlines():
        word, job, position, pid, start = line.split()
        if word == "step" and job == job_id:
            out.append((int(position), int(pid), float(start)))
    return out


def recovery(
    url: str, directory: Path, *, steps: int = 4, step_seconds: float = 1.0
) -> RecoveryResult:
    """Issue 23's recovery proof: a worker running a job of steps is SIGKILLed in its
    second step; a worker started then (same host: the dead one's jobs are rescued at
    once) resumes the job at that step. Measured: restart -> the step starting again."""
    marks = directory / "marks.log"
    (job_id,) = enqueue(url, "fault.steps", [(steps, step_seconds)])
    with Fleet(url, directory, marks) as fleet:
        (first,) = fleet.start(1)
        wait_until(lambda: any(p == 1 for p, _, _ in _step_marks(marks, job_id)), 30, 0.01)
        first.signal(signal.SIGKILL)
        first.wait(10)
        restarted_at = time.time()
        second = fleet.spawn()
        while not second.is_ready() and second.alive():
            time.sleep(0.005)
        ready_at = time.time()
        mine = lambda: [m for m in _step_marks(marks, job_id) if m[1] == second.pid]  # noqa: E731
        wait_until(lambda: bool(mine()), 30, 0.01)
        resumed = min(start for _, _, start in mine())
        reran = sum(1 for p, _, _ in mine() if p < 1)
        second.stop()
    return RecoveryResult(resumed - restarted_at, resumed - ready_at, reran)
