"""What the jobs admin (:mod:`conveyor.contrib.django.admin`) reads from conveyor's store
and does to it: filtered pages of jobs, one job shown in full, retry and cancel.

Everything here goes through the store's public seam (``job_list``, ``job_count``,
``job_get_many``, ``job_attempts``, ``job_log_list``, ``job_retry_many``,
``job_cancel_many``: what ``conveyor jobs``, ``conveyor retry|cancel`` and the web
dashboard use), so it works on every store (SQLite, Redis, PostgreSQL). Nothing here
touches Django's HTTP or admin machinery; the admin module does (permissions, CSRF,
templates).

Example:
    >>> q = JobsQuery.from_params({"state": "dead", "queue": " mail ", "task": ""})
    >>> q.to_params()
    {'state': 'dead', 'queue': 'mail'}
    >>> JobsQuery.from_params({"state": "no-such-state"}).state is None
    True
    >>> arguments('{"args":[1,"a"],"kwargs":{"n":{"x":2}}}')
    (['1', '"a"'], [('n', '{"x": 2}')])
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor import rowtext
from conveyor.backends.base import (
    AttemptRecord,
    Backend,
    JobCancelParams,
    JobCountParams,
    JobFilter,
    JobListParams,
    JobLogListParams,
    JobLogRecord,
    JobRecord,
    JobRetryParams,
)
from conveyor.secrets import mask_payload
from conveyor.states import JobState

#: The states each action applies to (the web dashboard's): retry re-runs what ended
#: badly (a succeeded job is not offered: retrying it repeats its effects), cancel stops
#: what has not ended (a running job at its worker's next heartbeat).
ACTION_STATES: dict[str, frozenset[JobState]] = {
    "retry": frozenset({JobState.DEAD, JobState.CANCELLED}),
    "cancel": frozenset({JobState.WAITING, JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING}),
}
#: The reason a cancel from the admin stores on the job.
CANCEL_REASON = "cancelled from the Django admin"
#: Most characters of a payload, result or traceback the job page shows.
SHOW_CHARS = 20_000
#: Log records shown on a job page (the first ones: a job's log is bounded anyway).
LOG_LIMIT = 500


@dataclasses.dataclass(frozen=True, slots=True)
class JobsQuery:
    """The jobs list's filters; every one narrows (AND). Blank is no filter."""

    state: JobState | None = None
    queue: str | None = None
    task: str | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> JobsQuery:
        """Read a query string: blank fields and an unknown state are ignored."""

        def get(name: str) -> str | None:
            value = str(params.get(name) or "").strip()
            return value or None

        state = get("state")
        known = None
        if state is not None and state in JobState._value2member_map_:
            known = JobState(state)
        return cls(known, get("queue"), get("task"))

    def to_params(self) -> dict[str, str]:
        """The inverse of :meth:`from_params`, for links."""
        out = {"state": self.state and self.state.value, "queue": self.queue, "task": self.task}
        return {k: v for k, v in out.items() if v}

    def list_params(self, *, after_id: str | None, limit: int) -> JobListParams:
        """Newest first (ids are creation order); ``after_id`` pages downwards."""
        return JobListParams(
            queue=self.queue,
            state=self.state,
            task=self.task,
            after_id=after_id,
            limit=limit,
            descending=True,
        )

    def count_params(self) -> JobCountParams:
        states = () if self.state is None else (self.state,)
        return JobCountParams(JobFilter(queue=self.queue, states=states, task=self.task))


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    jobs: list[JobRecord]
    next_after: str | None  # the ``after`` of the next page; None on the last one


def job_page(backend: Backend, query: JobsQuery, *, after_id: str | None, limit: int) -> Page:
    """One page of matching jobs, newest first (keyset paging on the id, so a page costs
    the same wherever it is and new jobs never shift the pages being read)."""
    found = backend.job_list(query.list_params(after_id=after_id, limit=limit + 1))
    more = len(found) > limit
    return Page(found[:limit], found[limit - 1].id if more else None)


def job_count(backend: Backend, query: JobsQuery) -> int:
    return backend.job_count(query.count_params())


def applies(action: str, job: JobRecord) -> bool:
    """Whether ``action`` (``"retry"`` or ``"cancel"``) applies to the job's state now."""
    return job.state in ACTION_STATES[action]


def retry(backend: Backend, ids: Sequence[str]) -> list[str]:
    """Put the dead or cancelled jobs among ``ids`` back in their queue (attempts start
    over); returns the ids that were."""
    wanted = [j.id for j in backend.job_get_many(list(ids)) if applies("retry", j)]
    if not wanted:
        return []
    rows = backend.job_retry_many(JobRetryParams(wanted))
    chosen = set(wanted)
    return [r.id for r in rows if r.id in chosen and r.state is JobState.QUEUED]


def cancel(backend: Backend, ids: Sequence[str]) -> list[str]:
    """Cancel the unfinished jobs among ``ids`` (a running one is marked: its worker
    stops it); returns the ids that were cancelled or marked."""
    wanted = [j.id for j in backend.job_get_many(list(ids)) if applies("cancel", j)]
    if not wanted:
        return []
    rows = backend.job_cancel_many(JobCancelParams(wanted, reason=CANCEL_REASON))
    return [r.id for r in rows if r.state is JobState.CANCELLED or r.cancel_requested]


# -- one job, as shown -----------------------------------------------------------------------


def when(ts: float | None) -> datetime.datetime | None:
    """An epoch time as an aware datetime (Django's templates show it in the current
    time zone).

    >>> when(0)
    datetime.datetime(1970, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    return None if ts is None else datetime.datetime.fromtimestamp(ts, datetime.UTC)


def arguments(payload: str) -> tuple[list[str], list[tuple[str, str]]] | None:
    """Each positional argument and each keyword argument as JSON text (secret ones as
    ``•••``); None when the payload is not conveyor's ``{"args", "kwargs"}`` JSON (the
    page shows the stored text instead)."""
    value = rowtext.loads(mask_payload(payload))
    if not isinstance(value, dict):
        return None
    args, kwargs = value.get("args", []), value.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return None
    return [_json(a) for a in args], [(str(k), _json(v)) for k, v in kwargs.items()]


def _json(value: Any) -> str:
    return rowtext.preview(rowtext.dumps(value) or repr(value), SHOW_CHARS)


def shown(text: str | None) -> str | None:
    """Stored JSON text (a result) pretty-printed when it parses, else as stored; cut
    at SHOW_CHARS.

    >>> shown('{"a":1}')
    '{\\n  "a": 1\\n}'
    """
    if text is None:
        return None
    value = rowtext.loads(text)
    if value is None and not rowtext.parses(text):
        return rowtext.preview(text, SHOW_CHARS)
    return rowtext.preview(rowtext.dumps(value, indent=2) or text, SHOW_CHARS)


def error_of(text: str | None) -> dict[str, str] | None:
    """A stored error as ``{"type", "message", "traceback"}`` (None: no error).

    >>> error_of('{"type": "KeyError", "message": "x", "traceback": "T"}')
    {'type': 'KeyError', 'message': 'x', 'traceback': 'T'}
    >>> error_of("plain text")["message"]
    'plain text'
    """
    if not text:
        return None
    value = rowtext.loads(text)
    if not isinstance(value, dict):
        return {"type": "", "message": rowtext.preview(text, SHOW_CHARS), "traceback": ""}
    return {
        key: rowtext.preview(str(value.get(key) or ""), SHOW_CHARS)
        for key in ("type", "message", "traceback")
    }


@dataclasses.dataclass(frozen=True, slots=True)
class AttemptRow:
    number: int
    worker: str
    started: datetime.datetime | None
    took: str
    outcome: str
    error: dict[str, str] | None


def attempt_rows(attempts: Sequence[AttemptRecord]) -> list[AttemptRow]:
    """A job's attempts as its page lists them (duration in seconds, error parsed)."""
    return [
        AttemptRow(
            a.attempt,
            a.worker_id or "-",
            when(a.started_at),
            "-"
            if a.started_at is None or a.finished_at is None
            else f"{a.finished_at - a.started_at:.3f}s",
            a.outcome,
            error_of(a.error),
        )
        for a in attempts
    ]


def job_logs(backend: Backend, job_id: str) -> list[JobLogRecord]:
    """A job's captured log records (the first LOG_LIMIT)."""
    return backend.job_log_list(JobLogListParams(job_id=job_id, limit=LOG_LIMIT))
