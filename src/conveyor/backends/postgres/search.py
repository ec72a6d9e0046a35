"""Search on PostgreSQL (feature ``search``): a bounded scan by default, or a trigram
index filled after the fact once it is turned on (``conveyor search-index on``).

The index is its own table, ``job_search_docs`` (schema version 6): each job's
:data:`DOC` (the lower-cased text of its task, queue, arguments, result, error, headers
and log lines, without ``_``) under a GIN ``gin_trgm_ops`` index. The writes do not
index: statement triggers note what they wrote in ``job_search_pending`` (one row per
insert statement: its ids' range; one per finish, retry or delete of a job), and the
indexer (:meth:`PostgresSearch.search_index_catch_up`: the workers' search-indexer
service, and each search, a batch) fills the table in batches. So the hot ``jobs``
table has no GIN to keep (the former index on it cost E1 +93%). ``on`` creates the
trigram index (and the ``pg_trgm`` extension where the database lacks it) and makes
every job pending; ``off`` drops the index, empties the table and stops the noting.

Why trigrams and not ``tsvector``: PostgreSQL's text parser does not cut words where
the language does (``send_welcome`` is two words to it, ``billing.total`` one), so a
``tsvector`` would answer some queries differently from the scan and SQLite's index.
Instead the index only *narrows*. On ASCII text (lower case is then the same in Python
and SQL) a job holding a term's words has them in :data:`DOC` whole and in order, which
is a regular expression the trigram index answers (:func:`term_patterns`: for a term
with a word of three letters or more, the trigrams' minimum); jobs whose text is not
ASCII (the language folds accents) are always candidates, from a small partial index of
their own (a second query, merged newest first). Each candidate is then matched in
Python exactly as a scan matches a row (:func:`~conveyor.backends.search_match.matches`:
words, phrases' order, fields, negations), so the answers are the scan's, and a
selective search reads little more than its hits. The jobs still pending (the tail the
indexer has not reached) are read from ``jobs`` and matched the same way, so answers
are complete.

A mixin of :class:`~conveyor.backends.postgres.backend.PostgresBackend`.

Example:
    >>> from conveyor.search_query import parse_search
    >>> for p in term_patterns(parse_search('send_w* "gave up" -retry ok').terms):
    ...     print(p)
    (^|[^[:alnum:]])gave[^[:alnum:]]+up([^[:alnum:]]|$)
    (^|[^[:alnum:]])sendw
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from conveyor.backends import decoding
from conveyor.backends.base import JobListParams, JobRecord
from conveyor.backends.postgres.dialect import POSTGRES
from conveyor.backends.search_params import JobSearchPage, JobSearchParams, SearchTerm
from conveyor.backends.sql.dialect import Executor
from conveyor.backends.sql.filters import filter_sql
from conveyor.backends.sql.ops_read import JOB_COLUMNS

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from conveyor.backends.postgres.single import OneConnection

_LOGS = "coalesce((SELECT string_agg(message, ' ') FROM job_logs l WHERE l.job_id = j.id), '')"
_RAW = (
    "(j.task || ' ' || j.queue || ' ' || j.payload || ' ' || coalesce(j.result, '') || ' ' || "
    f"coalesce(j.error, '') || ' ' || coalesce(j.headers, '') || ' ' || {_LOGS})"
)
#: The indexed text: lower case, without ``_``, which trigrams do not count as a
#: letter, so ``customer_9`` becomes the word ``customer9``, whose trigrams tell it
#: from ``customer_1``.
DOC = f"replace(lower({_RAW}), '_', '')"
#: Jobs whose text is not ASCII: always candidates (the partial index's predicate).
WIDE = f"octet_length({_RAW}) <> length({_RAW})"
TRGM_INDEX = "job_search_docs_trgm"
#: Candidates read per round: a page's worth and some, as most of them match.
_BATCH = 200
#: Jobs one indexing transaction takes.
INDEX_BATCH = 2000
#: Pending jobs a search reads row by row at most (past it: not complete).
MAX_TAIL = 20_000
#: What is not a word character in :data:`DOC` (words: letters and digits, ``_`` gone).
_GAP = "[^[:alnum:]]"
_QUALIFIED = ", ".join(f"jobs.{name}" for name in decoding.JOB_NAMES)
_PENDING = "EXISTS (SELECT 1 FROM job_search_pending p WHERE jobs.id BETWEEN p.lo AND p.hi)"


def term_patterns(terms: Sequence[SearchTerm]) -> list[str]:
    """A regular expression on :data:`DOC` for each positive term the trigram index can
    look up (one with a word of three characters or more without its ``_``; the others
    are left to the re-check): its words whole, in order, apart by what is not a word
    (the last one open when the term is a prefix). On ASCII text it holds wherever the
    term's tokens are (and rarely elsewhere: ``a_b`` and ``ab`` look alike to it)."""
    found = []
    for term in terms:
        words = term.text.replace("_", "").split()
        if term.negated or not words or max(len(w) for w in words) < 3:
            continue
        end = "" if term.prefix else f"({_GAP}|$)"
        found.append(f"(^|{_GAP})" + f"{_GAP}+".join(words) + end)
    return sorted(set(found))


class PostgresSearch:
    """``job_search`` from the trigram index (a scan where the index is off)."""

    _pool: ConnectionPool | OneConnection  # autocommit connections
    _once: Callable[..., list[tuple[object, ...]]]
    job_list: Callable[[JobListParams], list[JobRecord]]

    def _search_note_each(self, ex: Executor, job_ids: Sequence[str]) -> None:
        """Each job's text changed (its log lines): pending, one row each, while on."""
        if job_ids:
            ex.executemany(
                "INSERT INTO job_search_pending (lo, hi) SELECT %s, %s FROM job_search_on",
                [(i, i) for i in job_ids],
            )

    def _trgm_schema(self) -> str:
        # pg_trgm is one per database, in whichever schema it was created: the opclass
        # is named with it (a conveyor schema's search_path is that schema alone). A new
        # one goes to public where there is one, so dropping a conveyor schema (CASCADE)
        # never takes other schemas' indexes with it.
        query = "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = %s"
        found = self._once(query, ("pg_trgm",))
        if not found:
            public = self._once("SELECT 1 FROM pg_namespace WHERE nspname = 'public'")
            where = " SCHEMA public" if public else ""
            self._ddl(f"CREATE EXTENSION IF NOT EXISTS pg_trgm{where}")
            found = self._once(query, ("pg_trgm",))
        return str(found[0][0])

    def _ddl(self, statement: str) -> None:
        with self._pool.connection() as conn:  # autocommit: CONCURRENTLY needs it
            conn.execute(statement)

    def search_index_set(self, on: bool) -> None:
        """Turn the index on (the trigram index built, every job pending) or off."""
        if not on:
            self._ddl(f"DROP INDEX CONCURRENTLY IF EXISTS {TRGM_INDEX}")
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("DELETE FROM job_search_on")
                conn.execute("DELETE FROM job_search_pending")
                conn.execute("TRUNCATE job_search_docs")
            return
        if not self._index_valid():  # an interrupted CONCURRENTLY build: rebuilt
            self._ddl(f"DROP INDEX CONCURRENTLY IF EXISTS {TRGM_INDEX}")
        ops = f"{self._trgm_schema()}.gin_trgm_ops"
        self._ddl(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {TRGM_INDEX} ON job_search_docs "
            f"USING gin (doc {ops})"
        )
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("LOCK TABLE job_search_on IN EXCLUSIVE MODE")  # two `on` at once
            if not conn.execute("SELECT 1 FROM job_search_on").fetchall():
                conn.execute("INSERT INTO job_search_on (since) VALUES (extract(epoch FROM now()))")
                conn.execute(
                    "INSERT INTO job_search_pending (lo, hi) SELECT min(id), max(id) FROM jobs "
                    "HAVING min(id) IS NOT NULL"
                )

    def _index_valid(self) -> bool:
        found = self._once(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND i.indisvalid "
            "AND c.relnamespace = current_schema()::regnamespace",
            (TRGM_INDEX,),
        )
        return int(str(found[0][0])) == 1

    def search_index_enabled(self) -> bool:
        # one round trip, asked by every search
        found = self._once("SELECT EXISTS (SELECT 1 FROM job_search_on)")
        return bool(found[0][0])

    def search_index_pending(self) -> int:
        """Jobs the indexer has not reached yet (0 where the index is off)."""
        found = self._once(
            "SELECT count(DISTINCT jobs.id) FROM job_search_pending p "
            "JOIN jobs ON jobs.id BETWEEN p.lo AND p.hi"
        )
        return int(str(found[0][0]))

    def search_index_catch_up(self, batch: int = INDEX_BATCH) -> int:
        """Index up to ``batch`` pending jobs, oldest writes first, in one transaction:
        each one's text replaced by its current one, a deleted job's removed. Rows taken
        are locked (``SKIP LOCKED``: two indexers take different ones) and deleted by
        their n, so one committed later under a lower n is taken by a later call. A
        range larger than what is left is taken in part. Returns the jobs taken."""
        if not self._once("SELECT 1 FROM job_search_pending LIMIT 1"):
            return 0  # idle: one read, no transaction
        taken: list[str] = []
        with self._pool.connection() as conn, conn.transaction():
            rows = conn.execute(
                "SELECT n, lo, hi FROM job_search_pending ORDER BY n LIMIT %s "
                "FOR UPDATE SKIP LOCKED",
                (batch,),
            ).fetchall()
            for n, lo, hi in rows:
                left = batch - len(taken)
                if left <= 0:
                    break
                ids = [
                    str(r[0])
                    for r in conn.execute(
                        "SELECT id FROM jobs WHERE id BETWEEN %s AND %s ORDER BY id LIMIT %s",
                        (lo, hi, left),
                    )
                ]
                if lo == hi and not ids:
                    ids = [str(lo)]  # a deleted job: its text goes
                taken += ids
                if len(ids) == left and ids[-1] != hi:  # the rest of the range: later
                    conn.execute(
                        "UPDATE job_search_pending SET lo = %s WHERE n = %s", (ids[-1] + " ", n)
                    )
                    break
                conn.execute("DELETE FROM job_search_pending WHERE n = %s", (n,))
            if taken:
                conn.execute(
                    f"INSERT INTO job_search_docs (id, doc, wide) SELECT j.id, {DOC}, {WIDE} "
                    "FROM jobs j WHERE j.id = ANY(%s) "
                    "ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc, wide = EXCLUDED.wide",
                    (taken,),
                )
                conn.execute(
                    "DELETE FROM job_search_docs d WHERE d.id = ANY(%s) "
                    "AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = d.id)",
                    (taken,),
                )
        return len(taken)

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        patterns = term_patterns(params.terms)
        if not patterns or not self.search_index_enabled():
            from conveyor.backends.search_scan import scan_search  # searches only

            return scan_search(self.job_list, params, self._logs_text)
        self.search_index_catch_up()  # the tail left to read row by row is then short
        return self._indexed_search(params, patterns)

    def _indexed_search(self, params: JobSearchParams, patterns: list[str]) -> JobSearchPage:
        from conveyor.backends.search_match import page_of_candidates  # searches only

        where, args = filter_sql(POSTGRES, params.filter)
        before = [] if params.before_id is None else [params.before_id]
        page = "" if params.before_id is None else f" AND {POSTGRES.id_order} < %s"
        tail_rows = self._once(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE ({where}) AND {_PENDING}{page} "
            f"ORDER BY {POSTGRES.id_order} DESC LIMIT %s",
            [*args, *before, MAX_TAIL + 1],
        )
        complete = len(tail_rows) <= MAX_TAIL
        tail = [decoding.job_record(r) for r in tail_rows[:MAX_TAIL]]
        words = " AND ".join("d.doc ~ %s" for _ in patterns)
        fresh = f"({where}) AND NOT {_PENDING}"
        # two queries merged newest first, not one with OR: the planner cannot estimate
        # the OR, and walks the primary key through every row for a rare word
        streams = (
            iter(tail),
            self._candidates(f"{fresh} AND {words}", [*args, *patterns], params.before_id),
            self._candidates(f"{fresh} AND d.wide", args, params.before_id),
        )
        return page_of_candidates(streams, params, complete, self._logs_text)

    def _logs_text(self, job_id: str) -> str:
        rows = self._once(
            "SELECT message FROM job_logs WHERE job_id = %s ORDER BY seq LIMIT 1000", (job_id,)
        )
        return " ".join(str(r[0]) for r in rows)

    def _candidates(
        self, condition: str, args: list[object], before: str | None
    ) -> Iterator[JobRecord]:
        """The indexed jobs meeting ``condition``, newest first, ``_BATCH`` at a time."""
        tail = " ORDER BY d.id DESC LIMIT %s"  # d.id is COLLATE "C", as jobs.id
        while True:
            page = "" if before is None else " AND d.id < %s"
            more = [] if before is None else [before]
            sql = (
                f"SELECT {_QUALIFIED} FROM job_search_docs d JOIN jobs ON jobs.id = d.id "
                f"WHERE {condition}{page}{tail}"
            )
            rows = self._once(sql, [*args, *more, _BATCH])
            for row in rows:
                job = decoding.job_record(row)
                before = job.id
                yield job
            if len(rows) < _BATCH:
                return
