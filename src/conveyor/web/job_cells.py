"""Cells of a job shared by the dashboard's pages: its state badge, arguments, error.

Pure functions from a :class:`JobRecord` (or its stored text) to escaped HTML; the jobs
table (jobs_page.py) and the job's own page (job_page.py) both show them.

Example:
    >>> error_parts('{"type": "ValueError", "message": "bad"}')
    ('ValueError', 'bad')
    >>> ago_seconds(90.0)
    '90.0s'
"""

from __future__ import annotations

import math
from collections.abc import Callable

from conveyor import rowtext
from conveyor.backends.base import JobRecord
from conveyor.secrets import mask_payload
from conveyor.states import JobState
from conveyor.web.html import (
    badge,
    esc,
)

STATES = [s.value for s in JobState]


ACTION_LABELS = {"retry": "Retry", "cancel": "Cancel", "delete": "Delete"}


#: Longest error message shown in the jobs table (the job's page shows all of it).
ERROR_CHARS = 160


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


def error_cell(job: JobRecord, marks: Callable[[str], str] = esc) -> str:
    """The error's type and message, cut; ``marks`` escapes the shown text (a search's
    matched words marked)."""
    parts = error_parts(job.error) if shows_error(job) else None
    if parts is None:
        return '<span class="muted">-</span>'
    kind, message = parts
    short = message if len(message) <= ERROR_CHARS else message[: ERROR_CHARS - 1] + "…"
    whole = f"{kind}: {message}" if kind else message
    head = f"<strong>{marks(kind)}</strong>: " if kind else ""
    return f'<span class="err" title="{esc(whole[:2000])}">{head}{marks(short)}</span>'


#: Most characters of a payload, result or error the job page shows; the rest is
#: behind the raw link (``/jobs/{id}/payload``) or ``conveyor job ID --payload``.
SHOW_CHARS = 20_000
