"""Search on SQLite (feature ``search``): the FTS5 index of ``search_index.sql``, filled
after the fact, or a bounded scan where it is turned off (``conveyor search-index``).

A write does not index: a trigger appends the job's id to ``job_search_pending`` (an
insert, a finish that writes the result or error, a delete, a retry), and
:func:`index_pending` indexes the pending jobs in batches, in the order they were
written: the workers' search-indexer service does it (``worker/services/
search_indexer.py``), and so does each search before it reads, a batch at most. So the
index costs a write one short append, not FTS5's tokenizing and segment write (what
made the index cost E1 +166% when its triggers indexed in the write).

A search's answer is complete all the same: the jobs still pending (the tail the
indexer has not reached) are read from ``jobs`` and matched row by row
(:func:`~conveyor.backends.search_match.matches`), newest first, before the index's
hits, which leave the pending jobs out (their entries may be stale). The index's hits
come in its rowid order, the order jobs were first indexed, so a selective search
reads only its hits, and a page of a common word stops at its limit.

A mixin of :class:`~conveyor.backends.sqlite.backend.SQLiteBackend`. The text terms
become one FTS5 ``MATCH`` (each term a quoted phrase of its tokens, in its column when
it names one; negated ones after ``NOT``); the filter is the engine's ``WHERE``.
Without positive terms (only negations, or none), or without the index, it scans.

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

#: The index's objects, in the order :func:`drop_index` removes them (schema version
#: 10's ``job_search_pending`` and ``job_search_on`` stay: the inserts name them).
_OBJECTS = (
    ("TRIGGER", "job_search_insert"),
    ("TRIGGER", "job_search_update"),
    ("TRIGGER", "job_search_delete"),
    ("TABLE", "job_search"),
    ("TABLE", "job_search_ids"),
)
#: Jobs one indexing transaction takes (it holds the write lock meanwhile: ~20-40 ms
#: for 2,000 jobs here).
INDEX_BATCH = 2000
#: Pending jobs a search reads row by row at most; past it the page says it is not
#: complete (the indexer has fallen that far behind).
MAX_TAIL = 20_000
#: A job noted pending by the code that changed its text (its log lines, an import),
#: while the index is on (inserts, finishes and deletes are noted by triggers).
NOTE = "INSERT INTO job_search_pending (lo, hi) SELECT ?, ? FROM job_search_on"
#: The text of a job's log lines, as the index holds it (column ``logs``).
_LOGS = "(SELECT group_concat(message, ' ') FROM job_logs WHERE job_id = j.id)"
_BATCH_IDS = "SELECT id FROM temp.job_search_batch"
_TAIL_COUNT = (
    "SELECT count(*) FROM (SELECT DISTINCT jobs.id FROM job_search_pending p "
    "JOIN jobs ON jobs.id BETWEEN p.lo AND p.hi)"
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
    """Turn the index off: its triggers and tables go, nothing is pending any more
    (writes then add nothing); searches scan. :func:`build_index` turns it back on."""
    for kind, name in _OBJECTS:
        conn.execute(f"DROP {kind} IF EXISTS {name}")
    conn.execute("DELETE FROM job_search_on")
    conn.execute("DELETE FROM job_search_pending")


def build_index(conn: sqlite3.Connection) -> None:
    """Turn the index (back) on: ``search_index.sql`` run again, every job pending (the
    indexer then indexes them, a batch at a time, while writes go on). No-op when on."""
    from conveyor.backends.sqlite.connection import _split, read_packaged

    for statement in _split(read_packaged("search_index.sql")):
        conn.execute(statement)


def index_pending(conn: sqlite3.Connection, batch: int = INDEX_BATCH) -> int:
    """Index up to ``batch`` pending jobs, oldest writes first (in a write transaction
    the caller holds): each job's entry replaced by its current text under the rowid it
    was first given (a new one, in write order, for a job never indexed), a deleted
    job's entry removed. A range larger than what is left of the batch is taken in
    part (its ``lo`` moves on). Returns how many jobs it took (0: none were pending)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS job_search_batch (id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.job_search_batch")
    taken = 0
    for n, lo, hi in conn.execute(
        "SELECT n, lo, hi FROM job_search_pending ORDER BY n LIMIT ?", (batch,)
    ).fetchall():
        left = batch - taken
        if left <= 0:
            break
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM jobs WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?", (lo, hi, left)
            )
        ]
        if lo == hi and not ids:
            ids = [lo]  # a deleted job: its entry goes
        conn.executemany(
            "INSERT OR IGNORE INTO temp.job_search_batch (id) VALUES (?)", [(i,) for i in ids]
        )
        taken += max(1, len(ids))
        if len(ids) == left and ids[-1] != hi:  # the rest of the range: later
            # ids are all as long: the next id after the last is above last + " "
            conn.execute("UPDATE job_search_pending SET lo = ? WHERE n = ?", (ids[-1] + " ", n))
            break
        conn.execute("DELETE FROM job_search_pending WHERE n = ?", (n,))
    if not taken:
        return 0
    conn.execute(
        f"DELETE FROM job_search WHERE rowid IN (SELECT n FROM job_search_ids WHERE id IN ({_BATCH_IDS}))"
    )
    conn.execute(
        f"DELETE FROM job_search_ids WHERE id IN ({_BATCH_IDS}) "
        "AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_search_ids.id)"
    )
    conn.execute(
        "INSERT OR IGNORE INTO job_search_ids (id) SELECT b.id FROM temp.job_search_batch b "
        "JOIN jobs ON jobs.id = b.id ORDER BY b.id"
    )
    conn.execute(
        "INSERT INTO job_search (rowid, task, queue, args, result, error, headers, logs) "
        f"SELECT s.n, j.task, j.queue, j.payload, j.result, j.error, j.headers, {_LOGS} "
        "FROM temp.job_search_batch b JOIN job_search_ids s ON s.id = b.id "
        "JOIN jobs j ON j.id = b.id"
    )
    return taken


class SQLiteSearch:
    """``job_search`` from the FTS5 index and its pending tail (a scan where the index
    is off)."""

    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[tuple[object, ...]]]
    job_list: Callable[[JobListParams], list[JobRecord]]

    def _search_note_each(self, ex: object, job_ids: Sequence[str]) -> None:
        """Each job's text changed (its log lines): pending, one row each, while on."""
        conn = ex if isinstance(ex, sqlite3.Connection) else None
        if conn is not None and job_ids:
            conn.executemany(NOTE, [(i, i) for i in job_ids])

    def search_index_set(self, on: bool) -> None:
        """Turn the index on (:func:`build_index`) or off (:func:`drop_index`)."""
        with self._write() as conn:
            (build_index if on else drop_index)(conn)

    def search_index_enabled(self) -> bool:
        return bool(self._read("SELECT 1 FROM job_search_on"))

    def search_index_pending(self) -> int:
        """Writes the indexer has not reached yet (0 where the index is off)."""
        if not self.search_index_enabled():
            return 0
        return int(str(self._read(_TAIL_COUNT)[0][0]))

    def search_index_catch_up(self, batch: int = INDEX_BATCH) -> int:
        """Index one batch of pending writes (:func:`index_pending`); 0 when none were
        pending or the index is off. A cheap read first, so an idle call takes no lock."""
        if not self.search_index_enabled():
            return 0
        if not self._read("SELECT 1 FROM job_search_pending LIMIT 1"):
            return 0
        with self._write() as conn:
            return index_pending(conn, batch)

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        match = fts_query(params.terms)
        if match is None or not self.search_index_enabled():
            from conveyor.backends.search_scan import scan_search  # searches only

            return scan_search(self.job_list, params, self._logs_text)
        self.search_index_catch_up()  # the tail left to read row by row is then short
        return self._indexed_search(params, match)

    def _indexed_search(self, params: JobSearchParams, match: str) -> JobSearchPage:
        from conveyor.backends.search_match import matches  # searches only

        where, args = filter_sql(SQLITE, params.filter)
        # the tail: jobs written since the indexer last reached them, newest first
        tail_rows = self._read(
            f"SELECT {JOB_COLUMNS} FROM job_search_pending p JOIN jobs "
            f"ON jobs.id BETWEEN p.lo AND p.hi WHERE ({where}) ORDER BY jobs.id DESC LIMIT ?",
            [*args, MAX_TAIL + 1],
        )
        complete = len(tail_rows) <= MAX_TAIL
        tail: dict[str, JobRecord] = {}
        for row in tail_rows[:MAX_TAIL]:
            job = decoding.job_record(row)
            tail.setdefault(job.id, job)  # in two ranges: once
        found: list[JobRecord] = []
        from_tail = params.before_id is None or params.before_id in tail
        if from_tail:  # the first page, or one that began in the tail: the tail first
            for job in tail.values():
                if params.before_id is not None and job.id >= params.before_id:
                    continue
                if matches(job, params.terms, logs=self._logs_text):
                    found.append(job)
                    if len(found) == params.limit:
                        return JobSearchPage(tuple(found), None, complete, job.id)
        page, more = "1", []
        if not from_tail:
            page = "h.n < (SELECT n FROM job_search_ids WHERE id = ?)"
            more = [params.before_id]
        sql = (
            f"SELECT {JOB_COLUMNS} FROM (SELECT f.rowid AS n, s.id AS hit FROM job_search f "
            "JOIN job_search_ids s ON s.n = f.rowid WHERE job_search MATCH ?) h "
            f"JOIN jobs ON jobs.id = h.hit WHERE ({where}) AND {page} "
            "AND NOT EXISTS (SELECT 1 FROM job_search_pending p WHERE jobs.id BETWEEN p.lo AND p.hi) "
            "ORDER BY h.n DESC LIMIT ?"
        )
        want = params.limit - len(found)
        rows = self._read(sql, [match, *args, *more, want])
        found.extend(decoding.job_record(r) for r in rows)
        last = found[-1].id if len(rows) == want else None
        return JobSearchPage(tuple(found), None, complete, last)

    def _logs_text(self, job_id: str) -> str:
        rows = self._read("SELECT message FROM job_logs WHERE job_id = ? LIMIT 1000", [job_id])
        return " ".join(str(r[0]) for r in rows)
