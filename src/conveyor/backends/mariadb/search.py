"""Search on MariaDB (feature ``search``): a bounded scan by default, or an InnoDB
``FULLTEXT`` index filled after the fact once it is turned on (``conveyor search-index
on``), as SQLite's FTS5 and PostgreSQL's trigram index are.

The index is its own table, ``job_search_docs`` (schema version 5): each job's text
(task, queue, arguments, result, error, headers and log lines; case-insensitive
collation) under a ``FULLTEXT`` index. The writes do not index: row triggers, which
exist only while the index is on (``search_index.sql``), note each job written in
``job_search_pending``, and the indexer (:meth:`MariaDBSearch.search_index_catch_up`:
the workers' search-indexer service, and each search, a batch) fills the table.

Tokens: InnoDB's built-in parser cuts words at what is not a letter, a digit or ``_``
(an apostrophe too), which on ASCII text is exactly the language's words: an identifier
(``customer_4242``, ``send_welcome``) is one token, ``billing.total`` two. MariaDB has
no ``ngram`` parser (MySQL's); its limits are ``innodb_ft_min_token_size`` (3: shorter
words are not indexed) and ``innodb_ft_max_token_size`` (84), so only words of 3-84
ASCII characters are looked up (:func:`match_query`), the others left to the re-check;
``on`` builds the index with stopwords off (``the``, ``for``, ``with`` ... are words
too). The index only narrows: a positive term becomes ``+word``, ``+word*`` or
``+"a phrase"``, an unfielded negated word ``-word`` (:func:`match_query`; a search
hands ``MATCH`` the one part likeliest to be rare, as each word costs its whole
posting list); jobs whose text is not ASCII (the
language folds accents) or has a word of more than 84 characters (not indexed, and
``prefix*`` may start it) are always candidates. Each candidate is matched in Python
exactly as a scan matches a row (:func:`~conveyor.backends.search_match.matches`), so
the answers are the scan's; the jobs still pending are read from ``jobs`` and matched
the same way, so answers are complete.

A mixin of :class:`~conveyor.backends.mariadb.backend.MariaDBBackend`.

Example:
    >>> from conveyor.search_query import parse_search
    >>> match_query(parse_search('customer_42* "gave up" -retry "password reset" ok').terms)
    '+customer_42* +gave -retry +"password reset"'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from conveyor.backends import decoding
from conveyor.backends.base import JobListParams, JobLogListParams, JobLogRecord, JobRecord
from conveyor.backends.mariadb.connection import read_packaged, statements
from conveyor.backends.mariadb.dialect import MARIADB
from conveyor.backends.search_params import JobSearchPage, JobSearchParams, SearchTerm
from conveyor.backends.sql.dialect import Executor
from conveyor.backends.sql.filters import filter_sql
from conveyor.backends.sql.ops_read import JOB_COLUMNS

#: The FULLTEXT index ``on`` adds to ``job_search_docs``.
FT_INDEX = "job_search_docs_ft"
#: What ``off`` drops, before it empties the tables.
OFF = (
    "DROP TRIGGER IF EXISTS job_search_insert",
    "DROP TRIGGER IF EXISTS job_search_update",
    "DROP TRIGGER IF EXISTS job_search_delete",
)
#: A job's text: its fields and its log lines (NULLs skipped by CONCAT_WS).
_TEXT = (
    "CONCAT_WS(' ', j.task, j.queue, j.payload, j.result, j.error, j.headers, "
    "(SELECT GROUP_CONCAT(l.message ORDER BY l.seq SEPARATOR ' ') "
    "FROM job_logs l WHERE l.job_id = j.id))"
)
#: InnoDB's token sizes (innodb_ft_min_token_size, innodb_ft_max_token_size defaults).
MIN_TOKEN, MAX_TOKEN = 3, 84
#: A word InnoDB does not index (longer than MAX_TOKEN): its job is always a candidate,
#: as a prefix term may start it.
_OVERLONG = "[[:alnum:]_]{85}"
#: Newest jobs a search reads before it asks the index (``_probe``), and how many of
#: them it reads first to learn whether its words are in most jobs.
PROBE, PROBE_FIRST = 200, 20
#: Candidates' rows read per round: a page's worth and some, as most of them match.
_BATCH = 200
#: Ids in one IN (...) list (the dialect's chunk).
_CHUNK = 1000
#: Candidates' ids one MATCH hands back.
_IDS = 5000
#: Jobs one indexing transaction takes.
INDEX_BATCH = 2000
#: Pending jobs a search reads row by row at most (past it: not complete).
MAX_TAIL = 20_000


def _indexed(word: str) -> bool:
    return word.isascii() and MIN_TOKEN <= len(word) <= MAX_TOKEN


def match_query(terms: Sequence[SearchTerm], rarest_only: bool = False) -> str:
    """The boolean-mode ``AGAINST`` string that narrows to the jobs that may hold
    ``terms`` ('' when no positive term has a word the index holds: then a scan). A
    phrase whose words are all indexed is a phrase; of another, each indexed word is
    required (the order is the re-check's). Only a negated word in no field is
    excluded: a field's negation (``-error:x``) may hold elsewhere in the job.

    ``rarest_only`` (what a search asks): the one required part likeliest to be rare
    (a word with digits, then with ``_``, then whole, then the longest), as InnoDB
    reads every word's whole posting list for a MATCH: a common word (or a negated
    one) would cost its list to trim what the re-check trims anyway.

    >>> from conveyor.search_query import parse_search
    >>> match_query(parse_search("error:timeouterror customer_81 -retry").terms, True)
    '+customer_81'
    >>> match_query(parse_search('header.tenant:acme_17 "bank gave up"').terms, True)
    '+acme_17'
    """
    parts: list[str] = []
    for term in terms:
        words = term.text.split()
        if term.negated:
            if term.field is None and len(words) == 1 and not term.prefix and _indexed(words[0]):
                parts.append(f"-{words[0]}")
            continue
        last = words[-1] if term.prefix and words[-1].isascii() and len(words[-1]) >= 3 else ""
        whole = words[:-1] if term.prefix else words
        if len(words) > 1 and not term.prefix and all(_indexed(w) for w in words):
            parts.append('+"' + " ".join(words) + '"')
            continue
        parts += [f"+{w}" for w in whole if _indexed(w)]
        if last:
            parts.append(f"+{last[:MAX_TOKEN]}*")
    required = [p for p in parts if p.startswith("+")]
    if not required:
        return ""
    if rarest_only:  # a phrase's one word: InnoDB reads every word's list for a phrase
        words = [f"+{w}" for p in required for w in p.strip('+"').split()]
        return max(words, key=_rarity)
    return " ".join(dict.fromkeys(parts))


def _rarity(part: str) -> tuple[bool, bool, bool, int]:
    """How likely a required word is to be rare: identifiers and numbers are."""
    return (any(c.isdigit() for c in part), "_" in part, not part.endswith("*"), len(part))


class MariaDBSearch:
    """``job_search`` from the FULLTEXT index (a scan where the index is off)."""

    _tx: Callable[..., Any]
    _ops_rows: Callable[..., list[tuple[Any, ...]]]
    job_list: Callable[[JobListParams], list[JobRecord]]
    job_log_list: Callable[[JobLogListParams], list[JobLogRecord]]

    def _search_note_each(self, ex: Executor, job_ids: Sequence[str]) -> None:
        """Each job's text changed (its log lines): pending, one row each, while on."""
        if job_ids:
            ex.executemany(
                "INSERT INTO job_search_pending (lo, hi) SELECT %s, %s FROM job_search_on",
                [(i, i) for i in job_ids],
            )

    def search_index_set(self, on: bool) -> None:
        """Turn the index on (FULLTEXT index and triggers made, every job pending) or
        off (both dropped, the tables emptied). DDL commits on its own in MariaDB: each
        step is idempotent, and a second ``on`` changes nothing."""
        if not on:
            with self._tx() as ex:
                for statement in OFF:
                    ex.execute(statement)
                ex.execute("DELETE FROM job_search_on")
                ex.execute("DELETE FROM job_search_pending")
                if self._has_ft(ex):
                    ex.execute(f"ALTER TABLE job_search_docs DROP INDEX {FT_INDEX}")
                ex.execute("TRUNCATE TABLE job_search_docs")
            return
        with self._tx() as ex:
            if ex.execute("SELECT 1 FROM job_search_on").fetchall():
                return
            if not self._has_ft(ex):
                # stopwords off: 'the', 'with' ... are words the language finds
                ex.execute("SET SESSION innodb_ft_enable_stopword = OFF")
                ex.execute(f"ALTER TABLE job_search_docs ADD FULLTEXT INDEX {FT_INDEX} (doc)")
                ex.execute("SET SESSION innodb_ft_enable_stopword = DEFAULT")
            for statement in statements(read_packaged("search_index.sql")):
                ex.execute(statement)
            # after the triggers: a write in between is noted twice, never missed
            ex.execute(
                "INSERT INTO job_search_pending (lo, hi) SELECT MIN(id), MAX(id) FROM jobs "
                "HAVING MIN(id) IS NOT NULL"
            )
            ex.execute("INSERT INTO job_search_on (since) VALUES (UNIX_TIMESTAMP(NOW(6)))")

    def _has_ft(self, ex: Executor) -> bool:
        return bool(
            ex.execute(
                "SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
                "AND TABLE_NAME = 'job_search_docs' AND INDEX_NAME = %s",
                (FT_INDEX,),
            ).fetchall()
        )

    def search_index_enabled(self) -> bool:
        # one round trip, asked by every search
        return bool(self._ops_rows("SELECT EXISTS (SELECT 1 FROM job_search_on)")[0][0])

    def search_index_pending(self) -> int:
        """Jobs the indexer has not reached yet (0 where the index is off)."""
        found = self._ops_rows(
            "SELECT COUNT(DISTINCT jobs.id) FROM job_search_pending p "
            "JOIN jobs ON jobs.id BETWEEN p.lo AND p.hi"
        )
        return int(found[0][0])

    def search_index_catch_up(self, batch: int = INDEX_BATCH) -> int:
        """Index up to ``batch`` pending jobs, oldest writes first, in one transaction:
        each one's text replaced by its current one, a deleted job's removed. Rows taken
        are locked (``SKIP LOCKED``: two indexers take different ones) and deleted by
        their n, so one committed later under a lower n is taken by a later call. A
        range larger than what is left is taken in part. Returns the jobs taken."""
        if not self._ops_rows("SELECT 1 FROM job_search_pending LIMIT 1"):
            return 0  # idle: one read
        taken: list[str] = []
        with self._tx() as ex:
            rows = ex.execute(
                "SELECT n, lo, hi FROM job_search_pending ORDER BY n LIMIT %s "
                "FOR UPDATE SKIP LOCKED",
                (batch,),
            ).fetchall()
            # one job's rows (the triggers'): taken together, whether the job is still
            # there or not (a deleted job's entry goes)
            singles = [(n, lo) for n, lo, hi in rows if lo == hi]
            taken += [str(lo) for _, lo in singles]
            done = [n for n, _ in singles]
            for n, lo, hi in rows:
                left = batch - len(taken)
                if lo == hi:
                    continue
                if left <= 0:
                    break
                ids = [
                    str(r[0])
                    for r in ex.execute(
                        "SELECT id FROM jobs WHERE id BETWEEN %s AND %s ORDER BY id LIMIT %s",
                        (lo, hi, left),
                    ).fetchall()
                ]
                taken += ids
                if len(ids) == left and ids[-1] != hi:
                    # the rest of the range later (from its last id: utf8mb4_bin pads
                    # spaces, so no "next" string; that one job is indexed twice)
                    ex.execute("UPDATE job_search_pending SET lo = %s WHERE n = %s", (ids[-1], n))
                    break
                done.append(n)
            for start in range(0, len(done), _CHUNK):
                chunk = done[start : start + _CHUNK]
                marks = ", ".join(["%s"] * len(chunk))
                ex.execute(f"DELETE FROM job_search_pending WHERE n IN ({marks})", chunk)
            if taken:
                self._index(ex, sorted(set(taken)))
        return len(taken)

    def _index(self, ex: Executor, ids: Sequence[str]) -> None:
        """Replace the entries of ``ids`` by their jobs' current text (none: deleted)."""
        ex.execute("SET SESSION group_concat_max_len = 4294967295")  # all of the log lines
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            ex.execute(f"DELETE FROM job_search_docs WHERE job_id IN ({marks})", chunk)
            ex.execute(
                "INSERT INTO job_search_docs (job_id, doc, wide) "
                f"SELECT id, t, LENGTH(t) <> CHAR_LENGTH(t) OR t REGEXP '{_OVERLONG}' FROM "
                f"(SELECT j.id, {_TEXT} AS t FROM jobs j WHERE j.id IN ({marks})) x",
                chunk,
            )

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        query = match_query(params.terms, rarest_only=True)
        if not query or not self.search_index_enabled():
            from conveyor.backends.search_scan import log_text, scan_search  # searches only

            return scan_search(self.job_list, params, log_text(self.job_log_list))
        probed = self._probe(params)
        if probed is not None:
            return probed
        self.search_index_catch_up()  # the tail left to read row by row is then short
        return self._indexed_search(params, query)

    def _probe(self, params: JobSearchParams) -> JobSearchPage | None:
        """The page from the newest ``PROBE`` jobs the filter selects, when they hold a
        whole page of matches (a word in most jobs: ``order``), matched as the index's
        candidates are (log lines too): the index's page exactly, without a MATCH that
        reads a posting list of every job. None (ask the index) when they do not: at
        once when fewer than half of the newest ``PROBE_FIRST`` match without their log
        lines (a rarer word: one short read is the whole cost), or when the filter has
        ``args.NAME:`` conditions (JSON: no index serves them, so finding 200 could
        read the whole table)."""
        from conveyor.backends.search_match import matches  # searches only

        if params.filter.where:
            return None
        first = self.job_list(
            JobListParams(
                filter=params.filter,
                after_id=params.before_id,
                limit=PROBE_FIRST,
                descending=True,
            )
        )
        if 2 * sum(matches(job, params.terms) for job in first) < len(first):
            return None
        rows = first
        if len(first) == PROBE_FIRST:
            rows += self.job_list(
                JobListParams(
                    filter=params.filter,
                    after_id=first[-1].id,
                    limit=PROBE - PROBE_FIRST,
                    descending=True,
                )
            )
        found: list[JobRecord] = []
        for n, job in enumerate(rows, 1):
            if matches(job, params.terms, logs=self._logs_text):
                found.append(job)
                if len(found) == params.limit:
                    return JobSearchPage(tuple(found), n, True, job.id)
        return None

    def _indexed_search(self, params: JobSearchParams, query: str) -> JobSearchPage:
        from conveyor.backends.search_match import page_of_candidates  # searches only

        where, args = filter_sql(MARIADB, params.filter)
        before = [] if params.before_id is None else [params.before_id]
        page = "" if params.before_id is None else " AND id < %s"
        # a range is made only by `on` (and left by a partial take): a few rows
        ranges = self._ops_rows("SELECT lo, hi FROM job_search_pending WHERE lo <> hi")
        tail_rows: dict[str, JobRecord] = {}
        pending = ["id IN (SELECT lo FROM job_search_pending)"]
        pending += ["id BETWEEN %s AND %s"] * len(ranges)
        for i, condition in enumerate(pending):
            more = [] if i == 0 else list(ranges[i - 1])
            for row in self._ops_rows(
                f"SELECT {JOB_COLUMNS} FROM jobs WHERE ({where}) AND {condition}{page} "
                "ORDER BY id DESC LIMIT %s",
                [*args, *more, *before, MAX_TAIL + 1],
            ):
                job = decoding.job_record(row)
                tail_rows[job.id] = job
        tail = sorted(tail_rows.values(), key=lambda j: j.id.encode(), reverse=True)
        complete = len(tail) <= MAX_TAIL
        fresh = (
            f"({where}) AND NOT EXISTS (SELECT 1 FROM job_search_pending p WHERE p.lo = d.job_id)"
        )
        fresh_args = [*args]
        for lo, hi in ranges:
            fresh += " AND d.job_id NOT BETWEEN %s AND %s"
            fresh_args += [lo, hi]
        streams = (
            iter(tail[:MAX_TAIL]),
            self._candidates(
                f"MATCH (d.doc) AGAINST (%s IN BOOLEAN MODE) AND {fresh}",
                [query, *fresh_args],
                (where, args),
                params.before_id,
            ),
            self._candidates(
                f"d.wide = 1 AND {fresh}", fresh_args, (where, args), params.before_id
            ),
        )
        return page_of_candidates(streams, params, complete, self._logs_text)

    def _logs_text(self, job_id: str) -> str:
        rows = self._ops_rows(
            "SELECT message FROM job_logs WHERE job_id = %s ORDER BY seq LIMIT 1000", (job_id,)
        )
        return " ".join(str(r[0]) for r in rows)

    def _candidates(
        self,
        condition: str,
        args: list[object],
        filter_: tuple[str, list[object]],
        before: str | None,
    ) -> Iterator[JobRecord]:
        """The indexed jobs meeting ``condition`` (and the ``filter_``, checked again on
        the rows read), newest first: their ids ``_IDS`` at a time (InnoDB reads a word's
        whole posting list for each MATCH, whatever the LIMIT: one MATCH for many
        candidates), their rows ``_BATCH`` at a time."""
        while True:
            page = "" if before is None else " AND d.job_id < %s"
            more = [] if before is None else [before]
            ids = [
                str(r[0])
                for r in self._ops_rows(
                    "SELECT d.job_id FROM job_search_docs d JOIN jobs ON jobs.id = d.job_id "
                    f"WHERE {condition}{page} "
                    "ORDER BY d.job_id DESC LIMIT %s",
                    [*args, *more, _IDS],
                )
            ]
            for start in range(0, len(ids), _BATCH):
                chunk = ids[start : start + _BATCH]
                marks = ", ".join(["%s"] * len(chunk))
                rows = self._ops_rows(
                    f"SELECT {JOB_COLUMNS} FROM jobs WHERE id IN ({marks}) AND ({filter_[0]}) "
                    "ORDER BY id DESC",
                    [*chunk, *filter_[1]],
                )
                yield from (decoding.job_record(row) for row in rows)
            if len(ids) < _IDS:
                return
            before = ids[-1]
