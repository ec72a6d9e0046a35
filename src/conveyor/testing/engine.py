"""The testing modes' engine: an app's jobs on a memory store of their own, drained by
the real runner.

:class:`ModeStore` is a private ``memory://`` store (the backend every store is: the
same inserts, claims, finishes, workflow releases, unique keys and limits, by
:mod:`conveyor.rules`) that tells its mode what each insert wrote and never waits for a
job nobody will run. :class:`Engine` drains it as a one-slot worker in the caller's
thread: claim, run (:class:`~conveyor.testing.runner.Runner`), finish, until nothing is
ready; retries and snoozes run again at once (the back-off is decided, not slept).
:func:`execute` is one attempt of one task on such a store (``task.execute``).

Example:
    >>> import conveyor
    >>> app = conveyor.App("memory://")
    >>> @app.task
    ... def double(x: int) -> int:
    ...     return 2 * x
    >>> execute(double, (21,), {})
    42
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import (
    JobClaimParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobProgressParams,
    JobRecord,
    JobWaitParams,
)
from conveyor.backends.memory.backend import MemoryBackend
from conveyor.backends.memory.store import MemoryStore
from conveyor.backends.params import one_per_job
from conveyor.codec import encode_payload
from conveyor.errors import ConfigurationError, JobFailed, JobNotFound
from conveyor.ids import new_id
from conveyor.rules import FINISH
from conveyor.states import FinishKind, JobState
from conveyor.testing.runner import WORKER_ID, Runner

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.task import Task

#: A job snoozing this many times in a row in a testing mode is an endless loop there.
MAX_SNOOZES = 1000
#: Jobs one drain runs at most: more is a task that enqueues itself forever.
MAX_DRAINED = 100_000


class ModeStore(MemoryBackend):
    """A private memory store that hands each insert to ``on_insert`` (after it is
    written) and answers a wait for an unfinished job at once: nothing runs it later."""

    def __init__(self, on_insert: Callable[[list[JobInsertParams]], None]) -> None:
        super().__init__("memory://")
        self._on_insert = on_insert

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        try:
            ids = super().job_insert_many(params)
        except JobNotFound as exc:
            raise ConfigurationError(
                f"depends_on names job {exc.args[0]}, which this testing mode did not "
                "enqueue (jobs in the store are not visible to it)"
            ) from None
        self._on_insert(one_per_job(params))
        return ids

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        record = super().job_wait(JobWaitParams(params.id, 0.0))
        if record is None:
            state = self.job_get_many([params.id])[0].state.value
            raise TimeoutError(
                f"job {params.id} is {state} in a testing mode, where nothing runs it "
                "later: call drain() on the mode to run it"
            )
        return record

    def forget(self) -> None:
        """Every job gone (their handles raise JobNotFound)."""
        self.store = MemoryStore()

    def make_due(self, everything: bool) -> None:
        """Scheduled jobs become ready now: all of them, or (``everything=False``) those
        that ran before (a retry's back-off or a snooze, run again at once)."""
        with self.store.write() as store:
            for row in store.jobs.values():
                if row.state is JobState.SCHEDULED and (everything or row.id in store.attempts):
                    row.state = JobState.QUEUED


class Engine:
    """Drains a :class:`ModeStore` as a one-slot worker in the caller's thread."""

    def __init__(self, app: App, store: ModeStore) -> None:
        self.app = app
        self.store = store
        self.runner = Runner(app)

    def drain(self, *, everything: bool) -> list[str]:
        """Run ready jobs (and, with ``everything``, scheduled ones) and what they make
        ready, until nothing is left; the ids of those that finished, in order."""
        finished: list[str] = []
        snoozes: dict[str, int] = {}
        while True:
            self.store.make_due(everything)
            ready = [(q.queue, 1) for q in self.store.queue_stats() if q.counts.get("queued")]
            claimed = self.store.job_claim(JobClaimParams(WORKER_ID, ready, 1)) if ready else []
            if not claimed:
                return finished
            job = claimed[0]
            finish, _, progress = self.runner.attempt(job, self.store)
            if progress is not None:
                self.store.job_progress_many([JobProgressParams(job.id, job.token, *progress)])
            self.store.job_finish_many([finish])
            rule = FINISH[finish.kind]
            if finish.kind is FinishKind.SNOOZE:
                snoozes[job.id] = snoozes.get(job.id, 0) + 1
                if snoozes[job.id] >= MAX_SNOOZES:
                    raise RuntimeError(
                        f"job {job.id} snoozed {MAX_SNOOZES} times in a testing mode, where "
                        "a snooze runs again at once"
                    )
            elif rule.ends_job and rule.state is not None:
                finished.append(job.id)
                if len(finished) >= MAX_DRAINED:
                    raise RuntimeError(f"drain() ran {MAX_DRAINED} jobs and more keep coming")

    def close(self) -> None:
        self.runner.close()


def execute(task: Task[Any, Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """``task.execute(...)``: one attempt of ``task`` now, claimed from a memory store of
    its own and run as a worker runs it. Returns the decoded result; a failure raises the
    task's own exception (a job that could not run at all:
    :class:`~conveyor.errors.JobFailed`)."""
    from conveyor.worker.outcome import OK

    task.check_arguments(*args, **kwargs)
    payload = encode_payload(args, kwargs, max_bytes=task.app.max_payload_bytes)
    opts = task.options
    store = MemoryBackend("memory://")
    store.job_insert_many(
        [
            JobInsertParams(
                id=new_id(),
                task=opts.name,
                queue=opts.queue,
                payload=payload,
                priority=opts.priority,
                run_at=time.time(),
                max_attempts=opts.max_attempts,
                timeout=opts.timeout,
                lease=opts.lease,
            )
        ]
    )
    (job,) = store.job_claim(JobClaimParams(WORKER_ID, [(opts.queue, 1)], 1))
    runner = Runner(task.app)
    try:
        finish, outcome, _ = runner.attempt(job, store)
    finally:
        runner.close()
    store.job_finish_many([finish])
    if outcome.status == OK:  # store_result=False: no result to decode, None
        return task.decoder.result(outcome.result)
    if outcome.error is not None:
        raise outcome.error
    error = json.loads(outcome.error_json) if outcome.error_json else {}
    raise JobFailed(
        job.id,
        str(error.get("type", "")),
        str(error.get("message", outcome.reason or "")),
        str(error.get("traceback", "")),
        outcome.reason,
    )
