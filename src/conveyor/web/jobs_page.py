"""The dashboard's jobs page: the filter form, the sortable jobs table, bulk actions.

Example:
    >>> from conveyor.web.query import JobQuery, Sort
    >>> sort_link("task", "task", JobQuery(), Sort(), 50).startswith('<a class="sort"')
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor import rowtext
from conveyor.backends.base import JobRecord
from conveyor.states import JobState
from conveyor.web.html import (
    ago,
    esc,
    table,
    url,
)
from conveyor.web.job_cells import (
    ACTION_LABELS,
    SHOW_CHARS,
    STATES,
    args_text,
    error_cell,
    shows_error,
    state_badge,
)
from conveyor.web.query import JobQuery, Page, Sort, bulk_actions
from conveyor.web.search_marks import Marker, marker

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
    with_errors = query.state is JobState.DEAD or any(shows_error(j) for j in page.jobs)
    columns = [c for c in JOB_COLUMNS if c[0] != "error" or with_errors]
    parsed = query.parsed_search
    marks = marker(parsed.terms if parsed is not None else ())
    rows = [_job_row(j, columns, marks) for j in page.jobs]
    bulk = " ".join(
        f'<a class="btn{" danger" if a == "delete" else ""}" '
        f'href="{url("/jobs/bulk", {**query.to_params(), "action": a})}">'
        f"{ACTION_LABELS[a]} all matching</a>"
        for a in (bulk_actions(query) if actions else ())
    )
    scan = page.stopped
    if page.truncated and not scan:
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
        + _filter_form(query, sort, queues)
        + f'<div class="bar"><span>{len(page.jobs)} shown, {esc(order)}{esc(scan)}'
        + (f' · <span class="hits">{esc(page.count)}</span>' if page.count else "")
        + f"</span>{bulk}</div>"
        + table(
            [name for name, _ in columns],
            rows,
            empty="No jobs match these filters.",
            cls="jobs",
            head_html=[sort_link(name, col, query, sort, limit) for name, col in columns],
        )
        + f'<div class="bar">{_page_nav(query, page, sort, paged=paged, limit=limit)}</div>'
    )


def _filter_form(query: JobQuery, sort: Sort, queues: Sequence[str]) -> str:
    """The filters above the table (queue, state, task, search, where), the sort kept."""

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
    return (
        '<form class="filters" method="get" action="/jobs">'
        + select(
            "queue", sorted(set(queues) | ({query.queue} if query.queue else set())), query.queue
        )
        + select("state", STATES, query.state.value if query.state else None)
        + f'<label>task<input name="task" value="{esc(query.task)}" placeholder="module.function"></label>'
        + f'<label>search<input name="q" value="{esc(query.search)}" placeholder="timeout state:dead args.user_id:42" list="search-suggest" autocomplete="off" data-suggest="/api/search/suggest"></label><datalist id="search-suggest"></datalist>'
        + f'<label>where<input name="where" value="{esc(query.where)}" placeholder="kwargs.user_id=42; args.0=7"></label>'
        + keep_sort
        + '<button class="btn primary" type="submit">Filter</button>'
        + ('<a class="btn" href="/jobs">Clear</a>' if not query.is_empty else "")
        + "</form>"
        + (
            f'<p class="error">search matches nothing: {esc(query.search_error)}</p>'
            if query.search_error
            else ""
        )
        + (
            f'<p class="error">where ignored: {esc(query.where_error)}</p>'
            if query.where_error
            else ""
        )
    )


def _job_row(
    j: JobRecord, columns: Sequence[tuple[str, str | None]], marks: Marker = esc
) -> list[str]:
    """One job's cells, in the order of the shown ``columns``; ``marks``: escapes a
    cell's text, a search's matched words in ``<mark>``."""
    cells = {
        "id": f'<a class="mono" href="/jobs/{esc(j.id)}">{esc(j.id)}</a>',
        "task": f'<span class="mono">{marks(rowtext.preview(j.task))}</span>',
        "queue": marks(rowtext.preview(j.queue)),
        "state": state_badge(j),
        "attempt": f"{j.attempt}/{j.max_attempts}",
        "arguments": _args_cell(j, marks),
        "error": error_cell(j, marks),
        "created": ago(j.created_at),
        "finished": ago(j.finished_at),
    }
    return [cells[name] for name, _ in columns]


def _page_nav(query: JobQuery, page: Page, sort: Sort, *, paged: bool, limit: int) -> str:
    """The links under the table: back to the first page, on to the next."""
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
    return "".join(nav)


def _args_cell(job: JobRecord, marks: Marker = esc) -> str:
    """The arguments cell: one bounded preview (shown, and whole in the tooltip only when
    it was not cut), a link to the raw payload when it was."""
    text = args_text(job.payload)
    cell = f'<span class="args mono" title="{esc(text)}">{marks(text)}</span>'
    if not text.endswith("…"):
        return cell
    size = rowtext.size(job.payload) if len(job.payload) < 4 * SHOW_CHARS else None
    label = f"whole ({size:,} bytes)" if size is not None else "whole"
    return cell + f' <a class="muted" href="/jobs/{esc(job.id)}/payload">{label}</a>'
