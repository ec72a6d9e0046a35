"""Group commit of durable steps' checkpoints on every store (``job_step_save_many``,
``worker/checkpointer.py``): concurrent jobs' checkpoints share a write, each still
fenced by its own job's token, so a job that lost its claim is refused alone."""

from __future__ import annotations

import threading

import conveyor
from conveyor.backends.base import STEP_SUCCEEDED, Backend, JobStepSaveParams, StepRecord
from conveyor.states import JobState
from conveyor.worker.checkpointer import Checkpointer
from conveyor.worker.worker import Worker
from tests.contract.helpers import claim, insert, register
from tests.support.flow import needs

JOBS, STEPS = 8, 6


def _step(job_id: str, pos: int, result: str) -> StepRecord:
    return StepRecord(job_id, pos, "s", STEP_SUCCEEDED, result, None, 1, 1.0, 2.0)


def test_a_group_refuses_only_the_checkpoint_of_a_job_fenced_out(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    insert(backend, 3)
    a, lost, c = claim(backend)
    saves = [
        JobStepSaveParams(_step(a.id, 0, '"a"'), a.token),
        JobStepSaveParams(_step(lost.id, 0, '"lost"'), lost.token + 1),  # claim taken back
        JobStepSaveParams(_step(c.id, 0, '"c"'), c.token),
    ]
    assert backend.job_step_save_many(saves) == [True, False, True]
    assert backend.job_step_save_many([]) == []

    checkpointer = Checkpointer(backend)
    # Handed over before its thread starts: the three go in one write.
    futures = [
        checkpointer.submit(JobStepSaveParams(_step(j.id, 1, f'"{n}"'), j.token + (j is lost)))
        for n, j in enumerate((a, lost, c))
    ]
    checkpointer.start()
    assert [f.result(timeout=10) for f in futures] == [True, False, True]
    assert (checkpointer.groups, checkpointer.written) == (1, 3)
    checkpointer.stop(timeout=10)
    # After the stop a checkpoint is still written (alone, by its caller).
    assert checkpointer.submit(JobStepSaveParams(_step(c.id, 2, '"late"'), c.token)).result()

    assert [s.result for s in backend.job_step_list(a.id)] == ['"a"', '"0"']
    assert backend.job_step_list(lost.id) == []
    assert [s.result for s in backend.job_step_list(c.id)] == ['"c"', '"2"', '"late"']


def test_concurrent_jobs_checkpoint_their_own_results(app: conveyor.App, backend: Backend) -> None:
    """Many durable jobs' threads in one worker, their checkpoints coming together (a
    barrier before each step): each job's own results. Whether a thread finds a write
    in flight to join depends on the store's commit time (a fast one is done first):
    fewer commits than steps is counted on SQLite at synchronous=FULL
    (integration/test_step_group_commits.py) and for async jobs below."""
    needs(backend, "steps")
    barrier = threading.Barrier(JOBS, timeout=10)

    @app.step(name="double")
    def double(i: int, n: int) -> int:
        barrier.wait()
        return i * 100 + n * 2

    @app.task(name="flow")
    def flow(i: int) -> list[int]:
        return [double(i, n) for n in range(STEPS)]

    jobs = flow.enqueue_many([(i,) for i in range(JOBS)])
    worker = Worker(app, burst=True, concurrency=JOBS)
    worker.run(install_signals=False)
    for i, job in enumerate(jobs):
        assert job.status is JobState.SUCCEEDED
        assert job.result(timeout=0) == [i * 100 + n * 2 for n in range(STEPS)]
        saved = backend.job_step_list(job.id)
        assert [s.position for s in saved] == list(range(STEPS))
    checkpointer = worker.attempts.checkpointer
    if "step_groups" not in backend.features:  # PostgreSQL, MariaDB: each its own commit
        assert checkpointer is None
        return
    assert checkpointer is not None
    assert checkpointer.written == JOBS * STEPS
    assert checkpointer.groups <= checkpointer.written


def test_async_jobs_share_checkpoint_writes(app: conveyor.App, backend: Backend) -> None:
    """The async pool: async steps await their checkpoint while the loop runs the
    other jobs, whose checkpoints join the same write: fewer writes than steps, on the
    stores that group (feature ``step_groups``); results are right on every store."""
    needs(backend, "steps")

    @app.step(name="triple")
    async def triple(i: int, n: int) -> int:
        return i * 100 + n * 3

    @app.task(name="aflow")
    async def aflow(i: int) -> list[int]:
        return [await triple(i, n) for n in range(STEPS)]

    jobs = aflow.enqueue_many([(i,) for i in range(JOBS)])
    worker = Worker(app, burst=True, concurrency=JOBS, pool="async")
    worker.run(install_signals=False)
    for i, job in enumerate(jobs):
        assert job.result(timeout=0) == [i * 100 + n * 3 for n in range(STEPS)]
    checkpointer = worker.attempts.checkpointer
    if "step_groups" not in backend.features:  # PostgreSQL, MariaDB: each its own commit
        assert checkpointer is None
        return
    assert checkpointer is not None and checkpointer.written == JOBS * STEPS
    assert checkpointer.groups < checkpointer.written
