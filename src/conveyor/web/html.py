"""HTML building blocks: escaping, the page layout, badges, tables, forms, charts.

No template engine: pages are small and a missing escape is the bug to fear most, so
every value goes through :func:`esc` (or a helper that calls it) and helpers return
finished HTML strings. Anything a job carries (task, arguments, errors) is user data.

Example:
    >>> badge("dead")
    '<span class="badge s-dead">dead</span>'
    >>> esc("<script>")
    '&lt;script&gt;'
"""

from __future__ import annotations

import datetime
import html
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlencode

from conveyor.rowtext import printable
from conveyor.web.security import CSRF_FIELD, NO_ACTIONS


def esc(value: object) -> str:
    """Escape any value for HTML text and quoted attributes (a lone surrogate, which no
    response could encode, becomes U+FFFD)."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


def url(path: str, params: Mapping[str, str] | None = None) -> str:
    """A link with an encoded query string (already escaped for an attribute)."""
    query = urlencode({k: printable(v) for k, v in (params or {}).items() if v})
    return esc(f"{path}?{query}" if query else path)


def badge(state: str) -> str:
    return f'<span class="badge s-{esc(state)}">{esc(state)}</span>'


def ago(ts: float | None, now: float | None = None) -> str:
    """'4.2s ago' with the UTC time as a tooltip; '-' for None."""
    if ts is None:
        return "-"
    seconds = max(0.0, (now or time.time()) - ts)
    if not math.isfinite(seconds):  # a row written around the API: show what it holds
        return esc(utc(ts))
    if seconds < 60:
        text = f"{seconds:.1f}s"
    elif seconds < 3600:
        text = f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    elif seconds < 86400:
        text = f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"
    else:
        text = f"{int(seconds // 86400)}d{int(seconds % 86400 // 3600):02d}h"
    return f'<span title="{esc(utc(ts))}">{text} ago</span>'


def utc(ts: float | None) -> str:
    if ts is None:
        return "-"
    try:
        moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    except (ValueError, OverflowError, OSError):  # out of range (a row written by hand)
        return f"{ts!r} (not a time)"
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def duration(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return "-"
    d = end - start
    return f"{d * 1000:.0f} ms" if d < 1 else f"{d:.2f} s"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    empty: str,
    cls: str = "",
    head_html: Sequence[str] | None = None,
) -> str:
    """A table of already-rendered cells (call :func:`esc` on raw values first).

    ``head_html``: already-rendered header cells (sort links) instead of ``headers``.
    """
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        body = f'<tr><td class="empty" colspan="{len(headers)}">{esc(empty)}</td></tr>'
    cells = head_html if head_html is not None else [esc(h) for h in headers]
    head = "".join(f"<th>{c}</th>" for c in cells)
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def post_button(
    action: str,
    label: str,
    csrf: str,
    *,
    hidden: Mapping[str, str] | None = None,
    cls: str = "",
    confirm: str | None = None,
) -> str:
    """A one-button POST form carrying the CSRF field (and optional hidden fields);
    nothing for :data:`~conveyor.web.security.NO_ACTIONS` (a viewer's page).

    >>> post_button("/jobs/j1/retry", "Retry", NO_ACTIONS)
    ''
    """
    if csrf == NO_ACTIONS:
        return ""
    fields = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in (hidden or {}).items()
    )
    data = f' data-confirm="{esc(confirm)}"' if confirm else ""
    return (
        f'<form method="post" action="{esc(action)}" class="inline"{data}>'
        f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(csrf)}">{fields}'
        f'<button type="submit" class="btn {esc(cls)}">{esc(label)}</button></form>'
    )


def sparkline(
    values: Sequence[float], *, width: int = 240, height: int = 40, label: str = ""
) -> str:
    """An inline SVG line of ``values`` (scaled to their max; flat at zero when all are)."""
    top = max(values, default=0) or 1.0
    step = width / max(len(values) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v / top) * (height - 4):.1f}" for i, v in enumerate(values)
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(label)}"><title>{esc(label)}</title>'
        f'<polyline points="{points}"/></svg>'
    )


def tick_step(value: float) -> int:
    """The smallest round whole number >= ``value`` (at least 1), for axis ticks.

    >>> [tick_step(v) for v in (0, 0.75, 1.2, 7, 12, 120, 1300)]
    [1, 1, 2, 8, 15, 150, 1500]
    """
    scale = 1
    while True:
        for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8):
            step = m * scale
            if step == int(step) and step >= value:
                return int(step)
        scale *= 10


def bar_chart(
    starts: Sequence[float],
    series: Sequence[tuple[str, Sequence[int]]],
    *,
    x_label: str,
    y_label: str,
    width: int = 760,
    height: int = 220,
    tick_every: int = 10,
) -> str:
    """Stacked bars with labelled axes, as inline SVG (no script: the CSP allows none).

    ``starts[i]`` is bar i's time (epoch seconds, labelled HH:MM UTC every
    ``tick_every`` bars); ``series`` are (CSS class, values), stacked bottom up. Each bar
    carries a ``<title>`` with its numbers, which browsers show on hover. Over 60 lines
    with its example: one SVG drawn in order (grid, bars, axes, labels).

    >>> svg = bar_chart([0.0, 60.0], [("ok", [1, 3])], x_label="time", y_label="jobs/min")
    >>> svg.count('<rect class="ok"'), ">jobs/min<" in svg, ">00:00<" in svg, ">00:01<" in svg
    (2, True, True, True)
    """
    left, right, top, bottom = 48, 12, 12, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(starts)
    stacks = [sum(values[i] for _, values in series) for i in range(n)]
    step = tick_step(max(stacks, default=0) / 4)
    top_value = step * 4  # five whole-number ticks: 0, step ... 4 * step
    bar_w = plot_w / max(n, 1)
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(y_label)} by {esc(x_label)}">'
    ]
    for k in range(5):  # y grid and ticks
        y = top + plot_h - plot_h * k / 4
        text = str(step * k)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{text}</text>'
        )
    for i, start in enumerate(starts):
        x = left + i * bar_w
        y = top + plot_h
        tip = [f"{utc(start)[11:16]} UTC"]
        for cls, values in series:
            v = values[i]
            if v:
                h = plot_h * v / top_value
                y -= h
                parts.append(
                    f'<rect class="{esc(cls)}" x="{x + 0.5:.1f}" y="{y:.1f}" '
                    f'width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}"/>'
                )
            tip.append(f"{v} {cls}")
        parts.append(
            f'<rect class="hit" x="{x:.1f}" y="{top}" width="{bar_w:.1f}" height="{plot_h}">'
            f"<title>{esc(', '.join(tip))}</title></rect>"
        )
        if i % tick_every == 0 or i == n - 1:
            cx = x + bar_w / 2
            parts.append(
                f'<line class="axis" x1="{cx:.1f}" x2="{cx:.1f}" y1="{top + plot_h}" '
                f'y2="{top + plot_h + 4}"/><text class="tick" x="{cx:.1f}" '
                f'y="{top + plot_h + 16}" text-anchor="middle">{utc(start)[11:16]}</text>'
            )
    parts.append(
        f'<line class="axis" x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" '
        f'y2="{top + plot_h}"/><line class="axis" x1="{left}" x2="{left}" y1="{top}" '
        f'y2="{top + plot_h}"/>'
        f'<text class="label" x="{left + plot_w / 2:.1f}" y="{height - 4}" '
        f'text-anchor="middle">{esc(x_label)}</text>'
        f'<text class="label" x="12" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">{esc(y_label)}</text>'
    )
    if not any(stacks):
        parts.append(
            f'<text class="empty" x="{left + plot_w / 2:.1f}" y="{top + plot_h / 2:.1f}" '
            'text-anchor="middle">no jobs finished in this window</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


NAV = (
    ("/", "Overview"),
    ("/queues", "Queues"),
    ("/jobs", "Jobs"),
    ("/workers", "Workers"),
    ("/schedules", "Schedules"),
    ("/limits", "Limits"),
    ("/audit", "Audit"),
)


def layout(
    title: str,
    body: str,
    *,
    active: str,
    store: str,
    refresh: bool = False,
    flash: str | None = None,
    user: str | None = None,
) -> str:
    """The page around ``body``; ``refresh`` makes the page re-read itself every 5 s;
    ``user``: who is signed in, shown in the header (``alice (viewer)``)."""
    nav = "".join(
        f'<a href="{p}" class="{"on" if p == active else ""}">{esc(n)}</a>' for p, n in NAV
    )
    note = f'<div class="flash">{esc(flash)}</div>' if flash else ""
    attr = ' data-refresh="5000"' if refresh else ""
    who = f'<span class="user" title="signed in as">{esc(user)}</span>' if user else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)} · conveyor</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/dashboard.css">
<script src="/static/dashboard.js" defer></script>
</head><body>
<header><span class="brand">conveyor</span><nav>{nav}</nav>
<span class="store" title="store">{esc(store)}</span>{who}</header>
<main id="main"{attr}>{note}{body}</main>
</body></html>"""
