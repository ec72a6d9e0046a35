"""Jobs of a testing mode, kept in memory and run in the caller as a worker runs them.

Nothing here touches a store. Each attempt goes the worker's way: a ``ClaimedJob`` is
built from the encoded plan, run by the thread pool's own ``run_one`` (``run_sync``:
decode, ``current_job()``, the thread watchdog for a sync task's ``timeout``,
``asyncio.timeout`` for an async one), and its :class:`~conveyor.worker.outcome.Outcome`
becomes a finish by ``outcome.finish_params`` (the task's ``Backoff`` and
``retry_delay`` hook) and :data:`conveyor.rules.FINISH`. Retries run at once, without
sleeping. Workflow children are released by :func:`conveyor.rules.insert_decision` and
:func:`conveyor.rules.on_parent_end`, with the parents' results piped in as the stores
do.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def double(x: int) -> int:
    ...     return 2 * x
    >>> execute(double, (21,), {})
    42
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from conveyor.backends.base import (
    AttemptRecord,
    ClaimedJob,
    JobInsertBatchParams,
    JobInsertParams,
    JobRecord,
)
from conveyor.codec import encode_payload
from conveyor.context import JobContext, context_of
from conveyor.errors import ConfigurationError, JobFailed, JobNotFound
from conveyor.ids import new_id
from conveyor.job import Job
from conveyor.records import replace
from conveyor.rules import (
    CANCEL_AT_ONCE,
    EXPIRED_REASON,
    FAILED_AT_INSERT,
    FINISH,
    PIPE_ONE,
    WAS_CANCELLED,
    ChildEffect,
    JobStory,
    cancelled_reason,
    failure_error,
    insert_decision,
    is_expired,
    not_needed_reason,
    on_parent_end,
    ready_state,
)
from conveyor.states import FinishKind, JobState

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.task import Plan, Task
    from conveyor.worker.executors.thread import ThreadExecutor
    from conveyor.worker.outcome import Outcome

R = TypeVar("R")

#: The worker id attempts run in a testing mode are recorded under.
WORKER_ID = "testing"
#: A job snoozing this many times in a row in a testing mode is an endless loop there.
MAX_SNOOZES = 1000


def params_of(plan: Plan) -> list[JobInsertParams]:
    """A plan as one params record per job (a batch shares its options)."""
    if not isinstance(plan, JobInsertBatchParams):
        return list(plan)
    return [
        JobInsertParams(
            id=job_id,
            task=plan.task,
            queue=plan.queue,
            payload=payload,
            priority=plan.priority,
            run_at=plan.run_at,
            max_attempts=plan.max_attempts,
            timeout=plan.timeout,
            lease=plan.lease,
            headers=None if plan.headers is None else plan.headers[n],
            expires_at=plan.expires_at,
        )
        for n, (job_id, payload) in enumerate(zip(plan.ids, plan.payloads, strict=True))
    ]


class Runner:
    """Runs attempts as the thread pool does (its watchdog started on first need)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._executor: ThreadExecutor | None = None
        self._lock = threading.Lock()

    def run(self, job: ClaimedJob, ctx: JobContext) -> Outcome:
        executor = self._started()
        task = self.app.tasks.get(job.task)
        if task is not None and task.is_async and _loop_running():
            # An async task gets its own loop, as in a thread-pool worker; asyncio.run
            # cannot start one in a thread whose loop is running (an async test), so
            # the attempt runs in a thread of its own, the caller waiting for it.
            return _in_thread(lambda: executor.run_one(job, ctx))
        return executor.run_one(job, ctx)

    def _started(self) -> ThreadExecutor:
        with self._lock:
            if self._executor is None:
                from conveyor.worker.executors.thread import ThreadExecutor

                self._executor = ThreadExecutor(self.app, 1)
                self._executor.start_inline()
            return self._executor

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.stop(0.0)
                self._executor = None


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _in_thread(call: Callable[[], Outcome]) -> Outcome:
    done: list[Outcome] = []
    failed: list[BaseException] = []
    context = contextvars.copy_context()

    def target() -> None:
        try:
            done.append(context.run(call))
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=target, name="conveyor-testing")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


class LocalJobs:
    """The jobs one testing mode enqueued: records, attempts and workflow edges.

    ``on_ready(id)`` is called for each job that becomes ready (at enqueue, or when its
    parents release it); the mode decides whether it runs now or waits for ``drain``.
    """

    def __init__(self, app: App, on_ready: Callable[[str], None]) -> None:
        self.app = app
        self.on_ready = on_ready
        self.records: dict[str, JobRecord] = {}
        self.attempts: dict[str, list[AttemptRecord]] = {}
        self.parents: dict[str, tuple[tuple[str, ...], int]] = {}  # child -> (parents, pipe)
        self.children: dict[str, list[str]] = {}
        self.runner = Runner(app)
        self._token = 0

    # -- enqueue -------------------------------------------------------------------------

    def add_records(self, plan: Plan) -> list[JobInsertParams]:
        """Record every job of ``plan`` (all of it before any runs: a chain's later
        steps wait for its first); :meth:`release` then hands the ready ones on."""
        params = params_of(plan)
        now = time.time()
        for p in params:
            self._insert(p, now)
        return params

    def release(self, params: Sequence[JobInsertParams]) -> None:
        """Hand the jobs of ``params`` that are ready to ``on_ready``, in order."""
        for p in params:
            record = self.records.get(p.id)
            if record is not None and record.state in (JobState.QUEUED, JobState.SCHEDULED):
                self.on_ready(p.id)

    def _insert(self, p: JobInsertParams, now: float) -> None:
        run_at = p.run_at if p.run_at is not None else now
        state, payload, reason, waiting_on = ready_state(run_at, now), p.payload, None, 0
        if p.depends_on:
            unknown = [d for d in p.depends_on if d not in self.records]
            if unknown:
                raise ConfigurationError(
                    f"depends_on names job {unknown[0]}, which this testing mode did not "
                    "enqueue (jobs in the store are not visible to it)"
                )
            states = [self.records[d].state.value for d in p.depends_on]
            decided = insert_decision(p.pipe, p.depends_on, states)
            self.parents[p.id] = (p.depends_on, p.pipe)
            for parent in p.depends_on:
                self.children.setdefault(parent, []).append(p.id)
            if decided.state == "waiting":
                state, waiting_on = JobState.WAITING, decided.waiting_on
            elif decided.state == "cancelled":
                state, reason = JobState.CANCELLED, decided.reason
            elif decided.failure_of is not None:
                payload = self._failure_payload(payload, decided.failure_of, FAILED_AT_INSERT)
            elif decided.piped:
                payload = self._piped_payload(payload, p.depends_on, p.pipe)
        self.records[p.id] = JobRecord(
            id=p.id,
            task=p.task,
            queue=p.queue,
            state=state,
            priority=p.priority,
            payload=payload,
            attempt=0,
            max_attempts=p.max_attempts,
            rescues=0,
            token=0,
            run_at=run_at,
            created_at=now,
            timeout=p.timeout,
            lease=p.lease,
            worker_id=None,
            lease_until=None,
            cancel_requested=False,
            result=None,
            error=None,
            reason=reason,
            started_at=None,
            finished_at=now if state is JobState.CANCELLED else None,
            unique_key=p.unique_key,
            waiting_on=waiting_on,
            headers=p.headers,
            expires_at=p.expires_at,
        )

    def handles(self, params: Sequence[JobInsertParams]) -> list[Job[Any]]:
        return [LocalJob(self, p.id, self.app.tasks.get(p.task)) for p in params]

    # -- running -------------------------------------------------------------------------

    def run(self, job_id: str) -> JobRecord | None:
        """Run a ready job to its end (retries at once, no sleeping); its last record,
        ``None`` when it was dropped (by a ``retry_delay`` hook)."""
        snoozes = 0
        while True:
            record = self.records[job_id]
            if record.state not in (JobState.QUEUED, JobState.SCHEDULED):
                return record
            kind = self._attempt(record)
            if kind is FinishKind.SNOOZE:
                snoozes += 1
                if snoozes >= MAX_SNOOZES:
                    raise RuntimeError(
                        f"job {job_id} snoozed {snoozes} times in a testing mode, where a "
                        "snooze runs again at once"
                    )
            final = self.records.get(job_id)
            if final is None or final.state.is_finished:
                return final

    def _attempt(self, record: JobRecord) -> FinishKind:
        from conveyor.worker.outcome import Outcome, finish_params

        self._token += 1
        attempt, started = record.attempt + 1, time.time()
        job = ClaimedJob(
            record.id,
            record.task,
            record.queue,
            record.payload,
            attempt,
            record.max_attempts,
            self._token,
            record.timeout,
            record.lease,
            record.run_at,
            started,
            0,
            record.priority,
            record.headers,
            record.expires_at,
        )
        ctx = context_of(job)
        self.records[record.id] = replace(
            record, state=JobState.RUNNING, attempt=attempt, token=self._token, started_at=started
        )
        if is_expired(job.expires_at, started):  # as the worker's check before a start
            outcome = Outcome.expired(EXPIRED_REASON)
        else:
            outcome = self.runner.run(job, ctx)
        task = self.app.tasks.get(record.task)
        finish = finish_params(outcome, job, task, WORKER_ID, ctx.cancel_requested)
        rule = FINISH[finish.kind]
        progress = ctx.take_progress()
        self.attempts.setdefault(record.id, []).append(
            AttemptRecord(
                record.id,
                attempt,
                self._token,
                WORKER_ID,
                started,
                finish.finished_at,
                rule.attempt_outcome or "dropped",
                finish.error,
            )
        )
        if rule.state is None:  # dropped: the job and its history are gone
            del self.records[record.id]
            self.attempts.pop(record.id, None)
            self._settle(record.id, rule.parent_failed)
            return finish.kind
        current = self.records[record.id]
        self.records[record.id] = replace(
            current,
            state=rule.state,
            attempt=attempt - 1 if rule.gives_back_attempt else attempt,
            run_at=finish.run_at if finish.run_at is not None else current.run_at,
            result=finish.result,
            error=finish.error,
            reason=finish.reason,
            finished_at=finish.finished_at if rule.state.is_finished else None,
            progress=progress[0] if progress else current.progress,
            progress_message=progress[1] if progress else current.progress_message,
        )
        if rule.state.is_finished:
            self._settle(record.id, rule.parent_failed)
        return finish.kind

    def cancel(self, job_id: str, reason: str) -> None:
        record = self.records[job_id]
        if record.state in CANCEL_AT_ONCE:
            self.records[job_id] = replace(
                record, state=JobState.CANCELLED, reason=reason, finished_at=time.time()
            )
            self._settle(job_id, WAS_CANCELLED)

    # -- workflows -----------------------------------------------------------------------

    def _settle(self, parent: str, why: str | None) -> None:
        """Apply a parent's end (``why`` None: it succeeded) to its waiting children, as
        the stores do in the finishing transaction; a cancelled child's own children
        follow."""
        pending = [(parent, why)]
        released: list[str] = []
        while pending:
            ended, because = pending.pop(0)
            for child in self.children.get(ended, []):
                record = self.records.get(child)
                if record is None or record.state is not JobState.WAITING:
                    continue
                parents, pipe = self.parents[child]
                effect = on_parent_end(pipe, parent_succeeded=because is None)
                now = time.time()
                if effect is ChildEffect.COUNT_DOWN:
                    left = record.waiting_on - 1
                    if left > 0:
                        self.records[child] = replace(record, waiting_on=left)
                        continue
                    payload = (
                        self._piped_payload(record.payload, parents, pipe)
                        if pipe
                        else record.payload
                    )
                    self.records[child] = replace(
                        record, state=ready_state(record.run_at, now), payload=payload, waiting_on=0
                    )
                    released.append(child)
                elif effect is ChildEffect.RELEASE:
                    payload = self._failure_payload(record.payload, ended, because or "")
                    self.records[child] = replace(
                        record, state=ready_state(record.run_at, now), payload=payload, waiting_on=0
                    )
                    released.append(child)
                else:
                    reason = (
                        not_needed_reason(ended)
                        if because is None
                        else cancelled_reason(ended, because)
                    )
                    self.records[child] = replace(
                        record,
                        state=JobState.CANCELLED,
                        reason=reason,
                        finished_at=now,
                        waiting_on=0,
                    )
                    pending.append((child, WAS_CANCELLED))
        for child in released:
            self.on_ready(child)

    def _piped_payload(self, payload: str, parents: Sequence[str], pipe: int) -> str:
        results = []
        for parent in parents:
            found = self.records.get(parent)
            text = found.result if found is not None else None
            results.append(json.loads(text) if text is not None else None)
        data = json.loads(payload)
        data["args"] = [results[0] if pipe == PIPE_ONE else results, *data.get("args", [])]
        return json.dumps(data, separators=(",", ":"))

    def _story(self, job_id: str) -> JobStory:
        found = self.records.get(job_id)
        return (found.state.value, found.reason, found.error) if found else None

    def _failure_payload(self, payload: str, parent: str, why: str) -> str:
        found = self.records.get(parent)
        error = failure_error(parent, self._story)  # behind a cancelled parent: the failed one's
        info = {
            "job_id": parent,
            "state": found.state.value if found else "deleted",
            "reason": (found.reason if found and found.reason else why),
            "error": json.loads(error) if error else None,
        }
        data = json.loads(payload)
        data["args"] = [info, *data.get("args", [])]
        return json.dumps(data, separators=(",", ":"))


class LocalJob(Job[R]):
    """A handle on a job of a testing mode: reads its in-memory record, never a store.

    ``result()`` of a job that has not run (captured, or held by ``run_scheduled=False``)
    raises ``TimeoutError`` at once, saying to call ``drain()``.
    """

    __slots__ = ("_jobs",)

    def __init__(self, jobs: LocalJobs, id: str, task: Task[Any, R] | None = None) -> None:
        super().__init__(jobs.app, id, task)
        self._jobs = jobs

    def refresh(self) -> JobRecord:
        found = self._jobs.records.get(self.id)
        if found is None:
            raise JobNotFound(self.id)
        return found

    def wait(self, timeout: float | None = None) -> JobRecord:
        record = self.refresh()
        if not record.state.is_finished:
            raise TimeoutError(
                f"job {self.id} is {record.state.value} in a testing mode, where nothing "
                "runs it later: call drain() on the mode to run it"
            )
        return record

    def attempts(self) -> list[AttemptRecord]:
        return list(self._jobs.attempts.get(self.id, []))

    def dependencies(self) -> list[Job[Any]]:
        parents, _ = self._jobs.parents.get(self.id, ((), 0))
        return [LocalJob(self._jobs, p, None) for p in parents]

    def cancel(self, reason: str = "cancelled by user") -> Job[R]:
        self.refresh()
        self._jobs.cancel(self.id, reason)
        return self


def execute(task: Task[Any, Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """``task.execute(...)``: one attempt of ``task`` now, as a worker runs it, without a
    store. Returns the decoded result; a failure raises the task's own exception (a job
    that could not run at all: :class:`~conveyor.errors.JobFailed`)."""
    from conveyor.worker.outcome import OK

    task.check_arguments(*args, **kwargs)
    payload = encode_payload(args, kwargs, max_bytes=task.app.max_payload_bytes)
    opts = task.options
    now = time.time()
    job_id = new_id()
    job = ClaimedJob(
        job_id,
        opts.name,
        opts.queue,
        payload,
        1,
        opts.max_attempts,
        1,
        opts.timeout,
        opts.lease,
        now,
        now,
        0,
        opts.priority,
    )
    runner = Runner(task.app)
    try:
        outcome = runner.run(job, JobContext(job_id, opts.name, opts.queue, 1, opts.max_attempts))
    finally:
        runner.close()
    if outcome.status == OK:  # store_result=False: no result to decode, None
        return task.decoder.result(outcome.result)
    if outcome.error is not None:
        raise outcome.error
    error = json.loads(outcome.error_json) if outcome.error_json else {}
    raise JobFailed(
        job_id,
        str(error.get("type", "")),
        str(error.get("message", outcome.reason or "")),
        str(error.get("traceback", "")),
        outcome.reason,
    )
