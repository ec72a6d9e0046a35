"""What the dashboard asks the backend: filtered, sorted pages of jobs, and bulk actions.

Every filter the dashboard offers lives in :class:`JobQuery`, every order in
:class:`Sort`. ``list_params`` is the one place that turns a query into backend
parameters; ``matches`` does, in Python, what the backend cannot do yet (the words of
the search box, a query of the search language: docs/search.md). When the backend learns a new filter, add the field here and map it in
``list_params``: the form, the paging links and the bulk actions all follow.

The URL's ``sort`` text is only ever a key into :data:`SORT_KEYS` (a fixed table of
Python key functions): it never reaches SQL or a method name.

Example:
    >>> q = JobQuery.from_params({"queue": "mail", "state": "dead", "q": "alice"})
    >>> q.list_params(after_id=None, limit=50).state
    <JobState.DEAD: 'dead'>
    >>> q.to_params()
    {'queue': 'mail', 'state': 'dead', 'q': 'alice'}
    >>> Sort.from_params({"sort": "task"}), Sort.from_params({"sort": "id; DROP TABLE jobs"})
    (Sort(column='task', descending=False), Sort(column='created', descending=True))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from conveyor import records
from conveyor.backends import search_match
from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobFilter,
    JobListParams,
    JobLogListParams,
    JobLogRecord,
    JobRecord,
    JobRetryParams,
    JobSearchParams,
    QueuePauseParams,
    QueueResumeParams,
    StepRecord,
    WhereCondition,
)
from conveyor.query import parse_where
from conveyor.search_query import SearchQuery, narrowed, parse_search
from conveyor.states import JobState

#: Rows read from the backend per round trip while searching or collecting a bulk set.
SCAN_BATCH = 500
#: A search or a sort by another column than ``created`` reads at most this many rows
#: (newest first), so one request never scans an unbounded store; the page says when
#: it stopped early.
SCAN_LIMIT = 20_000
#: A sort by a column without an index walk (sorting.py: finished, attempt, a search's
#: words, Redis) orders at most this many newest matches (20,000: 0.85-8 s).
SORT_LIMIT = 2_000


@dataclasses.dataclass(frozen=True, slots=True)
class JobQuery:
    """The jobs table's filters; every field narrows the set (AND)."""

    queue: str | None = None
    state: JobState | None = None
    task: str | None = None
    #: a query of the search language (docs/search.md): its words are matched here, its
    #: ``state:``, ``args.NAME:`` and time terms by the backend (``list_params``)
    search: str | None = None
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

    @property
    def parsed_search(self) -> SearchQuery | None:
        """The parsed ``search``; None without one or while it is malformed."""
        if not self.search:
            return None
        try:
            return parse_search(self.search)
        except ValueError:
            return None

    @property
    def search_error(self) -> str | None:
        """Why ``search`` cannot be used (shown above the table), or None."""
        try:
            parse_search(self.search or "")
        except ValueError as exc:
            return str(exc)
        return None

    def list_params(
        self,
        *,
        after_id: str | None,
        limit: int,
        descending: bool = False,
        states: tuple[JobState, ...] = (),
    ) -> JobListParams:
        """The backend's part of the query (the one mapping to change for new filters);
        ``states`` narrows further (a bulk action to the states it applies to)."""
        where = self.conditions()
        job_filter = JobFilter(where=where, states=states) if where or states else None
        parsed = self.parsed_search
        if parsed is not None:
            searched = parsed.filter
            if states:  # a bulk action's states: the search's ones are checked in matches
                searched = records.replace(searched, states=())
            job_filter = narrowed(job_filter or JobFilter(), searched)
        return JobListParams(
            queue=self.queue,
            state=self.state,
            task=self.task,
            after_id=after_id,
            limit=limit,
            filter=job_filter,
            descending=descending,
        )

    def matches(self, job: JobRecord) -> bool:
        """The part the backend cannot do: the search's words (and its states, where a
        bulk action's narrowed the backend's); a malformed search matches nothing."""
        if self.search is None:
            return True
        parsed = self.parsed_search
        if parsed is None:
            return False
        if parsed.filter.states and job.state not in parsed.filter.states:
            return False
        return search_match.matches(job, parsed.terms)


# -- order -------------------------------------------------------------------------------


def _finished_key(job: JobRecord) -> float | None:
    return job.finished_at


#: The jobs table's sortable columns: URL name -> (key, newest/largest first by default).
#: A key returning None sorts last in both directions (an unfinished job has no time).
SORT_KEYS: dict[str, tuple[Callable[[JobRecord], Any], bool]] = {
    "created": (lambda j: j.id, True),  # ids are creation order
    "finished": (_finished_key, True),
    "task": (lambda j: j.task, False),
    "queue": (lambda j: j.queue, False),
    "state": (lambda j: j.state.value, False),
    "attempt": (lambda j: j.attempt, True),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Sort:
    """The jobs table's order: newest first unless the URL says otherwise."""

    column: str = "created"
    descending: bool = True

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> Sort:
        """``sort`` must name a column of :data:`SORT_KEYS` (anything else: the default),
        ``dir`` is ``asc`` or ``desc`` (anything else: the column's own default)."""
        column = params.get("sort") or ""
        if column not in SORT_KEYS:
            return cls()
        direction = params.get("dir")
        default_desc = SORT_KEYS[column][1]
        return cls(column, {"asc": False, "desc": True}.get(direction or "", default_desc))

    def to_params(self) -> dict[str, str]:
        """Query parameters for links (empty for the default order)."""
        if self == Sort():
            return {}
        return {"sort": self.column, "dir": "desc" if self.descending else "asc"}

    def toggled(self, column: str) -> Sort:
        """What a click on ``column``'s header asks for: the other direction when the
        table is already sorted by it, else that column's default direction.

        >>> Sort().toggled("created"), Sort().toggled("task")
        (Sort(column='created', descending=False), Sort(column='task', descending=False))
        """
        if column == self.column:
            return Sort(column, not self.descending)
        return Sort(column, SORT_KEYS[column][1])

    @property
    def by_id(self) -> bool:
        """Creation order, which the backend pages itself (keyset paging on the id)."""
        return self.column == "created"

    def apply(self, jobs: Sequence[JobRecord]) -> list[JobRecord]:
        """``jobs`` in this order; ties (and jobs without a value, last) newest first."""
        key = SORT_KEYS[self.column][0]
        newest = sorted(jobs, key=lambda j: j.id, reverse=True)
        with_value = [j for j in newest if key(j) is not None]
        without = [j for j in newest if key(j) is None]
        return sorted(with_value, key=key, reverse=self.descending) + without


# -- pages -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    jobs: list[JobRecord]
    next_after: str | None  # creation order: pass as ``after`` for the next page
    next_offset: int | None  # other orders: pass as ``offset`` for the next page
    scanned: int
    truncated: bool  # the scan hit SCAN_LIMIT (a search or a sort over a large set)
    #: a search's hit count ("12 matches", "more than 1,000 matches"); "" otherwise
    count: str = ""
    #: why an index walk stopped short (sorting.py), shown after the count; "" otherwise
    stopped: str = ""


def job_page(
    backend: Backend,
    query: JobQuery,
    sort: Sort = Sort(),
    *,
    after_id: str | None = None,
    limit: int = 50,
) -> Page:
    """One page of matching jobs in creation order (``sort`` gives the direction), after
    ``after_id``, paged by the backend; the other orders: ``sorting.page_in_order``."""
    if not sort.by_id:
        raise ValueError(f"sort by {sort.column}: sorting.page_in_order pages it")
    desc = sort.descending
    if query.search is None:
        params = query.list_params(after_id=after_id, limit=limit + 1, descending=desc)
        found = backend.job_list(params)
        more = len(found) > limit
        return Page(found[:limit], found[limit - 1].id if more else None, None, len(found), False)
    searched = _searched_page(backend, query, after_id, limit) if desc else None
    if searched is not None:
        return searched
    jobs: list[JobRecord] = []
    scanned = 0
    for job in scan(backend, query, after_id, descending=desc):
        scanned += 1
        if query.matches(job):
            if len(jobs) == limit:  # one more match exists: there is a next page
                return Page(jobs, jobs[-1].id, None, scanned, False)
            jobs.append(job)
        if scanned >= SCAN_LIMIT:
            return Page(jobs, job.id, None, scanned, True)
    return Page(jobs, None, None, scanned, False)


def _searched_page(
    backend: Backend, query: JobQuery, after_id: str | None, limit: int
) -> Page | None:
    """The newest-first page of a search, from the store's ``job_search`` (its index
    where it has one on); None where the store has no search (the page then scans)."""
    parsed = query.parsed_search
    if parsed is None or "search" not in backend.features:
        return None
    listed = query.list_params(after_id=None, limit=limit)
    columns = JobFilter(
        queue=listed.queue, task=listed.task, states=(listed.state,) if listed.state else ()
    )
    try:
        both = narrowed(columns, listed.filter or JobFilter())
    except ValueError:  # the state field and the search's state: exclude each other
        return Page([], None, None, 0, False)
    from conveyor.backends.search_scan import search_count

    params = JobSearchParams(both, parsed.terms, limit, after_id, SCAN_LIMIT)
    page = backend.job_search(params)
    counted = search_count(backend.job_search, params, page)
    label = "" if counted is None else counted.label
    return Page(
        list(page.jobs), page.next_before, None, page.scanned or 0, not page.complete, label
    )


def scan(
    backend: Backend,
    query: JobQuery,
    after_id: str | None,
    *,
    descending: bool = False,
    states: tuple[JobState, ...] = (),
) -> Iterator[JobRecord]:
    while True:
        params = query.list_params(
            after_id=after_id, limit=SCAN_BATCH, descending=descending, states=states
        )
        batch = backend.job_list(params)
        yield from batch
        if len(batch) < SCAN_BATCH:
            return
        after_id = batch[-1].id


# -- actions -----------------------------------------------------------------------------

#: Which states each action applies to: buttons are shown only there, and the server
#: refuses the others. Retry re-runs what ended badly; cancel stops what has not ended;
#: a running job is cancelled (the worker stops it), never deleted under its worker.
ACTION_STATES: dict[str, frozenset[JobState]] = {
    "retry": frozenset({JobState.DEAD, JobState.CANCELLED}),
    "cancel": frozenset({JobState.WAITING, JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING}),
    "delete": frozenset(JobState) - {JobState.RUNNING},
}


def action_states(action: str, query: JobQuery) -> tuple[JobState, ...]:
    """The states a bulk ``action`` on ``query`` acts on (empty: it does not apply).

    >>> action_states("cancel", JobQuery(state=JobState.DEAD))
    ()
    >>> action_states("retry", JobQuery())
    (<JobState.CANCELLED: 'cancelled'>, <JobState.DEAD: 'dead'>)
    """
    allowed = ACTION_STATES[action]
    if query.state is not None:
        return (query.state,) if query.state in allowed else ()
    return tuple(sorted(allowed))


def bulk_actions(query: JobQuery) -> list[str]:
    """The bulk actions that apply to ``query``'s jobs (what the jobs page offers)."""
    return [a for a in ACTION_STATES if action_states(a, query)]


def matching_ids(backend: Backend, query: JobQuery, action: str) -> list[str]:
    """Every id the query matches now among the states ``action`` applies to (for bulk
    actions and their count)."""
    states = action_states(action, query)
    if not states:
        return []
    return [j.id for j in scan(backend, query, None, states=states) if query.matches(j)]


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


# -- queues and logs ---------------------------------------------------------------------


def set_paused(backend: Backend, queue: str, paused: bool) -> None:
    if paused:
        backend.queue_pause(QueuePauseParams(queue=queue))
    else:
        backend.queue_resume(QueueResumeParams(queue=queue))


def paused_queues(backend: Backend) -> set[str]:
    """Names of paused queues."""
    return {q.queue for q in backend.queue_list() if q.paused}


def job_steps(backend: Backend, job_id: str) -> list[StepRecord]:
    """A durable job's steps and published values (none on a store without them)."""
    return backend.job_step_list(job_id) if "steps" in backend.features else []


def job_logs(backend: Backend, job_id: str) -> list[JobLogRecord]:
    """A job's captured log records (at most 1000)."""
    return backend.job_log_list(JobLogListParams(job_id=job_id, limit=1000))
