"""The dashboard's ``/audit`` page (who did what, newest first) and the entry every
dashboard action adds to the store's operator actions log.

An action is recorded after it is done, with its outcome, under the name of the token
that did it (``local`` on a dashboard without tokens) and the client's address. Viewers
may read the page too: it holds names, actions and job ids, never a payload.

Example:
    >>> from conveyor.backends.base import ActionLogRecord
    >>> e = ActionLogRecord("7", 0.0, "alice", "dashboard", "retry", 1, ("01J",), "by id", "::1")
    >>> "alice" in action_log_page([e], next_before=None, kept=True)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from conveyor.backends.base import (
    ActionLogInsertParams,
    ActionLogRecord,
    Backend,
    action_log_entry,
)
from conveyor.web.html import esc, table, url, utc
from conveyor.web.tokens import DashboardToken

#: Entries per page of ``/audit``.
PAGE = 100


def dashboard_entry(
    request: Request,
    action: str,
    *,
    count: int,
    job_ids: Sequence[str] = (),
    detail: str = "",
) -> ActionLogInsertParams:
    """The entry for ``action`` done by this request's token (no I/O: call it in the
    handler, then :func:`keep` in the thread pool)."""
    user: DashboardToken = request.state.user  # set by SecurityMiddleware
    client = request.client.host if request.client else ""
    return action_log_entry(
        user.name, "dashboard", action, count=count, job_ids=job_ids, detail=detail, host=client
    )


def keep(backend: Backend, entry: ActionLogInsertParams) -> None:
    """Write ``entry`` where the store keeps a log (feature ``action_log``)."""
    if "action_log" in backend.features:
        backend.action_log_insert(entry)


def action_log_page(
    entries: Sequence[ActionLogRecord], *, next_before: str | None, kept: bool, store: str = ""
) -> str:
    """The table of entries, newest first, with a link to older ones."""
    if not kept:
        return (
            "<h1>Audit</h1>"
            f"<p>The {esc(store)} store does not keep an actions log yet: actions on it "
            "are not recorded.</p>"
        )
    rows = [
        [
            f'<span class="mono">{esc(utc(e.at))}</span>',
            esc(e.actor),
            esc(e.source),
            f"<strong>{esc(e.action)}</strong>",
            esc(e.count),
            _jobs_cell(e.job_ids, e.count),
            esc(e.detail or "-"),
            f'<span class="mono">{esc(e.host or "-")}</span>',
        ]
        for e in entries
    ]
    more = (
        f'<div class="bar"><a class="btn" href="{url("/audit", {"before": next_before})}">'
        "Older »</a></div>"
        if next_before
        else ""
    )
    return (
        "<h1>Audit</h1>"
        '<p class="muted">Every action from the dashboard and the CLI, newest first '
        "(<code>conveyor audit --json</code> exports it).</p>"
        + table(
            ["time (UTC)", "actor", "source", "action", "jobs", "which", "detail", "from"],
            rows,
            empty="No actions recorded yet.",
            cls="audit",
        )
        + more
    )


def _jobs_cell(ids: Sequence[str], count: int) -> str:
    """Links to the first few jobs an entry names (the rest: a count)."""
    shown = [f'<a class="mono" href="/jobs/{esc(i)}">{esc(i)}</a>' for i in ids[:5]]
    rest = max(count, len(ids)) - len(shown)
    if rest > 0 and shown:
        shown.append(f'<span class="muted">+{rest} more</span>')
    return " ".join(shown) or '<span class="muted">-</span>'
