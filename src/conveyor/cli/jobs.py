"""``conveyor jobs`` (a filtered page of jobs, newest first) and ``conveyor job ID`` (one
job in full: record, every attempt with worker, timings, outcome, error and traceback,
and its logs). ``job`` takes a whole id or a unique prefix of one.

Example::

    conveyor jobs --state dead --where kwargs.user_id=42 --limit 20 --app tasks:app
    conveyor jobs --search 'error:timeouterror args.user_id:42 finished:<1h'
    conveyor jobs --after 01JD... --json
    conveyor job 01JD8X2K
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from conveyor import records, rowtext
from conveyor.backends.base import (
    AttemptRecord,
    Backend,
    JobDependenciesParams,
    JobFilter,
    JobListParams,
    JobLogListParams,
    JobLogRecord,
    JobRecord,
    StepRecord,
)
from conveyor.cli.common import echo_json, store_options
from conveyor.cli.config import open_app
from conveyor.cli.filters import TIME_FIELDS, bound_to, filter_options, is_empty, job_dict
from conveyor.cli.flow_options import flow_of
from conveyor.cli.jobs_search import searched
from conveyor.cli.output import (
    Column,
    Output,
    epoch_option,
    iso_json,
    iso_time,
    percent,
    utc_option,
)
from conveyor.cli.prefix import MIN_PREFIX, resolve
from conveyor.cli.steps import job_steps, published_json, steps_json, steps_section, waits_for
from conveyor.redaction import redacted
from conveyor.secrets import mask_payload, refuse_secret_where
from conveyor.states import JobState

if TYPE_CHECKING:
    from conveyor.backends.search_params import SearchTerm
    from conveyor.backends.search_scan import SearchCount

#: Most characters of a payload or result ``conveyor job ID`` shows (``--payload``: all).
SHOW_CHARS = 20_000


@click.command("jobs")
@store_options
@filter_options
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option(
    "--after",
    metavar="ID",
    help="Page: only the jobs listed after this id (older ones; with --oldest-first, newer).",
)
@click.option(
    "--oldest-first",
    is_flag=True,
    help="List in creation order (default: newest first, as the dashboard).",
)
@click.option(
    "--search",
    "query",
    metavar="QUERY",
    help='Only jobs matching QUERY (words, "phrases", -word, field:word, state:, '
    "args.NAME:value, header.NAME:value, finished:<1h; docs/search.md), newest first.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@epoch_option
@utc_option
def jobs(
    url: str | None,
    app_spec: str | None,
    job_filter: JobFilter,
    limit: int,
    after: str | None,
    oldest_first: bool,
    query: str | None,
    as_json: bool,
    epoch: bool,
    utc: bool,
) -> None:
    """List jobs matching the filters, newest first. Failed and dead jobs show their
    last error, scheduled ones when they run."""
    app = open_app(url, app_spec)
    backend = app.backend
    scan: tuple[int | None, bool] = (None, True)
    counted: SearchCount | None = None
    terms: tuple[SearchTerm, ...] = ()
    if query is not None:
        job_filter, scan, found, counted, terms = searched(
            app, query, job_filter, limit, after, oldest_first
        )
    else:
        refuse_secret_where(backend, job_filter)  # secret arguments cannot be queried
        job_filter = bound_to(job_filter, app, note=not as_json)  # after: errors stay one line
        found = backend.job_list(
            JobListParams(
                after_id=after, limit=limit, filter=job_filter, descending=not oldest_first
            )
        )
    next_after = found[-1].id if len(found) == limit or not scan[1] else None
    if as_json:
        listed = [job_dict(j, epoch=epoch) for j in found]
        more: dict[str, object] = {}
        if query is not None:
            more = {"scanned": scan[0], "complete": scan[1]}
            more["count"] = None if counted is None else counted.n
            more["count_exact"] = None if counted is None else counted.exact
        echo_json({"jobs": listed, "next_after": next_after, **more})
        return
    out = Output()
    if terms:  # the matched words, marked in a terminal (a pipe gets plain text)
        from conveyor.backends.search_match import highlight_spans

        out.marks = lambda cell: highlight_spans(cell, terms)
    out.table(
        [
            Column("id", key=True),
            Column("task", key=True),
            Column("queue", key=True),
            Column("state", key=True),
            Column("attempt", key=True, right=True),
            Column("created"),
            Column("run_at"),
            Column("finished"),
            Column("error", preview=60),
            Column("payload", preview=60),
        ],
        [_listed_row(j, utc) for j in found],
        title=f"jobs — {redacted(backend.url)}",
        empty="no jobs" if is_empty(job_filter) and after is None else "no jobs match",
    )
    if counted is not None and found:
        out.line(counted.label)
    if not scan[1]:
        out.line(f"scanned {scan[0]} jobs without an index and stopped: older ones may match")
    if next_after:
        order = " --oldest-first" if oldest_first else ""
        out.line(f"more: --after {next_after}{order}")


def _listed_row(j: JobRecord, utc: bool) -> list[object]:
    """One row of ``conveyor jobs``."""
    return [
        j.id,
        rowtext.preview(j.task),  # names the API makes are far shorter
        rowtext.preview(j.queue),
        state_label(j),
        f"{j.attempt}/{j.max_attempts}",
        iso_time(j.created_at, utc=utc),
        # when a scheduled job (a delay, a schedule, a retry's backoff) runs
        iso_time(j.run_at, utc=utc) if j.state is JobState.SCHEDULED else "-",
        iso_time(j.finished_at, utc=utc),
        # the last error of a job that failed (dead, or scheduled for a retry)
        _listed_error(j.error),
        # bounded in a pipe too: one huge row must not make a huge listing;
        # secret arguments show as "•••"
        rowtext.preview(mask_payload(j.payload)),
    ]


@click.command("job")
@store_options
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--payload",
    "raw_payload",
    is_flag=True,
    help="Print only the stored payload, whole and as stored (the record shows a "
    f"bounded part: {SHOW_CHARS:,} characters).",
)
@epoch_option
@utc_option
def job(
    url: str | None,
    app_spec: str | None,
    job_id: str,
    as_json: bool,
    raw_payload: bool,
    epoch: bool,
    utc: bool,
) -> None:
    """One job in full: record, every attempt (with traceback), and its logs. JOB_ID is
    a whole id or a unique prefix of one (at least 4 characters)."""
    app = open_app(url, app_spec)
    backend = app.backend
    resolved = resolve(backend, job_id)
    found = backend.job_get_many([resolved]) if resolved is not None else []
    if not found:
        short = f" (a prefix needs {MIN_PREFIX} characters)" if len(job_id) < MIN_PREFIX else ""
        raise click.ClickException(f"no job {job_id}{short}")
    record = found[0]
    job_id = record.id
    if raw_payload:
        # Whole, and as stored: bytes that were not UTF-8 go out as they were read.
        sys.stdout.flush()
        sys.stdout.buffer.write(record.payload.encode("utf-8", "surrogateescape") + b"\n")
        sys.stdout.buffer.flush()
        return
    attempts = backend.job_attempts(job_id)
    logs = backend.job_log_list(JobLogListParams(job_id))
    parents = _parents(backend, job_id)
    flow = flow_of(app, record.task)
    steps = job_steps(backend, job_id)
    if as_json:
        echo_json(
            {
                "job": job_dict(record, epoch=epoch),
                "flow": flow,
                "depends_on": parents,
                "attempts": [_decoded(records.asdict(a), epoch) for a in attempts],
                "logs": [_timed(records.asdict(r), ("ts",), epoch) for r in logs],
                **({"steps": steps_json(steps, epoch)} if steps else {}),
                **({"published": p} if (p := published_json(steps)) else {}),
                **({"waits_for": w} if (w := waits_for(record, steps)) else {}),
            }
        )
        return
    _print_job(record, parents, attempts, logs, steps, utc=utc)
    if flow:
        Output(sections=True).fields(list(flow.items()), title="flow control (the task's)")


def _print_job(
    record: JobRecord,
    parents: list[dict[str, str]],
    attempts: Sequence[AttemptRecord],
    logs: Sequence[JobLogRecord],
    steps: Sequence[StepRecord],
    *,
    utc: bool,
) -> None:
    """``conveyor job``'s sections: fields, odd-row note, parents, steps (durable jobs),
    attempts (and their tracebacks), logs."""
    out = Output(sections=True)
    out.fields(
        [
            (k, _shown(k, v, utc, record.id))
            for k, v in job_dict(record).items()
            if k not in ("error", "problems", "stored_state")
        ],
        title=f"job {record.id}",
    )
    if record.problems:
        out.block(
            "\n".join(rowtext.preview(p) for p in record.problems),
            title="odd row (written outside conveyor's API)",
        )
    if parents:
        out.table(
            [
                Column("#", key=True, right=True),
                Column("job", key=True),
                Column("task", key=True),
                Column("state", key=True),
            ],
            [[n, p["id"], p["task"], p["state"]] for n, p in enumerate(parents, 1)],
            title="depends on (workflow parents, in order)",
            empty="no parents",
        )
    steps_section(out, steps, waits_for(record, steps, utc), utc)
    _attempts_table(out, attempts, utc=utc)
    for a in attempts:
        tb = _error(a.error).get("traceback")
        if tb:
            out.block(str(tb), title=f"attempt {a.attempt} traceback")
    if record.error and not attempts:
        out.block(str(_error(record.error).get("traceback") or record.error), title="error")
    out.table(
        [
            Column("time"),
            Column("#", key=True, right=True),
            Column("level", key=True),
            Column("logger", key=True),
            Column("message"),
        ],
        [[iso_time(r.ts, utc=utc), r.attempt, r.level, r.logger, r.message] for r in logs],
        title=f"logs ({len(logs)})",
        empty="no logs",
    )


def _attempts_table(out: Output, attempts: Sequence[AttemptRecord], *, utc: bool) -> None:
    """One row per attempt: token, worker, start, duration, outcome, first error line."""
    out.table(
        [
            Column("#", key=True, right=True),
            Column("token", key=True, right=True),
            Column("worker", key=True),
            Column("started"),
            Column("took", right=True),
            Column("outcome", key=True),
            Column("error", preview=80),
        ],
        [
            [
                a.attempt,
                a.token,
                a.worker_id or "-",
                iso_time(a.started_at, utc=utc),
                "-"
                if a.started_at is None or a.finished_at is None
                else f"{a.finished_at - a.started_at:.3f}s",
                a.outcome,
                _error_line(a.error),
            ]
            for a in attempts
        ],
        title="attempts",
        empty="no attempts yet",
    )


def _field(name: str, value: object, utc: bool) -> object:
    """A job field as shown by ``conveyor job ID``: times ISO 8601, progress as a
    percentage, JSON values as JSON."""
    if name in TIME_FIELDS and isinstance(value, (int, float)):
        return iso_time(value, utc=utc)
    if name == "progress" and isinstance(value, (int, float)):
        return percent(value)
    if isinstance(value, (dict, list)):
        return rowtext.dumps(value) or str(value)
    return value


def _shown(name: str, value: object, utc: bool, job_id: str) -> object:
    """``_field``, with a payload or result longer than SHOW_CHARS cut and its size
    noted (``--payload`` prints the payload whole)."""
    shown = _field(name, value, utc)
    if name not in ("payload", "result") or not isinstance(shown, str):
        return shown
    if len(shown) <= SHOW_CHARS:
        return shown
    more = f"; conveyor job {job_id} --payload prints it whole" if name == "payload" else ""
    return (
        f"{rowtext.preview(shown, SHOW_CHARS)} "
        f"[{rowtext.size(shown):,} bytes, first {SHOW_CHARS:,} characters shown{more}]"
    )


def state_label(job: JobRecord) -> str:
    """A job's state as listed: a stored state conveyor does not know is shown as it is,
    marked ``?`` (such a row is never claimed)."""
    return (
        str(job.state) if job.stored_state is None else f"{rowtext.preview(job.stored_state, 40)}?"
    )


#: Longest stored error the listing parses for its type and message (a row written by
#: hand can hold megabytes; past this its text is previewed as it is).
LISTED_ERROR_CHARS = 100_000


def _listed_error(text: str | None) -> str:
    """The error cell of ``conveyor jobs``: ``Type: message``, bounded; ``-`` for none."""
    if not text:
        return "-"
    if len(text) > LISTED_ERROR_CHARS:
        return rowtext.preview(text)
    return rowtext.preview(_error_line(text))


def _error_line(text: str | None) -> str:
    """``Type: message`` of a stored error, or ``-``."""
    err = _error(text)
    return f"{err.get('type')}: {err.get('message')}" if err else "-"


def _parents(backend: Backend, job_id: str) -> list[dict[str, str]]:
    """The workflow parents of a job with their current state (empty where the backend
    has no workflows, or for a plain job)."""
    if "workflows" not in backend.features:
        return []
    deps = backend.job_dependencies_many(JobDependenciesParams([job_id]))
    found = {r.id: r for r in backend.job_get_many([d.parent_id for d in deps])}
    return [
        {
            "id": d.parent_id,
            "task": found[d.parent_id].task if d.parent_id in found else "-",
            "state": str(found[d.parent_id].state) if d.parent_id in found else "deleted",
        }
        for d in deps
    ]


def _error(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    value = rowtext.loads(text, limit=len(text))  # never too large here: all of it
    if value is None and not rowtext.parses(text, limit=len(text)):
        return {"type": "?", "message": text}
    return value if isinstance(value, dict) else {"message": text}


def _decoded(data: dict[str, Any], epoch: bool) -> dict[str, Any]:
    if data.get("error"):
        data["error"] = _error(data["error"])
    return _timed(data, ("started_at", "finished_at"), epoch)


def _timed(data: dict[str, Any], keys: tuple[str, ...], epoch: bool) -> dict[str, Any]:
    """``data`` with its time ``keys`` as ISO 8601 in UTC (as stored with ``epoch``)."""
    if not epoch:
        for key in keys:
            data[key] = iso_json(data.get(key))
    return data
