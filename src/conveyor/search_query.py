"""The one search language of the CLI, the API and the dashboard, parsed once here into
what every store understands (:mod:`conveyor.backends.search_params`), and the token
match the scanning stores apply (the same words an index finds).

Language (terms are ANDed):

* ``word`` -- the word in any indexed field (task, queue, args, result, error,
  headers); ``word*`` -- a word starting so; ``"two words"`` -- a phrase;
* ``-word``, ``-"a phrase"``, ``-field:value`` -- must not match;
* ``task:word`` ``queue:word`` ``error:word`` ``args:word`` ``result:word``
  ``headers:word`` -- in that field only (``task:send_welcome`` finds
  ``mail.send_welcome``; ``task:mail.send_welcome`` is the phrase ``mail send_welcome``);
  ``header.NAME:value`` -- header NAME is value (its words, in order);
* ``state:STATE`` -- exactly (repeatable: any of them);
* ``args.NAME:value`` ``args.0:value`` -- an argument by parameter name or position
  equals the JSON value (``42``, ``true``, ``"42"``; else the text), as ``--where``;
* ``finished:<1h`` (within the last hour), ``finished:>7d`` (before a week ago),
  ``created:<15m``, ``created:>2026-12-01`` (an ISO time).

Words are runs of letters, digits and ``_`` (so ``user_id`` and ``send_welcome`` are
one word each, ``billing.total`` is the phrase ``billing total``), compared without case
or accents: SQLite's FTS5 ``unicode61`` tokenizer with ``tokenchars '_'``, and
:func:`conveyor.backends.search_match.tokens` for the stores that scan.

Example:
    >>> q = parse_search('timeout state:dead args.user_id:42 -"retry later" finished:<1h', now=7200.0)
    >>> [s.value for s in q.filter.states], q.filter.finished_after, q.filter.where[0].value
    (['dead'], 3600.0, 42)
    >>> [(t.text, t.negated) for t in q.terms]
    [('timeout', False), ('42', False), ('retry later', True)]
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

from conveyor import records
from conveyor.backends.base import JobFilter, WhereCondition
from conveyor.backends.search_match import tokens
from conveyor.backends.search_params import SEARCH_FIELDS, SearchTerm
from conveyor.query import parse_duration, parse_time, parse_where
from conveyor.records import record
from conveyor.states import JobState

#: One piece of a query: an optional ``-``, an optional ``field:``, then a quoted phrase
#: or a bare run of non-space characters.
_PIECE = re.compile(r'(-)?(?:([A-Za-z_][\w.]*):)?(?:"([^"]*)"|(\S+))')
_AGO = re.compile(r"\d+(?:\.\d+)?[smhdw]")
_TIMES = ("finished", "created")


class SearchSyntaxError(ValueError):
    """A query the language does not allow; the message says which piece and why."""


@record
class SearchQuery:
    """A parsed query: what narrows by column, and the text terms."""

    filter: JobFilter
    terms: tuple[SearchTerm, ...]


def parse_search(text: str, *, now: float | None = None) -> SearchQuery:
    """Parse ``text`` (see the module docstring); raises :class:`SearchSyntaxError`."""
    now = time.time() if now is None else now
    fields: dict[str, object] = {}
    states: list[JobState] = []
    where: list[WhereCondition] = []
    terms: list[SearchTerm] = []
    for m in _PIECE.finditer(text):
        negated, field, phrase, bare = bool(m.group(1)), m.group(2), m.group(3), m.group(4)
        value = phrase if phrase is not None else bare
        if field is None or field in SEARCH_FIELDS:
            terms.extend(_term(value, field, negated))
            continue
        if negated:
            raise SearchSyntaxError(f"{m.group(0)}: only words and text fields can be negated")
        if field == "state":
            states.append(_state(value))
        elif field in _TIMES:
            fields.update(_time_bound(field, value, now))
        elif field.startswith("args.") or field.startswith("header."):
            root, _, name = field.partition(".")
            if root == "header":
                terms.extend(_term(f"{name} {value}", "headers", False))
            else:
                condition = _argument(name, value)
                where.append(condition)
                terms.extend(_value_words(condition.value))
        else:
            known = ", ".join([*SEARCH_FIELDS, "state", *_TIMES, "args.NAME", "header.NAME"])
            raise SearchSyntaxError(f"{m.group(0)}: unknown field {field!r} (known: {known})")
    job_filter = JobFilter(states=tuple(states), where=tuple(where))
    return SearchQuery(records.replace(job_filter, **fields), tuple(terms))


def _term(value: str, field: str | None, negated: bool) -> list[SearchTerm]:
    prefix = value.endswith("*")
    words = tokens(value)
    if not words:
        return []  # punctuation only: nothing a token index could hold
    return [SearchTerm(" ".join(words), field, negated, prefix)]


def _value_words(value: object) -> list[SearchTerm]:
    """The words an argument equal to ``value`` puts in the payload, as a text term in
    ``args``: implied by the equality, and what lets an index narrow the candidates the
    store's typed JSON test then checks (without it, ``args.NAME:`` reads every row).

    >>> [t.text for t in _value_words(123457)], [t.text for t in _value_words({"a": 1})]
    (['123457'], [])
    """
    if isinstance(value, (dict, list)):
        return []  # key order and nesting: the JSON test alone decides
    return _term(json.dumps(value, ensure_ascii=False), "args", False)


def _state(value: str) -> JobState:
    try:
        return JobState(value)
    except ValueError:
        known = ", ".join(s.value for s in JobState)
        raise SearchSyntaxError(f"state:{value}: not a state (known: {known})") from None


def _time_bound(field: str, value: str, now: float) -> dict[str, float]:
    """``finished:<1h`` -> ``finished_after = now - 1h``; ``>`` gives ``*_before``."""
    op, rest = value[:1], value[1:]
    if op not in "<>" or not rest:
        raise SearchSyntaxError(f"{field}:{value}: write {field}:<1h or {field}:>7d")
    ago = _AGO.fullmatch(rest) is not None
    try:
        at = now - parse_duration(rest) if ago else parse_time(rest, now)
    except ValueError as exc:
        raise SearchSyntaxError(f"{field}:{value}: {exc}") from None
    # "<1h": less than an hour ago, so after that point; "<2026-12-01": before that date
    newer = (op == "<") == ago
    return {f"{field}_{'after' if newer else 'before'}": at}


def _argument(name: str, value: str) -> WhereCondition:
    where = f"args.{name}={value}" if name.isdigit() else f"kwargs.{name}={value}"
    try:
        return parse_where(where)
    except ValueError as exc:
        raise SearchSyntaxError(f"args.{name}:{value}: {exc}") from None


def narrowed(a: JobFilter, b: JobFilter) -> JobFilter:
    """Both filters at once (AND): what ``conveyor jobs --state dead --search '...'``
    means. Raises :class:`SearchSyntaxError` when they exclude each other (no state in
    both lists).

    >>> f = narrowed(JobFilter(queue="mail", finished_after=5.0), JobFilter(finished_after=9.0))
    >>> f.queue, f.finished_after
    ('mail', 9.0)
    """
    states = a.states or b.states
    if a.states and b.states:
        states = tuple(s for s in a.states if s in b.states)
        if not states:
            raise SearchSyntaxError("the states of the options and of the query exclude each other")
    return JobFilter(
        queue=a.queue or b.queue,
        task=a.task or b.task,
        states=states,
        created_after=_bound(max, a.created_after, b.created_after),
        created_before=_bound(min, a.created_before, b.created_before),
        finished_after=_bound(max, a.finished_after, b.finished_after),
        finished_before=_bound(min, a.finished_before, b.finished_before),
        where=(*a.where, *b.where),
    )


def _bound(pick: Callable[[float, float], float], x: float | None, y: float | None) -> float | None:
    return y if x is None else x if y is None else pick(x, y)
