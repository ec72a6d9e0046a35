"""Job ids from what a user typed: a whole id, or a unique prefix of one (as copied off a
listing, ``conveyor job 01JD8X2K``). Used by ``job``, ``retry`` and ``cancel``.

A prefix is looked up in id order (every store lists ids in byte order, so all ids that
start with it come right after it): one match is the job, several are an error naming a
few of them, none is "not found".

Example::

    job_id = resolve(backend, "01JD8X2K")   # -> "01JD8X2K3Q4R5S6T7V8W9XYZ"
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from conveyor.backends.base import Backend, JobListParams

#: Shortest prefix looked up: fewer characters name a job only by luck.
MIN_PREFIX = 4
#: Matches named in the error about an ambiguous prefix.
SHOWN = 5


class AmbiguousPrefix(click.UsageError):
    """A prefix that starts several job ids (a usage error: exit 2, one line)."""


def matching(backend: Backend, prefix: str, limit: int = SHOWN + 1) -> list[str]:
    """Up to ``limit`` ids that start with ``prefix``, in id order."""
    found = backend.job_list(JobListParams(after_id=prefix, limit=limit))
    out: list[str] = []
    for record in found:
        if not record.id.startswith(prefix):
            break  # id order: nothing later can start with it
        out.append(record.id)
    return out


def resolve(backend: Backend, text: str) -> str | None:
    """The id ``text`` names (itself when a job has it, else the one id it starts), None
    when it names no job; :class:`AmbiguousPrefix` when it starts several."""
    if backend.job_get_many([text]):
        return text
    return resolve_prefix(backend, text)


def resolve_prefix(backend: Backend, text: str) -> str | None:
    """The one id starting with ``text`` (not itself an id), None for none; raises
    :class:`AmbiguousPrefix` for several, or when it is too short to look up."""
    if len(text) < MIN_PREFIX:
        return None
    ids = matching(backend, text)
    if not ids:
        return None
    if len(ids) > 1:
        raise AmbiguousPrefix(ambiguous(text, ids))
    return ids[0]


def ambiguous(text: str, ids: Sequence[str]) -> str:
    """The one-line error for a prefix several ids start with."""
    shown = ", ".join(ids[:SHOWN])
    more = ", ..." if len(ids) > SHOWN else ""
    return f"job id prefix {text!r} is ambiguous: {shown}{more}; give more characters"
