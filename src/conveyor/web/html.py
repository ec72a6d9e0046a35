"""HTML building blocks: escaping, the page layout, badges, tables, forms, sparklines.

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
import time
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlencode

from conveyor.web.security import CSRF_FIELD


def esc(value: object) -> str:
    """Escape any value for HTML text and quoted attributes."""
    return html.escape("" if value is None else str(value), quote=True)


def url(path: str, params: Mapping[str, str] | None = None) -> str:
    """A link with an encoded query string (already escaped for an attribute)."""
    query = urlencode({k: v for k, v in (params or {}).items() if v})
    return esc(f"{path}?{query}" if query else path)


def badge(state: str) -> str:
    return f'<span class="badge s-{esc(state)}">{esc(state)}</span>'


def ago(ts: float | None, now: float | None = None) -> str:
    """'4.2s ago' with the UTC time as a tooltip; '-' for None."""
    if ts is None:
        return "-"
    seconds = max(0.0, (now or time.time()) - ts)
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
    return (
        datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        + "Z"
    )


def duration(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return "-"
    d = end - start
    return f"{d * 1000:.0f} ms" if d < 1 else f"{d:.2f} s"


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], *, empty: str, cls: str = ""
) -> str:
    """A table of already-rendered cells (call :func:`esc` on raw values first)."""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        body = f'<tr><td class="empty" colspan="{len(headers)}">{esc(empty)}</td></tr>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
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
    """A one-button POST form carrying the CSRF field (and optional hidden fields)."""
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
    """An inline SVG line of ``values`` (scaled to their max); a flat line when empty."""
    if len(values) < 2:
        return (
            f'<svg class="spark" width="{width}" height="{height}" role="img" '
            f'aria-label="{esc(label)}: collecting samples"><text x="4" y="{height // 2 + 4}">'
            "collecting samples…</text></svg>"
        )
    top = max(values) or 1.0
    step = width / (len(values) - 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v / top) * (height - 4):.1f}" for i, v in enumerate(values)
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(label)}"><polyline points="{points}"/></svg>'
    )


NAV = (("/", "Overview"), ("/jobs", "Jobs"), ("/workers", "Workers"))


def layout(
    title: str,
    body: str,
    *,
    active: str,
    store: str,
    refresh: bool = False,
    flash: str | None = None,
) -> str:
    """The page around ``body``; ``refresh`` makes the page re-read itself every 5 s."""
    nav = "".join(
        f'<a href="{p}" class="{"on" if p == active else ""}">{esc(n)}</a>' for p, n in NAV
    )
    note = f'<div class="flash">{esc(flash)}</div>' if flash else ""
    attr = ' data-refresh="5000"' if refresh else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)} · conveyor</title>
<link rel="stylesheet" href="/static/dashboard.css">
<script src="/static/dashboard.js" defer></script>
</head><body>
<header><span class="brand">conveyor</span><nav>{nav}</nav>
<span class="store" title="store">{esc(store)}</span></header>
<main id="main"{attr}>{note}{body}</main>
</body></html>"""
