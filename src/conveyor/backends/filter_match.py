"""``JobFilter`` evaluated in Python, for the stores without SQL (Redis, memory).

Same meaning as the SQL stores' ``sql/filters.py``: every field narrows (AND); time
bounds are ``>=`` after and ``<`` before, and a NULL ``finished_at`` matches neither.
``--where`` compares typed JSON exactly like SQLite's ``json_type``/``json_extract``:
``42`` never equals ``"42"``, ``true`` never equals ``1`` (Python's ``True == 1`` is
not used), ``1`` equals ``1.0``, and a missing path matches nothing, not even ``null``.

Example:
    >>> from conveyor.query import parse_where
    >>> f = JobFilter(where=(parse_where("kwargs.n=1"),))
    >>> where_matches(f.where[0], '{"args": [], "kwargs": {"n": true}}', None)
    False
    >>> where_matches(f.where[0], '{"args": [], "kwargs": {"n": 1.0}}', None)
    True
"""

from __future__ import annotations

import json
from typing import Final

from conveyor.backends.base import JobFilter, JobRecord, WhereCondition

_MISSING: Final = object()


def json_equal(a: object, b: object) -> bool:
    """Typed JSON equality: bools only equal bools, numbers compare by value, containers
    element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def lookup(doc: object, path: tuple[str | int, ...]) -> object:
    """The value at ``path`` (ints index lists, strings key objects), or ``_MISSING``."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(doc, list) or step >= len(doc):
                return _MISSING
            doc = doc[step]
        else:
            if not isinstance(doc, dict) or step not in doc:
                return _MISSING
            doc = doc[step]
    return doc


def _decode(text: str | None) -> object:
    if text is None:
        return _MISSING
    try:
        return json.loads(text)
    except ValueError:  # stored text that is not JSON matches no --where (as in SQLite)
        return _MISSING


def where_matches(cond: WhereCondition, payload: str, result: str | None) -> bool:
    """One ``--where`` condition against a job's payload (args/kwargs) or result."""
    if cond.root == "result":
        doc, path = _decode(result), cond.path
    elif cond.root in ("args", "kwargs"):
        doc, path = _decode(payload), (cond.root, *cond.path)
    else:
        raise ValueError(f"unknown --where root {cond.root!r}")
    if doc is _MISSING:
        return False
    found = lookup(doc, path)
    return found is not _MISSING and json_equal(found, cond.value)


def matches(f: JobFilter, job: JobRecord) -> bool:
    """Whether ``job`` passes every condition of ``f``."""
    if f.queue is not None and job.queue != f.queue:
        return False
    if f.task is not None and job.task != f.task:
        return False
    if f.states and job.state not in f.states:
        return False
    if f.created_after is not None and not job.created_at >= f.created_after:
        return False
    if f.created_before is not None and not job.created_at < f.created_before:
        return False
    fin = job.finished_at
    if f.finished_after is not None and (fin is None or not fin >= f.finished_after):
        return False
    if f.finished_before is not None and (fin is None or not fin < f.finished_before):
        return False
    return all(bound_matches(c, job) for c in f.where)


def bound_matches(cond: WhereCondition, job: JobRecord) -> bool:
    """``cond`` as written, or one of its bound slots for the job's task (an argument
    filtered by parameter name, passed by position, or the other way round)."""
    if where_matches(cond, job.payload, job.result):
        return True
    return any(
        job.task in tasks and where_matches(slot, job.payload, job.result)
        for tasks, slot in cond.slot_conditions()
    )
