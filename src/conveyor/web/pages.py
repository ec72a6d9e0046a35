"""The dashboard's pages, as functions from plain data to HTML (no I/O here).

Views fetch from the backend and call these; keeping them pure makes every page easy to
test and keeps the escaping rules in one reviewable place (see :mod:`conveyor.web.html`).

Example:
    >>> "No workers" in workers_page([], now=0.0, ttl=30.0)
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from conveyor.backends.base import AttemptRecord, JobRecord, QueueStats, WorkerInfo
from conveyor.states import JobState
from conveyor.web.html import ago, badge, duration, esc, post_button, sparkline, table, url, utc
from conveyor.web.query import ACTION_STATES, JobQuery, Page
from conveyor.web.sampler import SampleRing

STATES = [s.value for s in JobState]
ACTION_LABELS = {"retry": "Retry", "cancel": "Cancel", "delete": "Delete"}


def overview_page(
    stats: Sequence[QueueStats],
    ring: SampleRing,
    *,
    workers: int,
    paused: set[str],
    can_pause: bool,
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
    total = ring.total_throughput()
    rate = f"{total[-1]:.2f} jobs/s" if total else "–"
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
            sparkline(ring.throughput(q.queue), width=140, height=24, label=f"{q.queue} throughput")
        )
        if can_pause:
            paused_now = q.queue in paused
            cells.append(
                post_button(
                    f"/queues/{quote(q.queue, safe='')}/{'resume' if paused_now else 'pause'}",
                    "Resume" if paused_now else "Pause",
                    csrf,
                )
            )
        rows.append(cells)
    headers = ["queue", *STATES, "oldest ready", "throughput"] + ([""] if can_pause else [])
    return (
        "<h1>Overview</h1>"
        f'<div class="cards">{cards}</div>'
        f'<h2>Throughput <span class="muted">(finished jobs/s, all queues — now {rate})</span></h2>'
        f"{sparkline(total, width=600, height=60, label='throughput, all queues')}"
        "<h2>Queues</h2>" + table(headers, rows, empty="No jobs yet.", cls="queues")
    )


def ago_seconds(seconds: float | None) -> str:
    if seconds is None:
        return '<span class="muted">-</span>'
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}m"


def args_text(payload: str) -> str:
    """Arguments as ``f(1, "x", user=42)``-style text for the table."""
    try:
        data = json.loads(payload)
        args = [json.dumps(a) for a in data.get("args", [])]
        kwargs = [f"{k}={json.dumps(v)}" for k, v in data.get("kwargs", {}).items()]
        return ", ".join(args + kwargs)
    except (ValueError, AttributeError):
        return payload


def jobs_page(
    query: JobQuery, page: Page, *, queues: Sequence[str], after: str | None, limit: int
) -> str:
    def select(name: str, options: Sequence[str], current: str | None) -> str:
        opts = '<option value="">any</option>' + "".join(
            f"<option{' selected' if o == current else ''}>{esc(o)}</option>" for o in options
        )
        return f'<label>{name}<select name="{name}">{opts}</select></label>'

    form = (
        '<form class="filters" method="get" action="/jobs">'
        + select(
            "queue", sorted(set(queues) | ({query.queue} if query.queue else set())), query.queue
        )
        + select("state", STATES, query.state.value if query.state else None)
        + f'<label>task<input name="task" value="{esc(query.task)}" placeholder="module.function"></label>'
        + f'<label>search arguments<input name="q" value="{esc(query.search)}" placeholder="text"></label>'
        + f'<label>where<input name="where" value="{esc(query.where)}" placeholder="kwargs.user_id=42; args.0=7"></label>'
        + '<button class="btn primary" type="submit">Filter</button>'
        + ('<a class="btn" href="/jobs">Clear</a>' if not query.is_empty else "")
        + "</form>"
        + (
            f'<p class="error">where ignored: {esc(query.where_error)}</p>'
            if query.where_error
            else ""
        )
    )
    rows = [
        [
            f'<a class="mono" href="/jobs/{esc(j.id)}">{esc(j.id)}</a>',
            f'<span class="mono">{esc(j.task)}</span>',
            esc(j.queue),
            badge(j.state.value),
            f"{j.attempt}/{j.max_attempts}",
            f'<span class="args mono" title="{esc(args_text(j.payload))}">{esc(args_text(j.payload))}</span>',
            ago(j.created_at),
            ago(j.finished_at),
        ]
        for j in page.jobs
    ]
    bulk = " ".join(
        f'<a class="btn{" danger" if a == "delete" else ""}" '
        f'href="{url("/jobs/bulk", {**query.to_params(), "action": a})}">{label} all matching</a>'
        for a, label in ACTION_LABELS.items()
    )
    nav = []
    if after:
        nav.append(
            f'<a class="btn" href="{url("/jobs", {**query.to_params(), "limit": str(limit)})}">« First page</a>'
        )
    if page.next_after:
        nav.append(
            f'<a class="btn" href="{url("/jobs", {**query.to_params(), "after": page.next_after, "limit": str(limit)})}">Next page »</a>'
        )
    scan = (
        f" · search scanned {page.scanned} jobs and stopped; narrow the filters or go on"
        if page.truncated
        else ""
    )
    return (
        "<h1>Jobs</h1>"
        + form
        + f'<div class="bar"><span>{len(page.jobs)} shown{esc(scan)}</span>{bulk}</div>'
        + table(
            ["id", "task", "queue", "state", "attempt", "arguments", "created", "finished"],
            rows,
            empty="No jobs match these filters.",
            cls="jobs",
        )
        + f'<div class="bar">{"".join(nav)}</div>'
    )


def _pretty(text: str | None) -> str:
    if text is None:
        return '<span class="muted">none</span>'
    try:
        return f"<pre>{esc(json.dumps(json.loads(text), indent=2))}</pre>"
    except ValueError:
        return f"<pre>{esc(text)}</pre>"


def _error(text: str | None, *, folded: bool = False) -> str:
    """An error JSON {"type","message","traceback"} as a heading and a traceback block
    (``folded``: behind a click, for attempt rows that repeat the job's last error)."""
    if not text:
        return '<span class="muted">none</span>'
    try:
        err: dict[str, Any] = json.loads(text)
    except ValueError:
        return f"<pre>{esc(text)}</pre>"
    head = f"<div><strong>{esc(err.get('type'))}</strong>: {esc(err.get('message'))}</div>"
    tb = err.get("traceback")
    if not tb:
        return head
    block = f'<pre class="traceback">{esc(tb)}</pre>'
    return head + (f"<details><summary>traceback</summary>{block}</details>" if folded else block)


def job_actions(job: JobRecord, csrf: str) -> str:
    out = []
    for action, label in ACTION_LABELS.items():
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


def job_page(
    job: JobRecord, attempts: Sequence[AttemptRecord], logs: Sequence[Any] | None, csrf: str
) -> str:
    fields = [
        ("task", f'<span class="mono">{esc(job.task)}</span>'),
        ("queue", f'<a href="{url("/jobs", {"queue": job.queue})}">{esc(job.queue)}</a>'),
        ("state", badge(job.state.value) + (" (cancel requested)" if job.cancel_requested else "")),
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
                utc(getattr(r, "ts", None)),
                esc(getattr(r, "level", "")),
                esc(getattr(r, "logger", "")),
                f'<span class="mono">{esc(getattr(r, "message", ""))}</span>',
            ]
            for r in logs
        ]
        html_logs = "<h2>Logs</h2>" + table(
            ["time", "level", "logger", "message"], log_rows, empty="No log records."
        )
    return (
        f'<h1>Job <span class="mono">{esc(job.id)}</span> {badge(job.state.value)}</h1>'
        f'<div class="bar">{job_actions(job, csrf)}</div>'
        f'<dl class="fields">{dl}</dl>'
        f"<h2>Arguments</h2>{_pretty(job.payload)}"
        f"<h2>Result</h2>{_pretty(job.result)}"
        f"<h2>Error</h2>{_error(job.error)}"
        "<h2>Attempts</h2>"
        + table(
            ["#", "worker", "started", "took", "outcome", "error"],
            att_rows,
            empty="Not attempted yet.",
            cls="attempts",
        )
        + html_logs
    )


def workers_page(workers: Sequence[WorkerInfo], *, now: float, ttl: float) -> str:
    rows = []
    for w in workers:
        age = now - w.heartbeat_at
        health = badge("running") if age <= ttl else badge("dead")
        rows.append(
            [
                f'<span class="mono">{esc(w.id)}</span>',
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
    note = {
        "retry": "Only dead, cancelled and succeeded jobs are retried.",
        "cancel": "Only scheduled, queued and running jobs are cancelled.",
        "delete": "Deleted jobs and their attempts are gone for good.",
    }[action]
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
