"""The dashboard's ``/limits`` page: every declared limit key with its values in force
and its jobs running now, an override form per key (set / reset, as ``conveyor limits
set|reset``), and the blocked sequences (jobs held behind a failed job under
``on_failure="block"``) with a release button (as ``conveyor release``).

Forms and buttons are for operators only (a viewer's page has none: ``csrf`` is
:data:`~conveyor.web.security.NO_ACTIONS`); every action is kept in the operator
actions log under the token's name, as the CLI keeps its own.

Example:
    >>> from conveyor.backends.records import LimitRecord
    >>> r = LimitRecord("partner-api", 2, None, None, (3, None, None), 1)
    >>> page = limits_page([r], [], csrf="t")
    >>> "partner-api" in page and "Reset" in page and "3" in page
    True
    >>> "<form" in limits_page([r], [], csrf="")   # a viewer: no forms
    False
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from conveyor.backends.base import JobRecord, LimitRecord
from conveyor.web.html import badge, esc, post_button, table
from conveyor.web.security import CSRF_FIELD, NO_ACTIONS

#: Flash codes of the limits page's actions, and the text each shows.
FLASH = {
    "limit-set": "Override stored: every worker obeys it at its next claim.",
    "limit-reset": "Override removed: the code's values are in force again.",
    "limit-unknown": "No limit key of that name: nothing done.",
    "limit-invalid": "Give a concurrency of 1 or more and/or a rate such as 10/s: nothing done.",
    "released": "Released: the held job goes on.",
    "not-released": "Nothing released (the job is no longer held?).",
}


def _rate(count: int | None, period: float | None) -> str:
    return "-" if count is None or period is None else f"{count}/{period:g}s"


def limits_page(limits: Sequence[LimitRecord], held: Sequence[JobRecord], *, csrf: str) -> str:
    """The limit keys and the held jobs of blocked sequences; forms only for operators."""
    return (
        "<h1>Limits</h1>"
        '<p class="muted">Every declared limit key (a task with <code>concurrency=</code> '
        "or <code>rate=</code>, once a job is enqueued), with the values in force and its "
        "jobs running now. An override is stored: every worker obeys it at its next claim, "
        "until reset. <code>conveyor limits</code> shows the same.</p>"
        + table(
            ["key", "concurrency", "rate", "override", "running", ""],
            [_limit_row(r, csrf) for r in limits],
            empty="No limits declared yet.",
            cls="limits",
        )
        + "<h2>Blocked sequences</h2>"
        '<p class="muted">Jobs held behind a failed job of their sequence '
        '(<code>on_failure="block"</code>). Release lets one go on, as '
        "<code>conveyor release</code>; retrying the failed job runs it first again.</p>"
        + table(
            ["held job", "task", "reason", ""],
            [_held_row(j, csrf) for j in held],
            empty="No sequence is blocked.",
            cls="held",
        )
    )


def _limit_row(r: LimitRecord, csrf: str) -> list[str]:
    concurrency, count, period = r.in_force
    actions = ""
    if csrf != NO_ACTIONS:
        actions = (
            f'<form method="post" action="/limits/set" class="inline">'
            f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(csrf)}">'
            f'<input type="hidden" name="key" value="{esc(r.key)}">'
            '<input name="concurrency" size="4" placeholder="conc." aria-label="concurrency">'
            '<input name="rate" size="6" placeholder="10/s" aria-label="rate">'
            '<button type="submit" class="btn">Set</button></form>'
        )
        if r.override is not None:
            actions += post_button("/limits/reset", "Reset", csrf, hidden={"key": r.key})
    return [
        f'<strong class="mono">{esc(r.key)}</strong>',
        "-" if concurrency is None else esc(concurrency),
        esc(_rate(count, period)),
        badge("set") if r.override is not None else '<span class="muted">-</span>',
        esc(r.running),
        actions,
    ]


def _held_row(j: JobRecord, csrf: str) -> list[str]:
    link = f'<a class="mono" href="/jobs/{esc(quote(j.id, safe=""))}">{esc(j.id)}</a>'
    button = post_button("/limits/release", "Release", csrf, hidden={"id": j.id})
    return [link, esc(j.task), esc(j.reason or ""), button]
