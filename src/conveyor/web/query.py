"""What the dashboard asks the backend: filtered pages of jobs, and bulk actions.

Every filter the dashboard offers lives in :class:`JobQuery`. ``list_params`` is the one
place that turns it into backend parameters; ``matches`` does, in Python, what the
backend cannot do yet (searching the arguments text). When the backend learns a new
filter (a time range, ``--where``), add the field here and map it in ``list_params``:
the form, the paging links and the bulk actions all follow from the dataclass.

Example:
    >>> q = JobQuery.from_params({"queue": "mail", "state": "dead", "q": "alice"})
    >>> q.list_params(after_id=None, limit=50).state
    <JobState.DEAD: 'dead'>
    >>> q.to_params()
    {'queue': 'mail', 'state': 'dead', 'q': 'alice'}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobFilter,
    JobListParams,
    JobLogListParams,
    JobRecord,
    JobRetryParams,
    QueuePauseParams,
    QueueResumeParams,
    WhereCondition,
)
from conveyor.query import parse_where
from conveyor.states import JobState

#: Rows read from the backend per round trip while searching or collecting a bulk set.
SCAN_BATCH = 500
#: A search reads at most this many rows before giving up on filling a page, so one
#: request never scans an unbounded store (the page then says the scan was cut short).
SCAN_LIMIT = 20_000


@dataclasses.dataclass(frozen=True, slots=True)
class JobQuery:
    """The jobs table's filters; every field narrows the set (AND)."""

    queue: str | None = None
    state: JobState | None = None
    task: str | None = None
    search: str | None = None  # case-insensitive substring of the arguments JSON
    #: ``--where`` conditions as the CLI takes them (``kwargs.user_id=42``), ``;``-separated;
    #: applied by the backend (json_extract on SQLite) when it has the filters feature.
    where: str | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> JobQuery:
        """Read a query string or a form; blank fields and unknown states are ignored."""

        def get(name: str) -> str | None:
            value = (params.get(name) or "").strip()
            return value or None

        state = get("state")
        return cls(
            queue=get("queue"),
            state=JobState(state)
            if state is not None and state in JobState._value2member_map_
            else None,
            task=get("task"),
            search=get("q"),
            where=get("where"),
        )

    def to_params(self) -> dict[str, str]:
        """The inverse of :meth:`from_params`, for links and hidden form fields."""
        out = {
            "queue": self.queue,
            "state": self.state and self.state.value,
            "task": self.task,
            "q": self.search,
            "where": self.where,
        }
        return {k: v for k, v in out.items() if v}

    @property
    def is_empty(self) -> bool:
        return not self.to_params()

    def conditions(self) -> tuple[WhereCondition, ...]:
        """The parsed ``where`` conditions; none while one is malformed (see where_error)."""
        if not self.where or self.where_error:
            return ()
        return tuple(parse_where(part.strip()) for part in self.where.split(";") if part.strip())

    @property
    def where_error(self) -> str | None:
        """Why ``where`` cannot be used (shown above the table), or None."""
        for part in (self.where or "").split(";"):
            if part.strip():
                try:
                    parse_where(part.strip())
                except ValueError as exc:
                    return str(exc)
        return None

    def list_params(self, *, after_id: str | None, limit: int) -> JobListParams:
        """The backend's part of the query (the one mapping to change for new filters)."""
        where = self.conditions()
        return JobListParams(
            queue=self.queue,
            state=self.state,
            task=self.task,
            after_id=after_id,
            limit=limit,
            filter=JobFilter(where=where) if where else None,
        )

    def matches(self, job: JobRecord) -> bool:
        """The part the backend cannot do: search over the arguments text."""
        return self.search is None or self.search.lower() in job.payload.lower()


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    jobs: list[JobRecord]
    next_after: str | None  # pass as ``after`` for the next page; None on the last page
    scanned: int
    truncated: bool  # the search hit SCAN_LIMIT before the page was full


def job_page(backend: Backend, query: JobQuery, *, after_id: str | None, limit: int) -> Page:
    """One page of matching jobs in id (creation) order, after ``after_id``."""
    if query.search is None:
        found = backend.job_list(query.list_params(after_id=after_id, limit=limit + 1))
        more = len(found) > limit
        return Page(found[:limit], found[limit - 1].id if more else None, len(found), False)
    jobs: list[JobRecord] = []
    scanned = 0
    cursor = after_id
    for job in _scan(backend, query, cursor):
        scanned += 1
        if query.matches(job):
            if len(jobs) == limit:  # one more match exists: there is a next page
                return Page(jobs, jobs[-1].id, scanned, False)
            jobs.append(job)
        if scanned >= SCAN_LIMIT:
            return Page(jobs, job.id, scanned, True)
    return Page(jobs, None, scanned, False)


def matching_ids(backend: Backend, query: JobQuery) -> list[str]:
    """Every id the query matches now (for bulk actions and their count)."""
    return [job.id for job in _scan(backend, query, None) if query.matches(job)]


def _scan(backend: Backend, query: JobQuery, after_id: str | None) -> Iterator[JobRecord]:
    while True:
        batch = backend.job_list(query.list_params(after_id=after_id, limit=SCAN_BATCH))
        yield from batch
        if len(batch) < SCAN_BATCH:
            return
        after_id = batch[-1].id


# -- actions -----------------------------------------------------------------------------

#: Which states each action applies to; buttons are shown only where they do something.
ACTION_STATES: dict[str, frozenset[JobState]] = {
    "retry": frozenset({JobState.DEAD, JobState.CANCELLED, JobState.SUCCEEDED}),
    "cancel": frozenset({JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING}),
    "delete": frozenset(JobState),
}


def apply_action(backend: Backend, action: str, ids: Sequence[str]) -> int:
    """Run ``action`` on ``ids`` in chunks; return how many jobs it changed.

    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> apply_action(SQLiteBackend("sqlite:///:memory:"), "retry", [])
    0
    """
    if action not in ACTION_STATES:
        raise ValueError(f"unknown action {action!r}")
    done = 0
    for start in range(0, len(ids), SCAN_BATCH):
        chunk = list(ids[start : start + SCAN_BATCH])
        if action == "delete":
            done += backend.job_delete_many(chunk)
        elif action == "cancel":
            rows = backend.job_cancel_many(
                JobCancelParams(ids=chunk, reason="cancelled from dashboard")
            )
            done += sum(1 for r in rows if r.state is JobState.CANCELLED or r.cancel_requested)
        else:
            rows = backend.job_retry_many(JobRetryParams(ids=chunk))
            done += sum(1 for r in rows if r.state is JobState.QUEUED)
    return done


# -- optional backend capabilities (added by the ops work; absent on older backends) -----


def pause_supported(backend: Backend) -> bool:
    return "queues" in backend.features


def set_paused(backend: Backend, queue: str, paused: bool) -> None:
    """Pause or resume ``queue`` (persisted; every worker obeys at its next claim)."""
    if paused:
        backend.queue_pause(QueuePauseParams(queue=queue))
    else:
        backend.queue_resume(QueueResumeParams(queue=queue))


def paused_queues(backend: Backend) -> set[str]:
    """Names of paused queues, when the backend can tell (feature ``queues``)."""
    if "queues" not in backend.features:
        return set()
    return {q.queue for q in backend.queue_list() if q.paused}


def job_logs(backend: Backend, job_id: str) -> list[Any] | None:
    """A job's captured log records, or None when the backend does not store logs."""
    if "logs" not in backend.features:
        return None
    return list(backend.job_log_list(JobLogListParams(job_id=job_id, limit=1000)))
