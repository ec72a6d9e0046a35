"""``conveyor jobs`` (a filtered page of jobs) and ``conveyor job ID`` (one job in full:
record, every attempt with worker, timings, outcome, error and traceback, and its logs).

Example::

    conveyor jobs --state dead --where kwargs.user_id=42 --limit 20
    conveyor jobs --after 01JD... --json
    conveyor job 01JD8X2K3Q4R5S6T7V8W9XYZ
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from conveyor import records
from conveyor.backends.base import (
    Backend,
    JobDependenciesParams,
    JobFilter,
    JobListParams,
    JobLogListParams,
)
from conveyor.cli.common import echo_json, open_app, store_options
from conveyor.cli.filters import filter_options, job_dict


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def short(text: str | None, width: int = 40) -> str:
    if text is None:
        return "-"
    return text if len(text) <= width else text[: width - 1] + "…"


@click.command("jobs")
@store_options
@filter_options
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--after", metavar="ID", help="Page: only ids after this one.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def jobs(
    url: str | None,
    app_spec: str | None,
    job_filter: JobFilter,
    limit: int,
    after: str | None,
    as_json: bool,
) -> None:
    """List jobs matching the filters, in id (= creation) order."""
    backend = open_app(url, app_spec).backend
    found = backend.job_list(JobListParams(after_id=after, limit=limit, filter=job_filter))
    next_after = found[-1].id if len(found) == limit else None
    if as_json:
        echo_json({"jobs": [job_dict(j) for j in found], "next_after": next_after})
        return
    table = Table(title=f"jobs — {backend.url}")
    for col in (
        "id",
        "task",
        "queue",
        "state",
        "attempt",
        "created (UTC)",
        "finished (UTC)",
        "payload",
    ):
        table.add_column(col)
    for j in found:
        table.add_row(
            j.id,
            j.task,
            j.queue,
            str(j.state),
            f"{j.attempt}/{j.max_attempts}",
            when(j.created_at),
            when(j.finished_at),
            short(j.payload),
        )
    console = Console()
    console.print(table)
    if next_after:
        console.print(f"more: --after {next_after}")


@click.command("job")
@store_options
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def job(url: str | None, app_spec: str | None, job_id: str, as_json: bool) -> None:
    """One job in full: record, every attempt (with traceback), and its logs."""
    backend = open_app(url, app_spec).backend
    found = backend.job_get_many([job_id])
    if not found:
        raise click.ClickException(f"no job {job_id}")
    record = found[0]
    attempts = backend.job_attempts(job_id)
    logs = backend.job_log_list(JobLogListParams(job_id))
    parents = _parents(backend, job_id)
    if as_json:
        echo_json(
            {
                "job": job_dict(record),
                "depends_on": parents,
                "attempts": [_decoded(records.asdict(a)) for a in attempts],
                "logs": [records.asdict(r) for r in logs],
            }
        )
        return
    console = Console()
    data = job_dict(record)
    body = "\n".join(
        f"[bold]{k}[/]: {json.dumps(v) if isinstance(v, (dict, list)) else v}"
        for k, v in data.items()
        if k != "error"
    )
    console.print(Panel(body, title=f"job {record.id}", expand=False))
    if parents:
        deps = Table(title="depends on (workflow parents, in order)")
        for col in ("#", "job", "task", "state"):
            deps.add_column(col)
        for n, p in enumerate(parents, 1):
            deps.add_row(str(n), p["id"], p["task"], p["state"])
        console.print(deps)
    table = Table(title="attempts")
    for col in ("#", "token", "worker", "started (UTC)", "took", "outcome", "error"):
        table.add_column(col)
    for a in attempts:
        took = (
            "-"
            if a.started_at is None or a.finished_at is None
            else f"{a.finished_at - a.started_at:.3f}s"
        )
        err = _error(a.error)
        table.add_row(
            str(a.attempt),
            str(a.token),
            a.worker_id or "-",
            when(a.started_at),
            took,
            a.outcome,
            short(f"{err.get('type')}: {err.get('message')}", 60) if err else "-",
        )
    console.print(table)
    for a in attempts:
        tb = _error(a.error).get("traceback")
        if tb:
            console.print(
                Panel(str(tb).rstrip(), title=f"attempt {a.attempt} traceback", expand=False)
            )
    if record.error and not attempts:
        console.print(
            Panel(str(_error(record.error).get("traceback") or record.error), title="error")
        )
    console.print(f"[bold]logs[/] ({len(logs)})")
    for r in logs:
        console.print(
            f"{when(r.ts)} #{r.attempt} {r.level:<8} {r.logger}: {r.message}",
            markup=False,
            highlight=False,
        )


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
    try:
        value = json.loads(text)
    except ValueError:
        return {"type": "?", "message": text}
    return value if isinstance(value, dict) else {"message": text}


def _decoded(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("error"):
        data["error"] = _error(data["error"])
    return data
