"""The dashboard's overview page: totals per state, the queues table, the throughput chart.

Example:
    >>> from conveyor.web.throughput import History
    >>> html = overview_page([], History([0.0], 60, []), workers=0, paused=set(), csrf="t")
    >>> "Throughput" in html
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from conveyor import rowtext
from conveyor.backends.base import QueueStats
from conveyor.web.html import (
    badge,
    bar_chart,
    esc,
    post_button,
    sparkline,
    table,
    url,
)
from conveyor.web.job_cells import (
    STATES,
    ago_seconds,
)
from conveyor.web.throughput import CHART_STATES, History


def overview_page(
    stats: Sequence[QueueStats],
    history: History,
    *,
    workers: int,
    paused: set[str],
    csrf: str,
) -> str:
    totals = {s: sum(q.counts.get(s, 0) for q in stats) for s in STATES}
    cards = "".join(
        f'<a class="card" href="{url("/jobs", {"state": s})}"><div class="n">{totals[s]}</div>'
        f'<div class="l">{badge(s)}</div></a>'
        for s in STATES
    )
    cards += (
        f'<a class="card" href="/workers"><div class="n">{workers}</div>'
        '<div class="l">workers</div></a>'
    )
    rows = []
    for q in stats:
        cells = [
            f'<a href="{url("/jobs", {"queue": q.queue})}">{esc(q.queue)}</a>'
            + (" " + badge("paused") if q.queue in paused else "")
        ]
        for s in STATES:
            n = q.counts.get(s, 0)
            cells.append(
                f'<a href="{url("/jobs", {"queue": q.queue, "state": s})}">{n}</a>'
                if n
                else '<span class="muted">0</span>'
            )
        cells.append(ago_seconds(q.oldest_ready_age))
        cells.append(
            sparkline(
                history.totals(q.queue),
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
    headers = ["queue", *STATES, "oldest ready", "finished/min (1 h)", ""]
    return (
        "<h1>Overview</h1>"
        f'<div class="cards">{cards}</div>'
        + throughput_section(history)
        + "<h2>Queues</h2>"
        + table(headers, rows, empty="No jobs yet.", cls="queues")
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
