"""The dashboard's page of one job: its fields, arguments, result, error, attempts and,
for a durable job, its steps (a sleep's wake time and a wait's deadline as times), what
it waits for and the values it published.

Example:
    >>> print(_pretty('{"a": 1}'))
    <pre>{
      &quot;a&quot;: 1
    }</pre>
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor import rowtext
from conveyor.backends.base import (
    PUBLISH_PREFIX,
    SLEEP_STEP,
    AttemptRecord,
    JobLogRecord,
    JobRecord,
    StepRecord,
    is_published,
    step_time,
    waits_on,
)
from conveyor.headers import decode as decode_headers
from conveyor.secrets import mask_payload
from conveyor.states import JobState
from conveyor.web.html import (
    ago,
    badge,
    duration,
    esc,
    post_button,
    table,
    url,
    utc,
)
from conveyor.web.job_cells import (
    ACTION_LABELS,
    SHOW_CHARS,
    problems_note,
    shows_error,
    state_badge,
)
from conveyor.web.query import ACTION_STATES

#: Characters of a step's result (or a published value) the steps table shows.
PREVIEW = 120


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
    steps: Sequence[StepRecord] = (),
) -> str:
    dl = _fields_list(job)
    att_rows = [_attempt_row(a) for a in attempts]
    html_logs = _logs_section(logs)
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
        + _steps_section(job, steps)
        + html_logs
    )


def _fields_list(job: JobRecord) -> str:
    """The job's fields as a definition list's items (task, queue, state, times, ...)."""
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
    return "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in fields)


def _attempt_row(a: AttemptRecord) -> list[str]:
    """One row of the attempts table."""
    return [
        str(a.attempt),
        f'<span class="mono">{esc(a.worker_id or "-")}</span>',
        utc(a.started_at),
        duration(a.started_at, a.finished_at),
        badge(a.outcome),
        _error(a.error, folded=True) if a.error else '<span class="muted">-</span>',
    ]


def _logs_section(logs: Sequence[JobLogRecord] | None) -> str:
    """The job's captured log records ('' when the store keeps none)."""
    if logs is None:
        return ""
    log_rows = [
        [
            utc(r.ts),
            esc(r.level),
            esc(r.logger),
            f'<span class="mono">{esc(r.message)}</span>',
        ]
        for r in logs
    ]
    return "<h2>Logs</h2>" + table(
        ["time", "level", "logger", "message"], log_rows, empty="No log records."
    )


def _step_result(s: StepRecord) -> str:
    """A step's result cell: a sleep's wake time or a wait's deadline as a time, else a
    preview of the saved JSON (or of the error)."""
    moment = step_time(s)
    if moment is not None:
        return f"{'wakes' if s.name == SLEEP_STEP else 'times out'} {utc(moment)}"
    text = s.result if s.result is not None else s.error
    if text is None:
        return '<span class="muted">-</span>'
    return f'<span class="mono">{esc(rowtext.preview(text, PREVIEW))}</span>'


def _waits_note(job: JobRecord, steps: Sequence[StepRecord]) -> str:
    found = waits_on(job.state, steps)
    if found is None:
        return ""
    what, moment = found
    if what == SLEEP_STEP:
        text = f"sleeping until {utc(moment)}"
    else:
        text = f"{esc(what)} ({'no timeout' if moment is None else f'times out {utc(moment)}'})"
    return f'<p class="waits">Waits for: {text}</p>'


def _steps_section(job: JobRecord, steps: Sequence[StepRecord]) -> str:
    """A durable job's steps, what it waits for and its published values ('' for a job
    that has none)."""
    body = [s for s in steps if not is_published(s)]
    published = sorted((s for s in steps if is_published(s)), key=lambda s: s.name)
    out = ""
    if body:
        rows = [
            [str(s.position), f'<span class="mono">{esc(s.name)}</span>', badge(s.state),
             esc(s.attempts), utc(s.started_at), duration(s.started_at, s.finished_at),
             _step_result(s)]
            for s in body
        ]  # fmt: skip
        out += f"<h2>Steps ({len(body)})</h2>{_waits_note(job, steps)}" + table(
            ["#", "step", "state", "tries", "started", "took", "result"],
            rows,
            empty="No steps.",
            cls="steps",
        )
    if published:
        rows = [
            [f'<span class="mono">{esc(s.name[len(PUBLISH_PREFIX) :])}</span>',
             f'<span class="mono">{esc(rowtext.preview(s.result or "", PREVIEW))}</span>',
             utc(s.finished_at)]
            for s in published
        ]  # fmt: skip
        out += "<h2>Published</h2>" + table(["key", "value", "at"], rows, empty="-")
    return out
