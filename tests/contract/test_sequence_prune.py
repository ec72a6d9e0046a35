"""The pruner forgets a sequence key with no active job (its last job succeeded or is
gone), so the store's per-key state does not grow with every key ever used; a key
whose last job failed (it may block the next) or is still active keeps its state."""

from __future__ import annotations

import time

import conveyor
from conveyor.backends.base import Backend, JobPurgeParams, SequencePruneParams
from conveyor.worker.services.pruner import Pruner
from conveyor.worker.worker import Worker
from tests.support.flow import needs


def pruned_by(worker: Worker) -> int:
    """The keys the worker's own pruner forgot (its first tick can race the jobs)."""
    return sum(s.sequences_pruned for s in worker._services if isinstance(s, Pruner))


def test_prune_forgets_done_keys_only(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "sequences")

    @app.task(sequence_key=lambda key, n: key, max_attempts=1)
    def step(key: str, n: int) -> None:
        if n < 0:
            raise ValueError("bad")

    done, failed = step.enqueue("done", 1), step.enqueue("failed", -1)
    purged = step.enqueue("purged", 1)
    worker = Worker(app, concurrency=2).start()
    try:
        for job in (done, failed, purged):
            job.wait(timeout=30)
    finally:
        worker.stop()
    backend.job_purge(JobPurgeParams(finished_before=time.time() + 60, limit=1000))  # all of them
    for_it = [j.id for j in (done, failed, purged)]
    assert not any(backend.job_get_many(for_it))
    active = step.enqueue("active", 1)  # queued: nobody runs it
    swept = pruned_by(worker) + backend.sequence_prune(SequencePruneParams())
    assert swept == 3  # done, failed, purged: their jobs are gone
    assert backend.sequence_prune(SequencePruneParams()) == 0  # active keeps its row
    behind = step.enqueue("active", 2)
    assert active.refresh().state == "queued"
    assert behind.refresh().state == "waiting"  # still behind the active job


def test_failed_tail_keeps_blocking_and_pruner_runs_it(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "sequences")

    @app.task(sequence_key=lambda key, n: key, max_attempts=1)
    def step(key: str, n: int) -> None:
        if n < 0:
            raise ValueError("bad")

    ok, bad = step.enqueue("ok", 1), step.enqueue("bad", -1)
    worker = Worker(app, concurrency=2).start()
    try:
        ok.wait(timeout=30)
        bad.wait(timeout=30)
        pruner = Pruner(worker, interval=60.0)
        pruner.tick()  # a worker's sweep: forgets "ok", keeps "bad"
        assert pruner.sequences_pruned + pruned_by(worker) == 1
        assert backend.sequence_prune(SequencePruneParams()) == 0
        held = step.enqueue("bad", 2)  # the dead tail still blocks the next job
        again = step.enqueue("ok", 2)  # a forgotten key starts afresh, and runs
        assert again.wait(timeout=30).state == "succeeded"
        time.sleep(0.1)
        record = held.refresh()
        assert record.state == "waiting"
        assert record.reason == f"sequence blocked: {bad.id} ended dead"
    finally:
        worker.stop()
