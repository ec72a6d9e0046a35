"""The dashboard's ``/schedules`` page: every periodic schedule with its next and last
fire, its last job's state, and (for an operator) pause / resume / run now.

The actions post the schedule's name as a form field (a name may hold ``/`` or ``.``),
go through :func:`conveyor.schedules.steer`, and are kept in the operator actions log
under the token's name, as every dashboard action. A viewer's page has no forms.

Example:
    >>> from conveyor.schedules import ScheduleView
    >>> v = ScheduleView("nightly", "every 60s", True, 60.0, None, None, None, None)
    >>> page = schedules_page([v], csrf="t", now=0.0)
    >>> "nightly" in page and "Resume" in page and "Pause" not in page
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from conveyor.schedules import ScheduleView
from conveyor.web.html import badge, esc, post_button, table, utc
from conveyor.web.job_cells import ago_seconds

#: Flash codes of the schedule actions, and the text each shows.
FLASH = {
    "schedule-paused": "Schedule paused: workers skip its slots until it is resumed.",
    "schedule-resumed": "Schedule resumed: its next slot fires.",
    "schedule-run": "Run requested: a worker enqueues it at its next scheduler tick.",
    "schedule-unknown": "No schedule of that name: nothing done.",
}
#: The flash code each action redirects with.
DONE = {"pause": "schedule-paused", "resume": "schedule-resumed", "run": "schedule-run"}


def schedules_page(views: Sequence[ScheduleView], *, csrf: str, now: float) -> str:
    """The table of schedules; action buttons only where ``csrf`` allows (operators)."""
    rows = [_row(v, csrf, now) for v in views]
    return (
        "<h1>Schedules</h1>"
        '<p class="muted">Every periodic schedule a worker has recorded. A pause is '
        "stored: every worker skips its slots (not caught up after a resume). "
        "<code>conveyor schedules</code> shows the same.</p>"
        + table(
            ["schedule", "spec", "next fire (UTC)", "last fired", "last job", "state", ""],
            rows,
            empty="No schedules yet: a worker records each schedule of its app at its start.",
            cls="schedules",
        )
    )


def _row(v: ScheduleView, csrf: str, now: float) -> list[str]:
    hidden = {"name": v.name}
    toggle = "resume" if v.paused else "pause"
    actions = post_button(
        f"/schedules/{toggle}", toggle.capitalize(), csrf, hidden=hidden
    ) + post_button("/schedules/run", "Run now", csrf, hidden=hidden)
    job = (
        f'<a class="mono" href="/jobs/{esc(quote(v.last_job_id, safe=""))}">'
        f"{esc(v.last_job_id)}</a>"
        if v.last_job_id
        else '<span class="muted">-</span>'
    )
    state = badge(v.last_job_state) if v.last_job_state else '<span class="muted">-</span>'
    if v.run_requested_at is not None:
        state += ' <span class="muted">run requested</span>'
    last = "-" if v.last_fired_at is None else ago_seconds(now - v.last_fired_at) + " ago"
    return [
        f"<strong>{esc(v.name)}</strong>",
        f'<span class="mono">{esc(v.spec)}</span>',
        badge("paused") if v.paused else f'<span class="mono">{esc(utc(v.next_slot))}</span>',
        last,
        job,
        state,
        actions,
    ]
