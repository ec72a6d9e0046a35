"""The queues table, bounded whatever the number of queues: the overview shows the
:data:`OVERVIEW_QUEUES` queues with the largest backlog and links to ``/queues``, which
pages through all of them, :data:`PAGE` at a time, in the same order. (With 10,000
queues the overview was a 14.6 MB page listing every one.)

A queue's backlog is its jobs that have not ended: waiting, scheduled, queued and
running. Ties go by name, so the order is stable between refreshes.

Example:
    >>> from conveyor.backends.base import QueueStats
    >>> stats = [QueueStats("b", {"queued": 2}, 1.0)]
    >>> html = queues_page(stats, History([0.0], 60, []), page=1, paused=set(), csrf="t")
    >>> "page 1 of 1" in html
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from conveyor import rowtext
from conveyor.backends.base import (
    OPERATOR_COUNT_CAP,
    OPERATOR_EXACT_UP_TO,
    Backend,
    QueueStats,
    QueueStatsParams,
)
from conveyor.backends.records import by_backlog, count_text
from conveyor.web.html import badge, esc, post_button, sparkline, table, url
from conveyor.web.job_cells import STATES, ago_seconds
from conveyor.web.throughput import History

#: Queues on the overview (the rest are on ``/queues``).
OVERVIEW_QUEUES = 20
#: Queues per page of ``/queues``.
PAGE = 100
#: Queues in the jobs page's queue filter (largest backlog first; the others are
#: reached from ``/queues``).
QUEUE_CHOICES = 200
HEADERS = ["queue", *STATES, "oldest ready", "finished/min (1 h)", ""]
#: The tooltip of a capped count ("1000+": the store stopped counting there).
CAPPED_TITLE = f' title="at least this many: counted up to {OPERATOR_COUNT_CAP}"'


def capped_note(stats: Sequence[QueueStats]) -> str:
    """The line that explains "n+" under a table that shows one (else nothing).

    >>> capped_note([QueueStats("q", {"queued": 1000}, None, frozenset({"queued"}))])[:40]
    '<p class="muted capped">n+: at least n ('
    """
    if not any(q.capped for q in stats):
        return ""
    return (
        f'<p class="muted capped">n+: at least n (this store counts up to '
        f"{OPERATOR_COUNT_CAP} jobs per queue and state; exact counts: "
        "<code>conveyor queue-counts on</code>)</p>"
    )


def stats_and_paused(backend: Backend) -> tuple[list[QueueStats], set[str]]:
    """The queues with jobs and the paused queues' names, from one ``queue_list`` (its
    counts are ``queue_stats``': reading both would count twice)."""
    found = backend.queue_list(
        QueueStatsParams(cap=OPERATOR_COUNT_CAP, exact_up_to=OPERATOR_EXACT_UP_TO)
    )
    stats = [QueueStats(q.queue, q.counts, q.oldest_ready_age, q.capped) for q in found if q.counts]
    return stats, {q.queue for q in found if q.paused}


def queues_table(
    shown: Sequence[QueueStats], history: History, *, paused: set[str], csrf: str
) -> str:
    """One row per queue: counts per state (links to its jobs), oldest ready job, the
    last hour's finished jobs per minute, and pause/resume."""
    series = history.by_queue({q.queue for q in shown})
    rows = []
    for q in shown:
        cells = [
            f'<a href="{url("/jobs", {"queue": q.queue})}">{esc(q.queue)}</a>'
            + (" " + badge("paused") if q.queue in paused else "")
        ]
        for s in STATES:
            n = q.counts.get(s, 0)
            cells.append(
                f'<a href="{url("/jobs", {"queue": q.queue, "state": s})}"'
                f"{CAPPED_TITLE if s in q.capped else ''}>{count_text(q.counts, q.capped, s)}</a>"
                if n
                else '<span class="muted">0</span>'
            )
        cells.append(ago_seconds(q.oldest_ready_age))
        cells.append(
            sparkline(
                series[q.queue],
                width=140,
                height=24,
                label=f"{q.queue}: jobs finished per minute, last hour",
            )
        )
        paused_now = q.queue in paused
        cells.append(
            post_button(
                f"/queues/{quote(rowtext.printable(q.queue), safe='')}/"
                f"{'resume' if paused_now else 'pause'}",
                "Resume" if paused_now else "Pause",
                csrf,
            )
        )
        rows.append(cells)
    return table(HEADERS, rows, empty="No jobs yet.", cls="queues") + capped_note(shown)


def overview_queues(
    stats: Sequence[QueueStats], history: History, *, paused: set[str], csrf: str
) -> str:
    """The overview's queues section: the top :data:`OVERVIEW_QUEUES` by backlog."""
    shown = by_backlog(stats)[:OVERVIEW_QUEUES]
    more = (
        f'<p class="muted">The {len(shown)} queues with the largest backlog of '
        f'{len(stats):,}. <a href="/queues">All queues</a></p>'
        if len(stats) > len(shown)
        else ""
    )
    return "<h2>Queues</h2>" + more + queues_table(shown, history, paused=paused, csrf=csrf)


def queues_page(
    stats: Sequence[QueueStats], history: History, *, page: int, paused: set[str], csrf: str
) -> str:
    """``/queues?page=N``: every queue, :data:`PAGE` a page, largest backlog first."""
    pages = max(1, -(-len(stats) // PAGE))
    page = min(max(1, page), pages)
    shown = by_backlog(stats)[(page - 1) * PAGE : page * PAGE]
    nav = []
    if page > 1:
        nav.append(f'<a class="btn" href="{url("/queues", {"page": str(page - 1)})}">Previous</a>')
    if page < pages:
        nav.append(f'<a class="btn" href="{url("/queues", {"page": str(page + 1)})}">Next</a>')
    return (
        f'<h1>Queues <span class="muted">({len(stats):,}, largest backlog first; '
        f"page {page} of {pages})</span></h1>"
        + queues_table(shown, history, paused=paused, csrf=csrf)
        + f'<div class="bar">{"".join(nav)}</div>'
    )
