"""``conveyor export``: every matching job as JSON lines or CSV, streamed page by page
(memory stays bounded however large the store), with a progress bar on stderr.

Example::

    conveyor export --format jsonl --state dead -o dead.jsonl
    conveyor export --format csv --queue mail > mail.csv
    conveyor export --epoch --state succeeded        # times as epoch seconds

Times are ISO 8601 in UTC to the microsecond (``2030-01-31T09:00:00.000000Z``), or
epoch seconds as stored with ``--epoch``.

A file written with ``-o`` is mode 0600 (an existing one is truncated and made 0600);
with ``>`` the shell creates it, with the umask's mode.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from typing import IO, Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from conveyor import records
from conveyor.backends.base import (
    Backend,
    JobCountParams,
    JobFilter,
    JobFlow,
    JobLogListParams,
    JobRecord,
)
from conveyor.cli.common import store_options
from conveyor.cli.config import open_app
from conveyor.cli.filters import _json_or_text, bound_to, filter_options, iter_jobs, job_dict
from conveyor.cli.output import epoch_option, iso_json
from conveyor.private_files import create_private
from conveyor.rowtext import printable
from conveyor.secrets import mask_payload, refuse_secret_where

FIELDS = list(records.fields(JobRecord))


@click.command("export")
@store_options
@filter_options
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="File to write (default: stdout).",
)
@click.option(
    "--page",
    type=click.IntRange(1, 10_000),
    default=1000,
    show_default=True,
    help="Jobs read per query.",
)
@epoch_option
def export(
    url: str | None,
    app_spec: str | None,
    job_filter: JobFilter,
    fmt: str,
    output: str | None,
    page: int,
    epoch: bool,
) -> None:
    """Export matching jobs (payload, result and error as JSON; times as ISO 8601 in
    UTC, or epoch seconds with --epoch)."""
    app = open_app(url, app_spec)
    backend = app.backend
    refuse_secret_where(backend, job_filter)  # secret arguments cannot be queried
    job_filter = bound_to(job_filter, app)  # after: an error stays one line
    total = backend.job_count(JobCountParams(job_filter))
    with contextlib.ExitStack() as stack:
        out: IO[str] = stack.enter_context(open_private(output)) if output else sys.stdout
        writer = csv.DictWriter(out, FIELDS) if fmt == "csv" else None
        if writer is not None:
            writer.writeheader()
        progress = Progress(
            TextColumn("export"),
            BarColumn(),
            MofNCompleteColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        with progress:
            bar = progress.add_task("export", total=total)
            for records in iter_jobs(backend, job_filter, page=page):
                flows = (
                    {}
                    if writer
                    else {f.id: f for f in backend.job_flow_many([j.id for j in records])}
                )
                for j in records:
                    data = job_dict(j, epoch=epoch)
                    if writer is None:  # JSON lines: all `conveyor import` needs
                        data.update(history(backend, j, flows.get(j.id), epoch=epoch))
                    _write(out, writer, data)
                out.flush()
                progress.advance(bar, len(records))


def history(backend: Backend, j: JobRecord, flow: JobFlow | None, *, epoch: bool) -> dict[str, Any]:
    """The JSON-lines fields beyond the job's row, so ``conveyor import`` brings a job
    back whole: its workflow fields, attempt history, logs, durable steps and events not
    consumed yet, and whether export
    masked secret arguments (then the payload cannot be imported: docs/secrets.md).
    CSV keeps the row's columns only."""

    def when(ts: float | None) -> Any:
        return ts if epoch else iso_json(ts)

    return {
        "pipe": flow.pipe if flow else 0,
        "parents": list(flow.parents) if flow else [],
        "unique_until": when(flow.unique_until if flow else None),
        "secrets_masked": mask_payload(j.payload) != j.payload,
        "attempts": [
            {
                "attempt": a.attempt,
                "token": a.token,
                "worker_id": a.worker_id,
                "started_at": when(a.started_at),
                "finished_at": when(a.finished_at),
                "outcome": a.outcome,
                "error": None if a.error is None else _json_or_text(a.error),
            }
            for a in backend.job_attempts(j.id)
        ],
        "logs": [
            {
                "attempt": r.attempt,
                "ts": when(r.ts),
                "level": r.level,
                "logger": r.logger,
                "message": r.message,
            }
            for r in backend.job_log_list(JobLogListParams(j.id))
        ],
        # durable steps (docs/durable.md): result and error as stored JSON text
        "steps": [
            {
                "position": s.position,
                "name": s.name,
                "state": s.state,
                "result": s.result,
                "error": s.error,
                "attempts": s.attempts,
                "started_at": when(s.started_at),
                "finished_at": when(s.finished_at),
            }
            for s in (backend.job_step_list(j.id) if "steps" in backend.features else ())
        ],
        # events sent to it and not consumed yet: the import delivers them still
        "events": [
            {"name": e.name, "payload": e.payload, "sent_at": when(e.sent_at or None)}
            for e in (backend.job_event_list(j.id) if "steps" in backend.features else ())
        ],
    }


def open_private(path: str) -> IO[str]:
    """``path`` for writing text, as a 0600 file (an export holds job arguments and
    results); a FIFO or device (``-o /dev/stdout``) is written as it is."""
    return open(create_private(path, exclusive=False), "w", newline="", encoding="utf-8")


def _write(out: IO[str], writer: csv.DictWriter[str] | None, data: dict[str, Any]) -> None:
    if writer is None:
        out.write(json.dumps(data, default=str) + "\n")
        return
    writer.writerow({k: _csv_value(v) for k, v in data.items()})


def _csv_value(value: Any) -> Any:
    """A CSV cell: JSON values as JSON, text with lone surrogates (a row written outside
    the API) made encodable."""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, str):
        return printable(value)
    return value
