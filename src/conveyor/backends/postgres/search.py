"""Search on PostgreSQL (feature ``search``): a bounded scan by default, or a trigram
index (``pg_trgm``) once it is turned on (``conveyor search-index on``).

The index is a GIN ``gin_trgm_ops`` index on one expression, :data:`DOC`: the
lower-cased text of a job's task, queue, arguments, result, error and headers, without
``_``. It is not a schema version: ``on`` creates it (``CREATE INDEX CONCURRENTLY``:
writes go on while it is built), ``off`` drops it, and PostgreSQL keeps it on every
write path by itself.

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
selective search reads little more than its hits.

A mixin of :class:`~conveyor.backends.postgres.backend.PostgresBackend`.

Example:
    >>> from conveyor.search_query import parse_search
    >>> for p in term_patterns(parse_search('send_w* "gave up" -retry ok').terms):
    ...     print(p)
    (^|[^[:alnum:]])gave[^[:alnum:]]+up([^[:alnum:]]|$)
    (^|[^[:alnum:]])sendw
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from conveyor.backends import decoding
from conveyor.backends.base import JobListParams, JobRecord
from conveyor.backends.postgres.dialect import POSTGRES
from conveyor.backends.search_params import JobSearchPage, JobSearchParams, SearchTerm
from conveyor.backends.sql.filters import filter_sql
from conveyor.backends.sql.ops_read import JOB_COLUMNS

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from conveyor.backends.postgres.single import OneConnection

_RAW = (
    "(task || ' ' || queue || ' ' || payload || ' ' || coalesce(result, '') || ' ' || "
    "coalesce(error, '') || ' ' || coalesce(headers, ''))"
)
#: The indexed expression (the query repeats it verbatim, so the planner uses the index):
#: lower case, without ``_``, which trigrams do not count as a letter, so ``customer_9``
#: becomes the word ``customer9``, whose trigrams tell it from ``customer_1``.
DOC = f"replace(lower({_RAW}), '_', '')"
#: Jobs whose text is not ASCII: always candidates (the partial index's predicate).
WIDE = f"octet_length({_RAW}) <> length({_RAW})"
TRGM_INDEX = "jobs_search_trgm"
WIDE_INDEX = "jobs_search_wide"
#: Candidates read per round: a page's worth and some, as most of them match.
_BATCH = 200
#: What is not a word character in :data:`DOC` (words: letters and digits, ``_`` gone).
_GAP = "[^[:alnum:]]"


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
        """Turn the index on (built without blocking writes) or off (dropped)."""
        for name in (TRGM_INDEX, WIDE_INDEX):
            if not on or not self._index_valid(name):
                # an interrupted CONCURRENTLY build leaves an invalid index: rebuilt
                self._ddl(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        if not on:
            return
        ops = f"{self._trgm_schema()}.gin_trgm_ops"
        self._ddl(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {TRGM_INDEX} ON jobs "
            f"USING gin (({DOC}) {ops})"
        )
        self._ddl(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {WIDE_INDEX} ON jobs (id) WHERE {WIDE}")
        # the planner's statistics of the indexed expression (autovacuum would take a while)
        self._ddl("ANALYZE jobs")

    def _index_valid(self, *names: str) -> bool:
        # one round trip, asked by every search: are these indexes all there and valid
        found = self._once(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = ANY(%s) AND i.indisvalid "
            "AND c.relnamespace = current_schema()::regnamespace",
            (list(names),),
        )
        return int(str(found[0][0])) == len(names)

    def search_index_enabled(self) -> bool:
        return self._index_valid(TRGM_INDEX, WIDE_INDEX)

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        patterns = term_patterns(params.terms)
        if not patterns or not self.search_index_enabled():
            from conveyor.backends.search_scan import scan_search  # searches only

            return scan_search(self.job_list, params)
        return self._indexed_search(params, patterns)

    def _indexed_search(self, params: JobSearchParams, patterns: list[str]) -> JobSearchPage:
        from conveyor.backends.search_match import matches  # searches only

        where, args = filter_sql(POSTGRES, params.filter)
        words = " AND ".join(f"{DOC} ~ %s" for _ in patterns)
        # two queries merged newest first, not one with OR: the planner cannot estimate
        # the OR, and walks the primary key through every row for a rare word
        streams = (
            self._candidates(f"({where}) AND {words}", [*args, *patterns], params.before_id),
            self._candidates(f"({where}) AND {WIDE}", args, params.before_id),
        )
        found: list[JobRecord] = []
        read, last, before = 0, None, params.before_id
        for job in heapq.merge(*streams, key=lambda j: j.id.encode(), reverse=True):
            if job.id == last:
                continue  # in both streams (text not ASCII, and has the words)
            if read == params.max_scan:
                # candidates the words did not narrow enough: said, as a scan says it
                return JobSearchPage(tuple(found), read, False, before)
            read, last, before = read + 1, job.id, job.id
            if matches(job, params.terms):
                found.append(job)
                if len(found) == params.limit:
                    return JobSearchPage(tuple(found), None, True, job.id)
        return JobSearchPage(tuple(found), None, True, None)

    def _candidates(
        self, condition: str, args: list[object], before: str | None
    ) -> Iterator[JobRecord]:
        """The jobs meeting ``condition``, newest first, read ``_BATCH`` at a time."""
        tail = f" ORDER BY {POSTGRES.id_order} DESC LIMIT %s"
        while True:
            page = "" if before is None else f" AND {POSTGRES.id_order} < %s"
            more = [] if before is None else [before]
            sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE {condition}{page}{tail}"
            rows = self._once(sql, [*args, *more, _BATCH])
            for row in rows:
                job = decoding.job_record(row)
                before = job.id
                yield job
            if len(rows) < _BATCH:
                return
