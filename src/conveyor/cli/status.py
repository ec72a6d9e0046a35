"""``conveyor status``: counts per queue and state, oldest ready age, live workers; with
``--json`` also run and wait time percentiles per task over the last hour
(conveyor/durations.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import click

from conveyor.backends.base import (
    OPERATOR_COUNT_CAP,
    OPERATOR_EXACT_UP_TO,
    JobListParams,
    JobRecord,
    PeriodicRecord,
    QueueStats,
    QueueStatsParams,
    WorkerInfo,
)
from conveyor.backends.records import by_backlog, count_text
from conveyor.cli.common import STATES, age, echo_json, since, store_options
from conveyor.cli.config import open_app
from conveyor.cli.output import Column, Output, iso_time, utc_option
from conveyor.redaction import redacted
from conveyor.states import JobState

#: Queues in the text table at most (the largest backlogs).
STATUS_QUEUES = 50


@click.command("status")
@store_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@utc_option
def status(url: str | None, app_spec: str | None, as_json: bool, utc: bool) -> None:
    """Queues, states and workers of a store."""
    app = open_app(url, app_spec)
    backend = app.backend
    # capped: a count past the cap reads "1000+" (exact on stores that keep counts)
    stats = backend.queue_stats(
        QueueStatsParams(cap=OPERATOR_COUNT_CAP, exact_up_to=OPERATOR_EXACT_UP_TO)
    )
    workers = backend.worker_list()
    running = backend.job_list(JobListParams(state=JobState.RUNNING, limit=20))
    features = backend.features
    schedules = backend.periodic_list() if "periodic" in features else []
    now = time.time()
    if as_json:
        from conveyor import durations  # only --json has them

        document = _status_document(backend.url, stats, workers, running, schedules, now)
        found, jobs = durations.recent(backend, now)
        document["durations"] = {
            "window_s": 3600,
            "jobs": jobs,
            "tasks": [d.as_json() for d in found],
        }
        echo_json(document)
        return
    _print_status(backend.url, stats, workers, running, schedules, now, utc=utc)


def _status_document(
    url: str,
    stats: Sequence[QueueStats],
    workers: Sequence[WorkerInfo],
    running: Sequence[JobRecord],
    schedules: Sequence[PeriodicRecord],
    now: float,
) -> dict[str, Any]:
    """``status --json``: the same facts as the tables, ages in seconds."""
    return {
        "url": redacted(url),
        "queues": [
            {
                "queue": s.queue,
                "counts": s.counts,
                # the states whose count is a lower bound (a capped read stopped there)
                "capped": sorted(s.capped),
                "oldest_ready_age": s.oldest_ready_age,
            }
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
                "last_fetch_age": None if w.last_fetch_at is None else now - w.last_fetch_at,
                "problems": list(w.problems),
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


def _print_status(
    url: str,
    stats: Sequence[QueueStats],
    workers: Sequence[WorkerInfo],
    running: Sequence[JobRecord],
    schedules: Sequence[PeriodicRecord],
    now: float,
    *,
    utc: bool,
) -> None:
    """The tables: queues, live workers, then running jobs and periodic schedules if any."""
    out = Output(sections=True)
    _queues_table(out, url, stats)
    _workers_table(out, workers)
    if running:
        _running_table(out, running)
    if schedules:
        _periodic_table(out, schedules, now, utc=utc)


def _queues_table(out: Output, url: str, stats: Sequence[QueueStats]) -> None:
    # The largest backlogs when there are many queues (10,000 made a 940 KB table):
    # `conveyor queues` and --json list every one.
    shown = stats if len(stats) <= STATUS_QUEUES else by_backlog(stats)[:STATUS_QUEUES]
    out.table(
        [
            Column("queue", key=True),
            *[Column(state, key=True, right=True) for state in STATES],
            Column("oldest ready", right=True),
        ],
        [
            [
                s.queue,
                *[count_text(s.counts, s.capped, st) for st in STATES],
                age(s.oldest_ready_age),
            ]
            for s in shown
        ],
        title=f"queues — {redacted(url)}",
        empty=f"no queues in {redacted(url)}",
    )
    if any(s.capped for s in shown):
        out.line(
            f"n+: at least n (counted up to {OPERATOR_COUNT_CAP}; exact: conveyor queue-counts on)"
        )
    if len(shown) < len(stats):
        out.line(
            f"the {len(shown)} queues with the largest backlog of {len(stats):,}; "
            "all of them: conveyor queues"
        )


def _workers_table(out: Output, workers: Sequence[WorkerInfo]) -> None:
    out.table(
        [
            Column("id", key=True),
            Column("pool", key=True),
            Column("c", key=True, right=True),
            Column("running", key=True, right=True),
            Column("queues", key=True),
            # Ages without " ago", so that a pipe's columns split on whitespace.
            Column("since heartbeat", right=True),
            Column("since fetch", right=True),
        ],
        [
            [
                w.id,
                w.pool,
                w.concurrency,
                w.running,
                ",".join(w.queues),
                since(w.heartbeat_at),
                since(w.last_fetch_at),
            ]
            for w in workers
        ],
        title="workers",
        empty="no live workers",
    )


def _running_table(out: Output, running: Sequence[JobRecord]) -> None:
    out.table(
        [
            Column("id", key=True),
            Column("task", key=True),
            Column("worker", key=True),
            Column("progress", right=True),
            Column("message"),
        ],
        [
            [
                j.id,
                j.task,
                j.worker_id or "-",
                progress_text(j.progress),
                j.progress_message or "",
            ]
            for j in running
        ],
        title="running jobs (first 20)",
        empty="no running jobs",
    )


def _periodic_table(
    out: Output, schedules: Sequence[PeriodicRecord], now: float, *, utc: bool
) -> None:
    out.table(
        [
            Column("schedule", key=True),
            Column("spec", key=True),
            Column("last fire"),
            Column("last job", key=True),
            Column("next fire"),
            Column("due in", right=True),
        ],
        [
            [
                p.name,
                p.spec,
                iso_time(p.last_slot, utc=utc),
                p.last_job_id or "-",
                iso_time(p.next_slot, utc=utc),
                "-" if p.next_slot is None else age(max(0.0, p.next_slot - now)),
            ]
            for p in schedules
        ],
        title="periodic",
        empty="no periodic schedules",
    )


def progress_text(fraction: float | None) -> str:
    """'40%' or '-' (no progress reported)."""
    return "-" if fraction is None else f"{fraction * 100:.0f}%"
