"""What a search hands a store, and what a store hands back (feature ``search``).

A search is parsed once, above the stores (:mod:`conveyor.search_query`), into a
:class:`~conveyor.backends.ops_params.JobFilter` (task, queue, state, time bounds,
``args.NAME`` equality: what every store already filters by) and text
:class:`SearchTerm` s, matched token by token in the job's indexed fields. A store
with an index answers the terms from it (SQLite: FTS5); the others scan the filtered
jobs newest first, at most ``max_scan`` of them, and say so (:class:`JobSearchPage`).

Example:
    >>> SearchTerm("timeout", field="error").field
    'error'
"""

from __future__ import annotations

from conveyor.backends.ops_params import JobFilter
from conveyor.backends.records import JobRecord
from conveyor.records import record

#: The fields a text term may name, each the job's stored text of that name: the task's
#: name, its queue, its arguments (the payload), its result, its error (type, message and
#: traceback), its headers (a JSON object) and its log lines (``logs``).
SEARCH_FIELDS = ("task", "queue", "args", "result", "error", "headers", "logs")
#: Rows a scanning store reads at most for one search page by default.
MAX_SCAN = 100_000


@record
class SearchTerm:
    """Words that must appear in this order (one word, or a phrase), in ``field`` (None:
    in any of :data:`SEARCH_FIELDS`); ``negated``: must not; ``prefix``: the last word
    may go on (``time*``). Words are the store's tokens: runs of letters, digits and
    ``_``, compared case- and accent-insensitively."""

    text: str
    field: str | None = None
    negated: bool = False
    prefix: bool = False


@record
class JobSearchParams:
    """One page of the jobs that match ``filter`` and every term, newest first."""

    filter: JobFilter
    terms: tuple[SearchTerm, ...] = ()
    limit: int = 50
    #: paging: ids strictly before this one in creation order (the last page's last)
    before_id: str | None = None
    #: a scanning store reads at most this many rows for the page
    max_scan: int = MAX_SCAN


@record
class JobSearchPage:
    """What a search found: ``jobs`` newest first. ``scanned``: rows a scanning store
    read (None: an index answered); ``complete``: False when the scan stopped at its
    bound, so older jobs may match too (``next_before`` goes on from there)."""

    jobs: tuple[JobRecord, ...]
    scanned: int | None
    complete: bool
    next_before: str | None
