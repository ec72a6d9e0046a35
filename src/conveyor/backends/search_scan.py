"""A search by scanning: the filtered jobs newest first, each matched in Python
(:func:`conveyor.backends.search_match.matches`), at most ``max_scan`` rows per page.

What a store without a text index does for ``job_search`` (feature ``search``): Redis,
PostgreSQL and MariaDB until they get theirs, and the memory store. The filter (task,
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

from conveyor.backends.ops_params import JobListParams
from conveyor.backends.records import JobRecord
from conveyor.backends.search_params import JobSearchPage, JobSearchParams

#: Rows read per ``job_list`` call of a scan.
SCAN_BATCH = 500


def scan_search(
    job_list: Callable[[JobListParams], list[JobRecord]], params: JobSearchParams
) -> JobSearchPage:
    """One page of ``params``' matches, read through ``job_list`` newest first."""
    from conveyor.backends.search_match import matches  # searches only: not at import

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
            if matches(job, params.terms):
                found.append(job)
                if len(found) == params.limit:
                    return JobSearchPage(tuple(found), scanned, True, job.id)
        if len(page) < batch:
            return JobSearchPage(tuple(found), scanned, True, None)
    return JobSearchPage(tuple(found), scanned, False, after)


class ScanSearch:
    """``job_search`` by :func:`scan_search` over the store's own ``job_list``."""

    job_list: Callable[[JobListParams], list[JobRecord]]

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        return scan_search(self.job_list, params)
