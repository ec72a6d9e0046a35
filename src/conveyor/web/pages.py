"""The dashboard's pages, as functions from plain data to HTML (no I/O here).

Views fetch from the backend and call these; keeping them pure makes every page easy to
test and keeps the escaping rules in one reviewable place (see :mod:`conveyor.web.html`).

Example:
    >>> "No workers" in workers_page([], now=0.0, ttl=30.0)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor.backends.base import WorkerInfo
from conveyor.web.html import (
    ago,
    badge,
    esc,
    post_button,
    table,
    url,
)
from conveyor.web.job_cells import (
    ACTION_LABELS,
    ERROR_CHARS,
    SHOW_CHARS,
    STATES,
    ago_seconds,
    args_text,
    error_cell,
    error_parts,
    problems_note,
    shows_error,
    state_badge,
)
from conveyor.web.job_page import job_actions, job_page
from conveyor.web.jobs_page import JOB_COLUMNS, jobs_page, sort_link
from conveyor.web.overview_page import overview_page, throughput_section
from conveyor.web.query import ACTION_STATES, JobQuery, action_states

#: every page's function, as views.py calls them (``pages.jobs_page(...)``)
__all__ = [
    "ACTION_LABELS",
    "ERROR_CHARS",
    "JOB_COLUMNS",
    "SHOW_CHARS",
    "STATES",
    "ago_seconds",
    "args_text",
    "confirm_page",
    "error_cell",
    "error_parts",
    "job_actions",
    "job_page",
    "jobs_page",
    "not_applicable_page",
    "overview_page",
    "problems_note",
    "shows_error",
    "sort_link",
    "state_badge",
    "throughput_section",
    "workers_page",
]


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


def confirm_page(
    action: str, query: JobQuery, count: int, csrf: str, *, at_least: bool = False
) -> str:
    """``at_least``: ``count`` is a capped count, a lower bound ("1000+")."""
    label = ACTION_LABELS[action]
    described = ", ".join(f"{k} = {v}" for k, v in query.to_params().items()) or "all jobs"
    shown = f"{count}+" if at_least else str(count)
    hidden = {**query.to_params(), "action": action, "expected": shown}
    states = ", ".join(s.value for s in action_states(action, query))
    note = f"It acts only on {states} jobs."
    if action == "delete":
        note += " Deleted jobs and their attempts are gone for good."
    button = (
        post_button(
            "/jobs/bulk",
            f"{label} {shown} jobs",
            csrf,
            hidden=hidden,
            cls="danger" if action == "delete" else "primary",
        )
        if count
        else "<p>Nothing to do.</p>"
    )
    return (
        f"<h1>{esc(label)} all matching jobs?</h1>"
        f'<p><strong>{shown}</strong> jobs match <span class="mono">{esc(described)}</span>. '
        f"{esc(note)}</p>"
        + (
            f'<p class="muted capped">{shown}: at least {count} (a capped count); the '
            "action acts on every matching job, and its result says how many.</p>"
            if at_least
            else ""
        )
        + f'<div class="bar">{button}<a class="btn" href="{url("/jobs", query.to_params())}">Back</a></div>'
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
