"""``conveyor check`` on Redis: walk the id index and every secondary index, and let the
``integrity_check`` script audit each page atomically.

Two directions: every job in the id index must be consistent with itself (the SQLite
audit's kinds: impossible states, claims without a live worker) *and* present in the
index its state needs (ready set, scheduled set, in-flight set, expiry index), or no
worker would ever touch it again; and every index entry, attempt list, log list or job
hash must belong to a job in the matching state (orphans). Listing happens without a
lock; the script re-checks each item, so jobs moving during the walk are not reported.
Keys are found with SCAN: O(keyspace), fine for an audit, not for a hot path.

Example::

    problems = audit(client, Keys("conveyor"), script, heartbeat_ttl=30.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from conveyor.backends.base import IntegrityProblem
from conveyor.backends.redis.keys import Keys

#: Items audited per script call.
PAGE = 500


def _glob(text: str) -> str:
    """``text`` escaped for a SCAN MATCH pattern (a prefix may hold glob characters)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _zset_pages(client: Any, key: str) -> Iterator[list[str]]:
    start = 0
    while True:
        page: list[str] = client.zrange(key, start, start + PAGE - 1)
        if page:
            yield page
        if len(page) < PAGE:
            return
        start += PAGE


def _pages(items: Iterator[str]) -> Iterator[list[str]]:
    page: list[str] = []
    for item in items:
        page.append(item)
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def _suffixes(client: Any, keys: Keys, kind: str) -> Iterator[str]:
    """The ``<x>`` of every ``<base><kind>:<x>`` key."""
    head = f"{keys.base}{kind}:"
    for key in client.scan_iter(match=_glob(head) + "*", count=1000):
        yield key[len(head) :]


def _odd_counts(client: Any, keys: Keys) -> list[str]:
    """Fields of the ``counts`` hash that are not integers (written around the API):
    ``conveyor status`` reads them as 0, so the counts it shows are wrong."""
    found: list[str] = []
    for field, value in client.hgetall(keys.counts).items():
        try:
            int(value)
        except (TypeError, ValueError):
            found += ["counts_not_integer", "", f"counts field {field!r} holds {value!r}"]
    return found


def audit(
    client: Any, keys: Keys, script: Callable[..., list[str]], heartbeat_ttl: float
) -> list[IntegrityProblem]:
    """Every problem found, each reported once, jobs first."""
    fixed = [keys.base, keys.jobs, keys.scheduled, keys.expiry, keys.workers, keys.holders]
    found: list[str] = []

    def run(mode: str, subject: str, items: list[str]) -> None:
        found.extend(script(fixed, [mode, repr(float(heartbeat_ttl)), subject, *items]))

    for page in _zset_pages(client, keys.jobs):
        run("jobs", "", page)
    for queue in _suffixes(client, keys, "ready"):
        for page in _zset_pages(client, keys.ready(queue)):
            run("ready", queue, page)
    for page in _zset_pages(client, keys.scheduled):
        run("scheduled", "", page)
    for page in _zset_pages(client, keys.expiry):
        run("expiry", "", page)
    for worker in _suffixes(client, keys, "inflight"):
        for page in _pages(client.sscan_iter(keys.inflight(worker), count=PAGE)):
            run("inflight", worker, page)
    for mode, kind in (("attempts", "attempts"), ("logs", "logs"), ("hash", "job")):
        for page in _pages(_suffixes(client, keys, kind)):
            run(mode, "", page)
    found.extend(_odd_counts(client, keys))
    triples = {
        (found[i], found[i + 1], found[i + 2]): None for i in range(0, len(found), 3)
    }  # dict: ordered and deduplicated (paging may show an item twice)
    return [IntegrityProblem(kind, job_id or None, detail) for kind, job_id, detail in triples]
