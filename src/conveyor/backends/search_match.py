"""The token match of a search: the words of a job's fields, and whether a job has a
parsed query's text terms (:mod:`conveyor.search_query` parses them). What the
scanning stores apply to each row (:mod:`conveyor.backends.search_scan`), and the same
words SQLite's FTS5 index finds (``unicode61`` with ``tokenchars '_'``).

Example:
    >>> tokens("billing.total: user_id=42")
    ['billing', 'total', 'user_id', '42']
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from conveyor.backends.records import JobRecord
from conveyor.backends.search_params import JobSearchPage, JobSearchParams, SearchTerm

_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """The words of ``text`` as the index sees them: lower case, accents removed.

    >>> tokens("Timeout in billing.total for user_id=42 (Zürich)")
    ['timeout', 'in', 'billing', 'total', 'for', 'user_id', '42', 'zurich']
    """
    if text.isascii():  # the common case: no accents to remove
        return _WORD.findall(text.lower())
    folded = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(c for c in folded if not unicodedata.combining(c))
    return _WORD.findall(plain)


def field_texts(job: JobRecord) -> Mapping[str, str]:
    """The text of each searchable field of a job (what an index holds)."""
    return {
        "task": job.task,
        "queue": job.queue,
        "args": job.payload,
        # a null result is no text (the indexes skip a finish that adds nothing)
        "result": "" if job.result in (None, "null") else str(job.result),
        "error": job.error or "",
        "headers": job.headers or "",
    }


def matches(
    job: JobRecord, terms: Iterable[SearchTerm], logs: Callable[[str], str] | None = None
) -> bool:
    """Whether ``job`` has every term (and none of the negated ones); the filter is the
    store's. What a scanning store applies to each row it reads. ``logs(job_id)``: the
    text of the job's log lines, asked only when a term is not found elsewhere (None:
    the job has none to search).

    >>> from conveyor.states import JobState
    >>> from conveyor.search_query import parse_search
    >>> job = JobRecord("j", "billing.total", "default", JobState.DEAD, 0, '{"args":[1]}',
    ...     1, 1, 0, 1, 0.0, 0.0, None, 60.0, None, None, False, None,
    ...     '{"type":"TimeoutError","message":"gave up"}', None, None, None)
    >>> matches(job, parse_search('billing.total error:timeouterror -"gave in"').terms)
    True
    """
    texts: dict[str, object] = dict(field_texts(job))
    if logs is not None:
        texts["logs"] = _Lazy(logs, job.id)  # read only if a term gets that far
    seen: dict[str, list[str]] = {}
    for term in terms:
        words = term.text.split()
        found = False
        for name in (term.field,) if term.field else texts:
            if name not in texts:
                continue  # logs: a store that does not search them
            text = str(texts[name])
            # most rows of a scan lack the word: a substring test rejects them without
            # tokenizing (ASCII text only: accents need the tokens' folding)
            if text.isascii() and words[0] not in text.lower():
                continue
            if name not in seen:
                seen[name] = tokens(text)
            if _contains(seen[name], words, term.prefix):
                found = True
                break
        if found == term.negated:
            return False
    return True


class _Lazy:
    """A job's log text, read the first time a term looks into it."""

    def __init__(self, read: Callable[[str], str], job_id: str) -> None:
        self._read, self._job_id = read, job_id
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self._read(self._job_id)
        return self._text


def _contains(seq: Sequence[str], words: Sequence[str], prefix: bool) -> bool:
    n = len(words)
    for i in range(len(seq) - n + 1):
        if seq[i : i + n - 1] == list(words[:-1]):
            last = seq[i + n - 1]
            if last == words[-1] or (prefix and last.startswith(words[-1])):
                return True
    return False


def highlight_spans(text: str, terms: Iterable[SearchTerm]) -> list[tuple[int, int]]:
    """Where in ``text`` the words of the positive ``terms`` are (start, end), for
    showing a hit with its matched words marked: each word of a term wherever it is
    a whole word (the last one of a prefix term as a word's start), compared as the
    search compares them (case and accents folded).

    >>> text = "Timeout for user_id=42 (Zürich)"
    >>> from conveyor.search_query import parse_search
    >>> [text[a:b] for a, b in highlight_spans(text, parse_search("timeout zurich user_*").terms)]
    ['Timeout', 'user_id', 'Zürich']
    """
    whole: set[str] = set()
    starts: set[str] = set()
    for term in terms:
        if term.negated:
            continue
        words = term.text.split()
        whole.update(words[:-1] if term.prefix else words)
        if term.prefix:
            starts.add(words[-1])
    if not whole and not starts:
        return []
    spans = []
    for m in _WORD.finditer(text):
        folded = tokens(m.group())
        word = folded[0] if folded else ""
        if word in whole or any(word.startswith(s) for s in starts):
            spans.append((m.start(), m.end()))
    return spans


def page_of_candidates(
    streams: Sequence[Iterator[JobRecord]],
    params: JobSearchParams,
    complete: bool,
    logs: Callable[[str], str],
) -> JobSearchPage:
    """An indexed search's page (PostgreSQL's and MariaDB's indexes): the candidate
    streams (each newest first) merged, each job once, re-checked by :func:`matches` so
    the answers are the scan's; past ``params.max_scan`` candidates the page says where
    it stopped, as a scan does. ``complete``: the unindexed tail was read whole.

    Example:
        >>> from conveyor.backends.ops_params import JobFilter
        >>> from conveyor.backends.search_params import JobSearchParams
        >>> page = page_of_candidates([iter([])], JobSearchParams(JobFilter()), True, str)
        >>> (page.jobs, page.scanned, page.complete, page.next_before)
        ((), None, True, None)
    """
    found: list[JobRecord] = []
    read, last, cursor = 0, None, params.before_id
    for job in heapq.merge(*streams, key=lambda j: j.id.encode(), reverse=True):
        if job.id == last:
            continue  # in two streams
        if read == params.max_scan:
            # candidates the words did not narrow enough: said, as a scan says it
            return JobSearchPage(tuple(found), read, False, cursor)
        read, last, cursor = read + 1, job.id, job.id
        if matches(job, params.terms, logs=logs):
            found.append(job)
            if len(found) == params.limit:
                return JobSearchPage(tuple(found), None, complete, job.id)
    return JobSearchPage(tuple(found), None, complete, None)
