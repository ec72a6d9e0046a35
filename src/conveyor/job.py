"""``Job``: a handle on one job id — status, wait, result, cancel, and asyncio twins.

A handle holds no state of its own beyond the id: every call asks the backend, so a
handle made in one process (``app.job(id)``) sees what a worker in another did.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def add(a: int, b: int) -> int:
    ...     return a + b
    >>> job = add.enqueue(1, 2)
    >>> job.cancel().status
    <JobState.CANCELLED: 'cancelled'>
    >>> job.result(timeout=0)
    Traceback (most recent call last):
    conveyor.errors.JobCancelled: job ... was cancelled: cancelled by user
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from conveyor.aio import to_thread
from conveyor.backends.base import (
    AttemptRecord,
    JobCancelParams,
    JobRecord,
    JobWaitParams,
    StepRecord,
)
from conveyor.errors import JobCancelled, JobFailed, JobNotFound, ResultNotStored
from conveyor.states import JobState

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.backends.base import Backend
    from conveyor.task import Task

R = TypeVar("R")


class Job(Generic[R]):
    """Handle on one enqueued job."""

    __slots__ = ("_store", "_task", "app", "id")

    def __init__(
        self, app: App, id: str, task: Task[Any, R] | None = None, store: Backend | None = None
    ) -> None:
        self.app = app
        self.id = id
        self._task = task
        #: the store this handle reads: ``store``, else the one put in place of the
        #: app's while it was made (``App.on_store``: a testing mode's), else the app's
        self._store = store if store is not None else app.substitute

    @property
    def _backend(self) -> Backend:
        store = self._store
        return store if store is not None else self.app.backend

    def __repr__(self) -> str:
        return f"<Job {self.id}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    # -- blocking ------------------------------------------------------------------------

    def refresh(self) -> JobRecord:
        """The job's stored record now. Raises JobNotFound when it no longer exists."""
        found = self._backend.job_get_many([self.id])
        if not found:
            raise JobNotFound(self.id)
        return found[0]

    @property
    def status(self) -> JobState:
        """The job's current state (read from the store on every access)."""
        return self.refresh().state

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers stored with the job (read from the store on every access)."""
        from conveyor.headers import decode

        return decode(self.refresh().headers)

    def progress(self) -> tuple[float | None, str | None]:
        """``(fraction, message)`` last reported by the task (``current_job().progress``);
        ``(None, None)`` before any report. Stored a few times a second at most."""
        record = self.refresh()
        return record.progress, record.progress_message

    def dependencies(self) -> list[Job[Any]]:
        """The parents this job waits for (workflows), in order; empty for a plain job."""
        from conveyor.backends.base import JobDependenciesParams

        deps = self._backend.job_dependencies_many(JobDependenciesParams([self.id]))
        return [Job(self.app, d.parent_id, store=self._store) for d in deps]

    def then(self, step: Any, **options: Any) -> Job[Any]:
        """Enqueue ``step`` (a task or ``task.s(...)``) to run after this job succeeds,
        with this job's result as its first argument. Returns the new job.

        >>> # report.enqueue(day).then(mail.s(to="ops@example.com"))
        """
        from conveyor.compose import then

        return then(self, step, **options)

    def on_failure(self, step: Any, **options: Any) -> Job[Any]:
        """Enqueue ``step`` to run only if this job ends dead or cancelled, with
        ``{"job_id", "state", "reason", "error"}`` as its first argument; it is cancelled
        if this job succeeds. On a chain's last step it covers the whole chain."""
        from conveyor.compose import on_failure

        return on_failure(self, step, **options)

    def attempts(self) -> list[AttemptRecord]:
        """Every recorded attempt: worker, start, end, outcome, error."""
        return self._backend.job_attempts(self.id)

    def wait(self, timeout: float | None = None) -> JobRecord:
        """Block until the job is finished; raise ``TimeoutError`` after ``timeout`` s."""
        record = self._backend.job_wait(JobWaitParams(self.id, timeout))
        if record is None:
            raise TimeoutError(f"job {self.id} not finished after {timeout} s")
        return record

    def result(self, timeout: float | None = None) -> R:
        """The return value. Raises JobFailed, JobCancelled or TimeoutError, and
        ResultNotStored for a task with ``store_result=False`` or a result cleared
        after its ``result_ttl`` (``wait()`` waits without asking for it)."""
        return self._outcome(self.wait(timeout))

    def cancel(self, reason: str = "cancelled by user") -> Job[R]:
        """Cancel: a queued or scheduled job at once, a running one as soon as its worker
        sees the request (async tasks are cancelled; sync tasks can check
        ``current_job().cancel_requested``). Finished jobs are left as they are."""
        found = self._backend.job_cancel_many(JobCancelParams([self.id], reason))
        if not found:
            raise JobNotFound(self.id)
        return self

    def send(self, name: str, payload: Any = None) -> bool:
        """Deliver the event ``name`` with ``payload`` (JSON-encodable) to this durable
        job: consumed once by its ``conveyor.wait_for(name)``, now if it waits for it
        (True: it was woken), else when it does. Raises JobNotFound."""
        from conveyor.backends.base import JobEventSendParams, require_feature
        from conveyor.codec import encode

        require_feature(self._backend, "steps")
        text = encode(payload, "event payload")
        return self._backend.job_event_send(JobEventSendParams(self.id, name, text))

    def steps(self) -> list[StepRecord]:
        """The saved steps of this durable job, by position (``conveyor job ID``); the
        values it published are apart (:meth:`read`)."""
        from conveyor.backends.base import is_published

        if "steps" not in self._backend.features:
            return []
        return [s for s in self._backend.job_step_list(self.id) if not is_published(s)]

    def read(self, key: str, default: Any = None) -> Any:
        """The last value the job published under ``key`` (``current_job().publish(key,
        value)``, readable while it runs and after), or ``default`` if none yet."""
        from conveyor.backends.base import PUBLISH_PREFIX, is_published
        from conveyor.codec import decode

        if "steps" not in self._backend.features:
            return default
        name = PUBLISH_PREFIX + key
        for s in self._backend.job_step_list(self.id):
            if s.name == name and is_published(s):
                return decode(s.result)
        return default

    # -- asyncio twins -------------------------------------------------------------------

    async def asend(self, name: str, payload: Any = None) -> bool:
        """Asyncio twin of :meth:`send`."""
        return await to_thread(self.send, name, payload)

    async def aread(self, key: str, default: Any = None) -> Any:
        """Asyncio twin of :meth:`read`."""
        return await to_thread(self.read, key, default)

    async def arefresh(self) -> JobRecord:
        """Asyncio twin of :meth:`refresh`."""
        return await to_thread(self.refresh)

    async def astatus(self) -> JobState:
        """Asyncio twin of :attr:`status`."""
        return (await self.arefresh()).state

    async def await_(self, timeout: float | None = None) -> JobRecord:
        """Asyncio twin of :meth:`wait` (``await`` is a keyword, hence the underscore)."""
        return await to_thread(self.wait, timeout)

    async def aresult(self, timeout: float | None = None) -> R:
        """Asyncio twin of :meth:`result`."""
        return self._outcome(await self.await_(timeout))

    async def acancel(self, reason: str = "cancelled by user") -> Job[R]:
        """Asyncio twin of :meth:`cancel`."""
        return await to_thread(self.cancel, reason)

    # -- helpers -------------------------------------------------------------------------

    def _outcome(self, record: JobRecord) -> R:
        if record.state is JobState.SUCCEEDED:
            task = self._task or self.app.tasks.get(record.task)
            if record.result is None:  # a stored None is the text "null"
                raise ResultNotStored(self.id, _why_no_result(task))
            if task is not None:
                value: R = task.decoder.result(record.result)
                return value
            return cast(R, json.loads(record.result) if record.result is not None else None)
        if record.state is JobState.CANCELLED:
            raise JobCancelled(self.id, record.reason)
        error = json.loads(record.error) if record.error else {}
        raise JobFailed(
            self.id,
            str(error.get("type", "")),
            str(error.get("message", record.reason or "")),
            str(error.get("traceback", "")),
            record.reason,
        )


def _why_no_result(task: Task[Any, Any] | None) -> str:
    """Why a succeeded job has no result, as far as this process's task says."""
    if task is None:
        return "its task is not registered here (store_result=False or result_ttl there)"
    if not task.options.store_result:
        return f"task {task.name} has store_result=False"
    if task.options.result_ttl is not None:
        return f"task {task.name} keeps results for result_ttl={task.options.result_ttl}"
    return f"task {task.name} stored none (store_result=False or result_ttl when it ran)"
