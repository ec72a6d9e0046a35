"""The dashboard's pages, as functions from plain data to HTML (no I/O here).

Views fetch from the backend and call these; keeping them pure makes every page easy to
test and keeps the escaping rules in one reviewable place (see :mod:`conveyor.web.html`).

Example:
    >>> "No workers" in workers_page([], now=0.0, ttl=30.0)
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from urllib.parse import quote

from conveyor import rowtext
from conveyor.backends.base import AttemptRecord, JobLogRecord, JobRecord, QueueStats, WorkerInfo
from conveyor.headers import decode as decode_headers
from conveyor.secrets import mask_payload
from conveyor.states import JobState
from conveyor.web.html import (
    ago,
    badge,
    bar_chart,
    duration,
    esc,
    post_button,
    sparkline,
    table,
    url,
    utc,
)
from conveyor.web.query import ACTION_STATES, JobQuery, Page, Sort, action_states, bulk_actions
from conveyor.web.throughput import CHART_STATES, History

STATES = [s.value for s in JobState]
ACTION_LABELS = {"retry": "Retry", "cancel": "Cancel", "delete": "Delete"}
#: Longest error message shown in the jobs table (the job's page shows all of it).
ERROR_CHARS = 160


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


def ago_seconds(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return '<span class="muted">-</span>'
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}m"


def args_text(payload: str) -> str:
    """Arguments as ``f(1, "x", user=42)``-style text for the table (secret arguments
    as ``"•••"``), at most
    ``rowtext.PREVIEW_CHARS`` characters; a payload too large, too deep or not of the
    ``{"args", "kwargs"}`` shape shows as (the start of) its text.

    >>> args_text('{"args": [1, "x"], "kwargs": {"user": 42}}')
    '1, "x", user=42'
    >>> len(args_text('{"args": ["' + "x" * 10_000 + '"], "kwargs": {}}'))
    200
    """
    payload = mask_payload(payload) or ""
    data = rowtext.loads(payload)
    try:
        args = [rowtext.json_text(a) for a in data["args"]]
        kwargs = [f"{k}={rowtext.json_text(v)}" for k, v in data["kwargs"].items()]
        text = ", ".join(args + kwargs)
    except (TypeError, KeyError, AttributeError, ValueError, RecursionError):
        text = payload
    return rowtext.preview(text)


def state_badge(job: JobRecord) -> str:
    """The state badge; a row written outside the API with a state conveyor does not know
    shows that stored value, marked, instead of the ``dead`` it is treated as."""
    if job.stored_state is None:
        return badge(job.state.value)
    return (
        f'<span class="badge s-unknown" title="unknown state: never claimed">'
        f"{esc(rowtext.preview(job.stored_state, 40))}?</span>"
    )


def problems_note(job: JobRecord) -> str:
    """A row that decoding had to repair says so (the job page, above its fields)."""
    if not job.problems:
        return ""
    items = "".join(f"<li>{esc(rowtext.preview(p))}</li>" for p in job.problems)
    return (
        '<section class="failure"><h2>Odd row (written outside conveyor\'s API)</h2>'
        f"<ul>{items}</ul></section>"
    )


def error_parts(text: str | None) -> tuple[str, str] | None:
    """(type, message) of a stored error JSON; the raw text as the message otherwise."""
    if not text:
        return None
    err = rowtext.loads(text)
    if not isinstance(err, dict):
        return "", rowtext.preview(text, 2000)
    return str(err.get("type") or ""), str(err.get("message") or "")


def shows_error(job: JobRecord) -> bool:
    """A failed (retrying) or dead job: its error is what the user came to see. A
    succeeded job may still carry an earlier attempt's error; that one is history."""
    return bool(job.error) and job.state is not JobState.SUCCEEDED


def error_cell(job: JobRecord) -> str:
    parts = error_parts(job.error) if shows_error(job) else None
    if parts is None:
        return '<span class="muted">-</span>'
    kind, message = parts
    short = message if len(message) <= ERROR_CHARS else message[: ERROR_CHARS - 1] + "…"
    whole = f"{kind}: {message}" if kind else message
    head = f"<strong>{esc(kind)}</strong>: " if kind else ""
    return f'<span class="err" title="{esc(whole[:2000])}">{head}{esc(short)}</span>'


#: The jobs table's columns: (header, sort column or None).
JOB_COLUMNS: tuple[tuple[str, str | None], ...] = (
    ("id", None),
    ("task", "task"),
    ("queue", "queue"),
    ("state", "state"),
    ("attempt", "attempt"),
    ("arguments", None),
    ("error", None),
    ("created", "created"),
    ("finished", "finished"),
)


def sort_link(label: str, column: str | None, query: JobQuery, sort: Sort, limit: int) -> str:
    """A header cell: a link that sorts by its column (the other way when it already
    does), marked with the current direction."""
    if column is None:
        return esc(label)
    target = sort.toggled(column)
    on = sort.column == column
    arrow = (" ▼" if sort.descending else " ▲") if on else ""
    order = "descending" if target.descending else "ascending"
    href = url("/jobs", {**query.to_params(), **target.to_params(), "limit": str(limit)})
    return (
        f'<a class="sort{" on" if on else ""}" href="{href}" '
        f'title="sort by {esc(label)}, {order}">{esc(label)}{arrow}</a>'
    )


def jobs_page(
    query: JobQuery,
    page: Page,
    *,
    sort: Sort,
    queues: Sequence[str],
    paged: bool,
    limit: int,
    actions: bool = True,
) -> str:
    """``paged``: this is not the first page (the request had ``after`` or ``offset``);
    ``actions``: offer the bulk actions (not to a viewer)."""

    def select(name: str, options: Sequence[str], current: str | None) -> str:
        opts = '<option value="">any</option>' + "".join(
            f"<option{' selected' if o == current else ''}>{esc(o)}</option>" for o in options
        )
        return f'<label>{name}<select name="{name}">{opts}</select></label>'

    # The sort rides along as hidden fields, so filtering keeps the order.
    keep_sort = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
        for k, v in sort.to_params().items()
    )
    form = (
        '<form class="filters" method="get" action="/jobs">'
        + select(
            "queue", sorted(set(queues) | ({query.queue} if query.queue else set())), query.queue
        )
        + select("state", STATES, query.state.value if query.state else None)
        + f'<label>task<input name="task" value="{esc(query.task)}" placeholder="module.function"></label>'
        + f'<label>search arguments<input name="q" value="{esc(query.search)}" placeholder="text"></label>'
        + f'<label>where<input name="where" value="{esc(query.where)}" placeholder="kwargs.user_id=42; args.0=7"></label>'
        + keep_sort
        + '<button class="btn primary" type="submit">Filter</button>'
        + ('<a class="btn" href="/jobs">Clear</a>' if not query.is_empty else "")
        + "</form>"
        + (
            f'<p class="error">where ignored: {esc(query.where_error)}</p>'
            if query.where_error
            else ""
        )
    )
    with_errors = query.state is JobState.DEAD or any(shows_error(j) for j in page.jobs)
    columns = [c for c in JOB_COLUMNS if c[0] != "error" or with_errors]
    rows = []
    for j in page.jobs:
        cells = {
            "id": f'<a class="mono" href="/jobs/{esc(j.id)}">{esc(j.id)}</a>',
            "task": f'<span class="mono">{esc(rowtext.preview(j.task))}</span>',
            "queue": esc(rowtext.preview(j.queue)),
            "state": state_badge(j),
            "attempt": f"{j.attempt}/{j.max_attempts}",
            "arguments": _args_cell(j),
            "error": error_cell(j),
            "created": ago(j.created_at),
            "finished": ago(j.finished_at),
        }
        rows.append([cells[name] for name, _ in columns])
    bulk = " ".join(
        f'<a class="btn{" danger" if a == "delete" else ""}" '
        f'href="{url("/jobs/bulk", {**query.to_params(), "action": a})}">'
        f"{ACTION_LABELS[a]} all matching</a>"
        for a in (bulk_actions(query) if actions else ())
    )
    here = {**query.to_params(), **sort.to_params(), "limit": str(limit)}
    nav = []
    if paged:
        nav.append(f'<a class="btn" href="{url("/jobs", here)}">« First page</a>')
    if page.next_after:
        nav.append(
            f'<a class="btn" href="{url("/jobs", {**here, "after": page.next_after})}">Next page »</a>'
        )
    if page.next_offset is not None:
        nav.append(
            f'<a class="btn" href="{url("/jobs", {**here, "offset": str(page.next_offset)})}">Next page »</a>'
        )
    scan = ""
    if page.truncated:
        scan = (
            f" · sorted only the newest {page.scanned} jobs these filters select; narrow them"
            if not sort.by_id
            else f" · search scanned {page.scanned} jobs and stopped; narrow the filters or go on"
        )
    order = (
        "newest first"
        if sort == Sort()
        else f"by {sort.column}, " + ("descending" if sort.descending else "ascending")
    )
    return (
        "<h1>Jobs</h1>"
        + form
        + f'<div class="bar"><span>{len(page.jobs)} shown, {esc(order)}{esc(scan)}</span>{bulk}</div>'
        + table(
            [name for name, _ in columns],
            rows,
            empty="No jobs match these filters.",
            cls="jobs",
            head_html=[sort_link(name, col, query, sort, limit) for name, col in columns],
        )
        + f'<div class="bar">{"".join(nav)}</div>'
    )


def _args_cell(job: JobRecord) -> str:
    """The arguments cell: one bounded preview (shown, and whole in the tooltip only when
    it was not cut), a link to the raw payload when it was."""
    text = args_text(job.payload)
    cell = f'<span class="args mono" title="{esc(text)}">{esc(text)}</span>'
    if not text.endswith("…"):
        return cell
    size = rowtext.size(job.payload) if len(job.payload) < 4 * SHOW_CHARS else None
    label = f"whole ({size:,} bytes)" if size is not None else "whole"
    return cell + f' <a class="muted" href="/jobs/{esc(job.id)}/payload">{label}</a>'


#: Most characters of a payload, result or error the job page shows; the rest is
#: behind the raw link (``/jobs/{id}/payload``) or ``conveyor job ID --payload``.
SHOW_CHARS = 20_000


def _pretty(text: str | None, raw_link: str | None = None) -> str:
    """A stored JSON value, indented, at most SHOW_CHARS characters; text that is too
    large, too deep or not JSON is shown as text, cut with a note giving its size."""
    if text is None:
        return '<span class="muted">none</span>'
    value = rowtext.loads(text, limit=SHOW_CHARS) if len(text) <= SHOW_CHARS else None
    shown = rowtext.dumps(value, indent=2) if value is not None or text.strip() == "null" else None
    if shown is None or len(shown) > SHOW_CHARS:
        shown = text
    if len(shown) <= SHOW_CHARS:
        return f"<pre>{esc(shown)}</pre>"
    link = f' <a href="{esc(raw_link)}">Download the whole</a>.' if raw_link else ""
    note = (
        f'<p class="muted">{rowtext.size(text):,} bytes: showing the first '
        f"{SHOW_CHARS:,} characters.{link}</p>"
    )
    return f"<pre>{esc(shown[:SHOW_CHARS])}…</pre>{note}"


def _error(text: str | None, *, folded: bool = False) -> str:
    """An error JSON {"type","message","traceback"} as a heading and a traceback block
    (``folded``: behind a click, for attempt rows that repeat the job's last error)."""
    if not text:
        return '<span class="muted">none</span>'
    err = rowtext.loads(text)
    if not isinstance(err, dict):
        return _pretty(text)
    kind, message = (rowtext.preview(str(err.get(k)), SHOW_CHARS) for k in ("type", "message"))
    head = f"<div><strong>{esc(kind)}</strong>: {esc(message)}</div>"
    tb = err.get("traceback")
    tb = rowtext.preview(str(tb), SHOW_CHARS) if tb else None
    if not tb:
        return head
    block = f'<pre class="traceback">{esc(tb)}</pre>'
    return head + (f"<details><summary>traceback</summary>{block}</details>" if folded else block)


def job_actions(job: JobRecord, csrf: str) -> str:
    out = []
    for action, label in ACTION_LABELS.items():
        if job.stored_state is not None and action != "delete":
            continue  # a state conveyor does not know: only deleting it is defined
        if job.state in ACTION_STATES[action]:
            out.append(
                post_button(
                    f"/jobs/{job.id}/{action}",
                    label,
                    csrf,
                    cls="danger" if action == "delete" else "",
                    confirm=f"Delete job {job.id}?" if action == "delete" else None,
                )
            )
    return "".join(out)


def _headers_cell(job: JobRecord) -> str:
    """The job's headers, one ``key: value`` per line (escaped); ``-`` for none."""
    shown = decode_headers(job.headers)
    if not shown:
        return '<span class="muted">-</span>'
    return "<br>".join(
        f'<span class="mono">{esc(k)}: {esc(v)}</span>' for k, v in sorted(shown.items())
    )


def job_page(
    job: JobRecord,
    attempts: Sequence[AttemptRecord],
    logs: Sequence[JobLogRecord] | None,
    csrf: str,
) -> str:
    fields = [
        ("task", f'<span class="mono">{esc(job.task)}</span>'),
        ("queue", f'<a href="{url("/jobs", {"queue": job.queue})}">{esc(job.queue)}</a>'),
        ("state", state_badge(job) + (" (cancel requested)" if job.cancel_requested else "")),
        ("attempt", f"{job.attempt} of {job.max_attempts}"),
        ("priority", esc(job.priority)),
        ("rescues", esc(job.rescues)),
        ("created", f"{utc(job.created_at)} ({ago(job.created_at)})"),
        ("run at", utc(job.run_at)),
        ("started", utc(job.started_at)),
        ("finished", utc(job.finished_at)),
        ("worker", esc(job.worker_id or "-")),
        ("timeout", esc(job.timeout or "-")),
        ("lease", f"{job.lease:g} s"),
        ("reason", esc(job.reason or "-")),
        ("headers", _headers_cell(job)),
    ]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in fields)
    att_rows = [
        [
            str(a.attempt),
            f'<span class="mono">{esc(a.worker_id or "-")}</span>',
            utc(a.started_at),
            duration(a.started_at, a.finished_at),
            badge(a.outcome),
            _error(a.error, folded=True) if a.error else '<span class="muted">-</span>',
        ]
        for a in attempts
    ]
    html_logs = ""
    if logs is not None:
        log_rows = [
            [
                utc(r.ts),
                esc(r.level),
                esc(r.logger),
                f'<span class="mono">{esc(r.message)}</span>',
            ]
            for r in logs
        ]
        html_logs = "<h2>Logs</h2>" + table(
            ["time", "level", "logger", "message"], log_rows, empty="No log records."
        )
    # A failed or dead job's error is why the user opened it: first, above the fields.
    failure = ""
    history = f"<h2>Error</h2>{_error(job.error)}"
    if shows_error(job):
        title = {
            JobState.DEAD: "Error",
            JobState.CANCELLED: "Last error (then cancelled)",
            JobState.RUNNING: "Last error (running again now)",
        }.get(job.state, "Last error (will retry)")
        failure = f'<section class="failure"><h2>{esc(title)}</h2>{_error(job.error)}</section>'
        history = ""
    elif job.error:
        history = f"<h2>Error of an earlier attempt</h2>{_error(job.error, folded=True)}"
    return (
        f'<h1>Job <span class="mono">{esc(job.id)}</span> {state_badge(job)}</h1>'
        f'<div class="bar">{job_actions(job, csrf)}</div>'
        f"{problems_note(job)}"
        f"{failure}"
        f'<dl class="fields">{dl}</dl>'
        f"<h2>Arguments</h2>{_pretty(mask_payload(job.payload) or '', f'/jobs/{job.id}/payload')}"
        f'<p><a class="muted" href="/jobs/{esc(job.id)}/payload">raw payload</a></p>'
        f"<h2>Result</h2>{_pretty(job.result)}"
        f"{history}"
        "<h2>Attempts</h2>"
        + table(
            ["#", "worker", "started", "took", "outcome", "error"],
            att_rows,
            empty="Not attempted yet.",
            cls="attempts",
        )
        + html_logs
    )


def _row_problems(problems: Sequence[str]) -> str:
    """What is wrong with a row written around the API, under its id ('' for none)."""
    if not problems:
        return ""
    return f'<br><span class="muted">{esc("; ".join(problems))}</span>'


def workers_page(workers: Sequence[WorkerInfo], *, now: float, ttl: float) -> str:
    rows = []
    for w in workers:
        age = now - w.heartbeat_at
        health = badge("running") if age <= ttl else badge("dead")
        rows.append(
            [
                f'<span class="mono">{esc(w.id)}</span>' + _row_problems(w.problems),
                esc(w.host),
                esc(w.pid),
                esc(w.pool),
                f"{w.running}/{w.concurrency}",
                esc(", ".join(w.queues)),
                ago(w.started_at, now),
                f"{ago(w.heartbeat_at, now)} {health}",
                ago(w.last_fetch_at, now),
            ]
        )
    return "<h1>Workers</h1>" + table(
        ["id", "host", "pid", "pool", "running", "queues", "started", "heartbeat", "last fetch"],
        rows,
        empty="No workers are registered.",
        cls="workers",
    )


def confirm_page(action: str, query: JobQuery, count: int, csrf: str) -> str:
    label = ACTION_LABELS[action]
    described = ", ".join(f"{k} = {v}" for k, v in query.to_params().items()) or "all jobs"
    hidden = {**query.to_params(), "action": action, "expected": str(count)}
    states = ", ".join(s.value for s in action_states(action, query))
    note = f"It acts only on {states} jobs."
    if action == "delete":
        note += " Deleted jobs and their attempts are gone for good."
    button = (
        post_button(
            "/jobs/bulk",
            f"{label} {count} jobs",
            csrf,
            hidden=hidden,
            cls="danger" if action == "delete" else "primary",
        )
        if count
        else "<p>Nothing to do.</p>"
    )
    return (
        f"<h1>{esc(label)} all matching jobs?</h1>"
        f'<p><strong>{count}</strong> jobs match <span class="mono">{esc(described)}</span>. '
        f"{esc(note)}</p>"
        f'<div class="bar">{button}<a class="btn" href="{url("/jobs", query.to_params())}">Back</a></div>'
    )


def not_applicable_page(action: str, query: JobQuery) -> str:
    """What a bulk action that does not apply to the filtered state answers (HTTP 409)."""
    state = query.state.value if query.state else "these"
    allowed = ", ".join(sorted(s.value for s in ACTION_STATES[action]))
    return (
        f"<h1>{esc(ACTION_LABELS[action])} does not apply to {esc(state)} jobs</h1>"
        f"<p>{esc(ACTION_LABELS[action])} applies to {esc(allowed)} jobs.</p>"
        f'<p><a class="btn" href="{url("/jobs", query.to_params())}">Back</a></p>'
    )
