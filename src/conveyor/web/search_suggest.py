"""Autocomplete of the dashboard's search box (``GET /api/search/suggest?q=...``): the
query typed so far, its last piece completed: a field (``task:``, ``queue:``,
``state:``, ``error:``, ``args.NAME:``, ``header.NAME:`` ...) or, after one, a frequent
value from the store: task names and queues (the registered ones and those of the
newest jobs), states, error types (of the newest dead and failed jobs), argument names
(the registered tasks' parameters) and header names (the newest jobs'). Read-only: a
viewer's token may ask. The values are
read from a sample, :data:`SAMPLE` newest jobs, whatever the store's size (a page read
by the primary key, not a count over every job), and kept :data:`KEEP` seconds.

Example:
    >>> complete("time state:de", Values(states=["dead", "queued"]))
    ['time state:dead']
    >>> complete("ta", Values())[:1]
    ['task:']
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from conveyor.app import App
from conveyor.backends.base import (
    OPERATOR_COUNT_CAP,
    OPERATOR_EXACT_UP_TO,
    JobListParams,
    JobRecord,
    QueueStatsParams,
)
from conveyor.states import JobState

#: Newest jobs the frequent values are read from.
SAMPLE = 1000
#: Seconds the values are kept before they are read again.
KEEP = 30.0
#: Suggestions at most.
MAX = 12
#: The fields the box completes, in the order offered.
FIELDS = (
    "task:",
    "queue:",
    "state:",
    "error:",
    "args.",
    "header.",
    "args:",
    "result:",
    "headers:",
    "logs:",
    "finished:<",
    "created:<",
)


@dataclass
class Values:
    """What may follow each field, most frequent first."""

    tasks: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=lambda: [s.value for s in JobState])
    errors: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)


def complete(text: str, values: Values) -> list[str]:
    """Whole queries: ``text`` with its last piece completed."""
    head, _, last = text.rpartition(" ")
    prefix = f"{head} " if head else ""
    negated = "-" if last.startswith("-") else ""
    last = last.removeprefix("-")
    name, colon, typed = last.partition(":")
    if not colon:
        if "." in name:  # args.NAME / header.NAME
            root, _, part = name.partition(".")
            names = values.args if root == "args" else values.headers if root == "header" else []
            found = [f"{root}.{n}:" for n in names if n.startswith(part)]
        else:
            found = [f for f in FIELDS if f.startswith(name.lower())]
        return [prefix + negated + f for f in found][:MAX]
    options = {
        "task": values.tasks,
        "queue": values.queues,
        "state": values.states,
        "error": values.errors,
        "finished": ["<1h", "<24h", ">7d"],
        "created": ["<15m", "<1h", ">7d"],
    }.get(name, [])
    picked = [o for o in options if o.lower().startswith(typed.lower()) and o != typed]
    return [f"{prefix}{negated}{name}:{_quoted(o)}" for o in picked][:MAX]


def _quoted(value: str) -> str:
    return f'"{value}"' if " " in value else value


class Suggester:
    """The values of one dashboard's store, read at most every :data:`KEEP` seconds."""

    def __init__(self, app: App) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._values: Values | None = None
        self._at = 0.0

    def suggest(self, text: str) -> list[str]:
        return complete(text, self.values())

    def values(self) -> Values:
        with self._lock:
            if self._values is None or time.monotonic() - self._at > KEEP:
                self._values, self._at = self._read(), time.monotonic()
            return self._values

    def _read(self) -> Values:
        backend = self._app.backend
        newest = backend.job_list(JobListParams(limit=SAMPLE, descending=True))
        failed = [j for j in newest if j.error]  # dead, or retrying after an error
        tasks = _ranked([j.task for j in newest], self._app.tasks)
        # names only: the capped read finds them without counting every job
        known = backend.queue_stats(
            QueueStatsParams(cap=OPERATOR_COUNT_CAP, exact_up_to=OPERATOR_EXACT_UP_TO)
        )
        queues = _ranked([j.queue for j in newest], [s.queue for s in known])
        args: list[str] = []
        for task in self._app.tasks.values():
            try:
                args += [p for p in inspect.signature(task.fn).parameters if p not in args]
            except (TypeError, ValueError):  # a callable without a signature
                continue
        return Values(
            tasks=tasks,
            queues=queues,
            errors=_ranked([t for t in map(_error_type, failed) if t], ()),
            args=args,
            headers=_ranked([k for j in newest for k in _header_names(j)], ()),
        )


def _ranked(seen: Iterable[str], known: Iterable[str]) -> list[str]:
    """Most frequent first, then the known ones never seen."""
    counts = Counter(seen)
    ranked = [name for name, _ in counts.most_common()]
    return ranked + sorted(set(known) - set(counts))


def _error_type(job: JobRecord) -> str | None:
    try:
        data = json.loads(job.error or "")
    except ValueError:
        return None
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None


def _header_names(job: JobRecord) -> list[str]:
    try:
        data = json.loads(job.headers or "{}")
    except ValueError:
        return []
    return [k for k in data if isinstance(k, str)] if isinstance(data, dict) else []


async def suggest_view(request: Request) -> Response:
    """``GET /api/search/suggest?q=TEXT``: ``{"suggestions": [whole queries]}``."""
    from conveyor.web.views import dashboard  # the app's state (views imports this)

    state = request.app.state  # one per dashboard (two made at once: harmless)
    suggester = getattr(state, "search_suggester", None)
    if suggester is None:
        suggester = state.search_suggester = Suggester(dashboard(request).conveyor_app)
    text = (request.query_params.get("q") or "")[:500]
    found = await run_in_threadpool(suggester.suggest, text)
    return JSONResponse({"suggestions": found}, headers={"Cache-Control": "no-store"})
