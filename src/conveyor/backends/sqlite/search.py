"""Search on SQLite (feature ``search``): a bounded scan by default, or the FTS5 index
of ``search_index.sql`` once it is turned on (``conveyor search-index on``).

The index is off by default because it costs every write it follows (measured with
``python -m bench.search_index``, docs/search.md): FTS5 writes a segment at each
commit, and single enqueues commit one job at a time. Turned on, its triggers keep it
from every write path; turned off, its triggers and tables go.

A mixin of :class:`~conveyor.backends.sqlite.backend.SQLiteBackend`. With the index,
the text terms become one FTS5 ``MATCH`` (each term a quoted phrase of its tokens, in
its column when it names one; negated ones after ``NOT``), the filter is the engine's
``WHERE`` on ``jobs``, and the page is read in index order, newest first (the index's
rowid grows with each insert), so a selective search reads only its hits. Without
positive terms (only negations, or none), or without the index, it scans.

Example:
    >>> from conveyor.search_query import parse_search
    >>> fts_query(parse_search('timeout error:"gave up" -retry task:x').terms)
    '("timeout" AND error : "gave up" AND task : "x") NOT ("retry")'
    >>> fts_query(parse_search("send_w*").terms)
    '("send_w" *)'
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from conveyor.backends import decoding
from conveyor.backends.base import JobListParams, JobRecord
from conveyor.backends.search_params import JobSearchPage, JobSearchParams, SearchTerm
from conveyor.backends.sql.filters import filter_sql
from conveyor.backends.sql.ops_read import JOB_COLUMNS
from conveyor.backends.sqlite.dialect import SQLITE

#: The index's objects, in the order :func:`drop_index` removes them.
_OBJECTS = (
    ("TRIGGER", "job_search_insert"),
    ("TRIGGER", "job_search_update"),
    ("TRIGGER", "job_search_delete"),
    ("TABLE", "job_search"),
    ("VIEW", "job_search_source"),
    ("TABLE", "job_search_ids"),
)


def _phrase(term: SearchTerm) -> str:
    # tokens are runs of \w: nothing in them needs escaping inside the quotes
    phrase = f'"{term.text}"' + (" *" if term.prefix else "")
    return f"{term.field} : {phrase}" if term.field else phrase


def fts_query(terms: Sequence[SearchTerm]) -> str | None:
    """The ``MATCH`` text of the positive terms, each negated one after ``NOT``; None
    when no term is positive (FTS5's NOT needs something to subtract from)."""
    positive = [_phrase(t) for t in terms if not t.negated]
    if not positive:
        return None
    negated = "".join(f" NOT ({_phrase(t)})" for t in terms if t.negated)
    return f"({' AND '.join(positive)}){negated}"


def drop_index(conn: sqlite3.Connection) -> None:
    """Turn the index off: its triggers and tables go (inserts and finishes then write
    nothing more); searches scan. :func:`build_index` turns it (back) on."""
    for kind, name in _OBJECTS:
        conn.execute(f"DROP {kind} IF EXISTS {name}")


def build_index(conn: sqlite3.Connection) -> None:
    """Turn the index (back) on: ``search_index.sql`` run again, every job indexed."""
    from conveyor.backends.sqlite.connection import _split, read_packaged

    for statement in _split(read_packaged("search_index.sql")):
        conn.execute(statement)


class SQLiteSearch:
    """``job_search`` from the FTS5 index (a scan where the index is off)."""

    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[tuple[object, ...]]]
    job_list: Callable[[JobListParams], list[JobRecord]]

    def search_index_set(self, on: bool) -> None:
        """Turn the index on (:func:`build_index`) or off (:func:`drop_index`)."""
        with self._write() as conn:
            (build_index if on else drop_index)(conn)

    def search_index_enabled(self) -> bool:
        found = self._read("SELECT 1 FROM sqlite_master WHERE name = 'job_search'")
        return bool(found)

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        match = fts_query(params.terms)
        if match is None or not self.search_index_enabled():
            from conveyor.backends.search_scan import scan_search  # searches only

            return scan_search(self.job_list, params)
        where, args = filter_sql(SQLITE, params.filter)
        page = "1"
        if params.before_id is not None:
            page = "h.n < (SELECT n FROM job_search_ids WHERE id = ?)"
            args.append(params.before_id)
        sql = (
            f"SELECT {JOB_COLUMNS} FROM (SELECT f.rowid AS n, s.id AS hit FROM job_search f "
            "JOIN job_search_ids s ON s.n = f.rowid WHERE job_search MATCH ?) h "
            f"JOIN jobs ON jobs.id = h.hit WHERE ({where}) AND {page} "
            "ORDER BY h.n DESC LIMIT ?"
        )
        rows = self._read(sql, [match, *args, params.limit])
        jobs = tuple(decoding.job_record(r) for r in rows)
        more = jobs[-1].id if len(jobs) == params.limit else None
        return JobSearchPage(jobs, None, True, more)
