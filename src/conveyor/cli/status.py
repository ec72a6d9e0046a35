"""``conveyor status``: counts per queue and state, oldest ready age, live workers."""

from __future__ import annotations

import datetime
import time

import click
from rich.console import Console
from rich.table import Table

from conveyor.backends.base import JobListParams
from conveyor.cli.common import age, echo_json, open_app, since, store_options
from conveyor.states import JobState

STATES = [s.value for s in JobState]


@click.command("status")
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(url: str | None, app_spec: str | None, as_json: bool) -> None:
    """Queues, states and workers of a store."""
    app = open_app(url, app_spec)
    backend = app.backend
    stats = backend.queue_stats()
    workers = backend.worker_list()
    running = backend.job_list(JobListParams(state=JobState.RUNNING, limit=20))
    features = backend.features
    schedules = backend.periodic_list() if "periodic" in features else []
    now = time.time()
    if as_json:
        echo_json(
            {
                "url": backend.url,
                "queues": [
                    {"queue": s.queue, "counts": s.counts, "oldest_ready_age": s.oldest_ready_age}
                    for s in stats
                ],
                "workers": [
                    {
                        "id": w.id,
                        "host": w.host,
                        "pid": w.pid,
                        "pool": w.pool,
                        "concurrency": w.concurrency,
                        "queues": list(w.queues),
                        "running": w.running,
                        "heartbeat_age": now - w.heartbeat_at,
                        "last_fetch_age": None
                        if w.last_fetch_at is None
                        else now - w.last_fetch_at,
                    }
                    for w in workers
                ],
                "running": [
                    {
                        "id": j.id,
                        "task": j.task,
                        "worker_id": j.worker_id,
                        "progress": j.progress,
                        "progress_message": j.progress_message,
                    }
                    for j in running
                ],
                "periodic": [
                    {
                        "name": p.name,
                        "spec": p.spec,
                        "last_slot": p.last_slot,
                        "last_fired_at": p.last_fired_at,
                        "last_job_id": p.last_job_id,
                        "next_slot": p.next_slot,
                    }
                    for p in schedules
                ],
            }
        )
        return
    console = Console()
    table = Table(title=f"queues — {backend.url}")
    table.add_column("queue")
    for state in STATES:
        table.add_column(state, justify="right")
    table.add_column("oldest ready", justify="right")
    for s in stats:
        table.add_row(
            s.queue, *[str(s.counts.get(st, 0)) for st in STATES], age(s.oldest_ready_age)
        )
    console.print(table)
    wt = Table(title="workers")
    for col in ("id", "pool", "c", "running", "queues", "heartbeat", "last fetch"):
        wt.add_column(col)
    for w in workers:
        wt.add_row(
            w.id,
            w.pool,
            str(w.concurrency),
            str(w.running),
            ",".join(w.queues),
            since(w.heartbeat_at) + " ago",
            since(w.last_fetch_at) + " ago",
        )
    console.print(wt)
    if running:
        rt = Table(title="running jobs (first 20)")
        for col in ("id", "task", "worker", "progress", "message"):
            rt.add_column(col)
        for j in running:
            rt.add_row(
                j.id,
                j.task,
                j.worker_id or "-",
                progress_text(j.progress),
                j.progress_message or "",
            )
        console.print(rt)

    if schedules:
        pt = Table(title="periodic")
        for col in ("schedule", "spec", "last fire", "last job", "next fire"):
            pt.add_column(col)
        for p in schedules:
            last = (
                "-" if p.last_slot is None else f"{clock(p.last_slot)} ({since(p.last_slot)} ago)"
            )
            nxt = (
                "-"
                if p.next_slot is None
                else f"{clock(p.next_slot)} (in {age(max(0.0, p.next_slot - now))})"
            )
            pt.add_row(p.name, p.spec, last, p.last_job_id or "-", nxt)
        console.print(pt)


def progress_text(fraction: float | None) -> str:
    """'40%' or '-' (no progress reported)."""
    return "-" if fraction is None else f"{fraction * 100:.0f}%"


def clock(ts: float) -> str:
    """Local wall time of an epoch timestamp, to the second."""
    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
