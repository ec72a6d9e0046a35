"""The dashboard's overview page: totals per state, the throughput chart, run and wait
times per task, and the queues with the largest backlog (all of them: ``/queues``).

Example:
    >>> from conveyor.web.throughput import History
    >>> html = overview_page([], History([0.0], 60, []), workers=0, paused=set(), csrf="t")
    >>> "Throughput" in html
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor.backends.base import QueueStats
from conveyor.backends.records import count_text
from conveyor.web.html import badge, bar_chart, esc, url
from conveyor.web.job_cells import STATES
from conveyor.web.queues_page import CAPPED_TITLE, overview_queues
from conveyor.web.throughput import CHART_STATES, History


def overview_page(
    stats: Sequence[QueueStats],
    history: History,
    *,
    workers: int,
    paused: set[str],
    csrf: str,
    durations: str = "",
) -> str:
    totals = {s: sum(q.counts.get(s, 0) for q in stats) for s in STATES}
    # a total over a capped count is a lower bound too: "1000+"
    capped = frozenset(s for q in stats for s in q.capped)
    cards = "".join(
        f'<a class="card" href="{url("/jobs", {"state": s})}"'
        f"{CAPPED_TITLE if s in capped else ''}>"
        f'<div class="n">{count_text(totals, capped, s)}</div>'
        f'<div class="l">{badge(s)}</div></a>'
        for s in STATES
    )
    cards += (
        f'<a class="card" href="/workers"><div class="n">{workers}</div>'
        '<div class="l">workers</div></a>'
    )
    return (
        "<h1>Overview</h1>"
        f'<div class="cards">{cards}</div>'
        + throughput_section(history)
        + durations
        + overview_queues(stats, history, paused=paused, csrf=csrf)
    )


def throughput_section(history: History) -> str:
    """The chart of the last hour by minute, stacked by finished state, with a legend."""
    by_state = history.by_state()
    minutes = len(history.starts)
    chart = bar_chart(
        history.starts,
        [(s.value, by_state[s]) for s in CHART_STATES],
        x_label="time (UTC), one bar per "
        + ("minute" if history.bucket_s == 60 else f"{history.bucket_s} s"),
        y_label="jobs/min",
    )
    totals = history.totals()
    last_full = totals[-2] if len(totals) > 1 else 0
    legend = "".join(
        f'<span class="key"><span class="swatch {s.value}"></span>{esc(s.value)} '
        f"<strong>{sum(by_state[s])}</strong></span>"
        for s in CHART_STATES
    )
    return (
        f'<h2>Throughput <span class="muted">(jobs finished per minute, last {minutes} '
        f"minutes, from the store — last full minute: {last_full} jobs/min)</span></h2>"
        f'<div class="chartbox">{chart}<div class="legend">{legend}</div></div>'
    )
