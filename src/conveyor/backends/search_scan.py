"""A search by scanning: the filtered jobs newest first, each matched in Python
(:func:`conveyor.backends.search_match.matches`), at most ``max_scan`` rows per page.

What a store without a text index does for ``job_search`` (feature ``search``): Redis,
PostgreSQL and MariaDB until they get theirs, and the memory store. Log lines are read
only for a ``logs:`` term (a read per row). The filter (task,
queue, state, time bounds, ``args.NAME``) is the store's own ``job_list`` filter; only
the text terms are matched here, so a selective filter keeps the scan short. The page
says how many rows it read and whether it stopped at the bound (``complete``).

Example:
    >>> from conveyor.backends.memory.backend import MemoryBackend
    >>> from conveyor.backends.base import JobFilter
    >>> page = MemoryBackend("memory://").job_search(JobSearchParams(JobFilter()))
    >>> page.jobs, page.scanned, page.complete
    ((), 0, True)
"""

from __future__ import annotations

from collections.abc import Callable

from conveyor.backends.ops_params import JobListParams, JobLogListParams
from conveyor.backends.records import JobLogRecord, JobRecord
from conveyor.backends.search_params import JobSearchPage, JobSearchParams
from conveyor.records import record

#: Rows read per ``job_list`` call of a scan.
SCAN_BATCH = 500


def scan_search(
    job_list: Callable[[JobListParams], list[JobRecord]],
    params: JobSearchParams,
    logs: Callable[[str], str] | None = None,
) -> JobSearchPage:
    """One page of ``params``' matches, read through ``job_list`` newest first.
    ``logs(job_id)``: a job's log lines, read only for a query with a ``logs:`` term
    (one read per row it gets to: the query asked for them), else not searched."""
    from conveyor.backends.search_match import matches  # searches only: not at import

    if not any(t.field == "logs" for t in params.terms):
        logs = None
    found: list[JobRecord] = []
    scanned, after = 0, params.before_id
    while scanned < params.max_scan:
        batch = min(SCAN_BATCH, params.max_scan - scanned)
        page = job_list(
            JobListParams(filter=params.filter, after_id=after, limit=batch, descending=True)
        )
        for job in page:
            scanned += 1
            after = job.id
            if matches(job, params.terms, logs=logs):
                found.append(job)
                if len(found) == params.limit:
                    return JobSearchPage(tuple(found), scanned, True, job.id)
        if len(page) < batch:
            return JobSearchPage(tuple(found), scanned, True, None)
    return JobSearchPage(tuple(found), scanned, False, after)


def log_text(
    job_log_list: Callable[[JobLogListParams], list[JobLogRecord]],
) -> Callable[[str], str]:
    """A job's log lines as one text, read through the store's ``job_log_list``."""
    return lambda job_id: " ".join(r.message for r in job_log_list(JobLogListParams(job_id, 1000)))


class ScanSearch:
    """``job_search`` by :func:`scan_search` over the store's own ``job_list`` (and its
    ``job_log_list`` for a ``logs:`` term)."""

    job_list: Callable[[JobListParams], list[JobRecord]]
    job_log_list: Callable[[JobLogListParams], list[JobLogRecord]]

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        return scan_search(self.job_list, params, log_text(self.job_log_list))


#: Matches a count reads at most: past it the count says "more than" (an estimate).
COUNT_CAP = 1000


@record
class SearchCount:
    """How many jobs a search matches: ``n`` exactly when ``exact``, else at least ``n``
    (more than :data:`COUNT_CAP`, or a scan stopped at its bound first)."""

    n: int
    exact: bool

    @property
    def label(self) -> str:
        """``"12 matches"``, ``"more than 1,000 matches"``, ``"at least 40 matches"``.

        >>> SearchCount(1, True).label, SearchCount(1001, False).label
        ('1 match', 'more than 1,000 matches')
        """
        if self.exact:
            return f"{self.n:,} match" + ("" if self.n == 1 else "es")
        if self.n > COUNT_CAP:
            return f"more than {COUNT_CAP:,} matches"
        return f"at least {self.n:,} matches (a scan stopped at its bound)"


def search_count(
    job_search: Callable[[JobSearchParams], JobSearchPage],
    params: JobSearchParams,
    page: JobSearchPage,
) -> SearchCount | None:
    """The count of ``params``' matches, given the first page already read: exact from
    that page when it was the last, else read from the store's index up to
    :data:`COUNT_CAP` + 1 (cheap: an index's hits). None where the store scans and the
    page was not the last (counting would mean scanning again)."""
    if params.before_id is None and page.complete and page.next_before is None:
        return SearchCount(len(page.jobs), True)
    if page.scanned is not None:
        return None
    counted = job_search(
        JobSearchParams(params.filter, params.terms, COUNT_CAP + 1, None, params.max_scan)
    )
    n = len(counted.jobs)
    return SearchCount(n, n <= COUNT_CAP and counted.complete)
