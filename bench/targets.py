"""Issue 4's targets (SQLite, Redis) and issue 14's (PostgreSQL), checked against a run:
met / MISSED / not measured, plainly."""

from __future__ import annotations

import statistics
from typing import Any

from bench.report import summarise

Rows = dict[str, list[dict[str, Any]]]


def _best(
    rows: Rows, scen: str, metric: str, prefix: str, param: str | None = None, lowest: bool = False
) -> tuple[str, float] | None:
    """The best median of ``metric`` among arms whose name starts with ``prefix``."""
    found = [
        (arm, statistics.median(v))
        for (p, arm), v in summarise(rows.get(scen, []), metric).items()
        if arm.startswith(prefix) and (param is None or p == param)
    ]
    if not found:
        return None
    return (min if lowest else max)(found, key=lambda x: x[1])


def check(rows: Rows) -> list[str]:
    lines = ["| target | measured | verdict |", "|---|---|---|"]

    def add(label: str, got: tuple[str, float] | None, ok: Any, fmt: str = "{:,.0f}") -> None:
        if got is None:
            lines.append(f"| {label} | not measured | - |")
            return
        verdict = "met" if ok(got[1]) else "**MISSED**"
        lines.append(f"| {label} | {fmt.format(got[1])} ({got[0]}) | {verdict} |")

    for backend, floor, d_x, c_x in (("sqlite", 10_000, 4, 10), ("redis", 8_000, 2, 8)):
        conv = _best(rows, "W1", "jobs_per_s", f"conveyor-{backend}")
        dram = _best(rows, "W1", "jobs_per_s", "dramatiq")
        cel = _best(rows, "W1", "jobs_per_s", "celery")
        add(f"W1 {backend} >= {floor:,} jobs/s", conv, lambda v, f=floor: v >= f)
        for peer, x, name in ((dram, d_x, "Dramatiq"), (cel, c_x, "Celery")):
            if conv and peer:
                ratio = conv[1] / peer[1]
                add(
                    f"W1 {backend} >= {x}x {name}'s best ({peer[0]} {peer[1]:,.0f}/s)",
                    (conv[0], ratio),
                    lambda v, x=x: v >= x,
                    "{:.1f}x",
                )
            else:
                add(f"W1 {backend} >= {x}x {name}'s best", None, None)
    for backend, e1, e2 in (("sqlite", 20_000, 200_000), ("redis", 8_000, 100_000)):
        add(
            f"E1 {backend} >= {e1:,}/s",
            _best(rows, "E1", "jobs_per_s", f"conveyor-{backend}"),
            lambda v, t=e1: v >= t,
        )
        add(
            f"E2 {backend} >= {e2:,}/s",
            _best(rows, "E2", "jobs_per_s", f"conveyor-{backend}"),
            lambda v, t=e2: v >= t,
        )
    for backend in ("sqlite", "redis"):
        pre = f"conveyor-{backend}"
        add(
            f"W2 {backend} p50 <= 2 ms",
            _best(rows, "W2", "p50_ms", pre, lowest=True),
            lambda v: v <= 2,
            "{:.2f} ms",
        )
        add(
            f"W2 {backend} idle worker CPU < 2% of a core",
            _best(rows, "W2", "idle_cpu_pct", pre, lowest=True),
            lambda v: v < 2,
            "{:.2f}%",
        )
        add(
            f"W3 {backend} at 90%: p99 <= 50 ms",
            _best(rows, "W3", "p99_ms", pre, "90%", lowest=True),
            lambda v: v <= 50,
            "{:.1f} ms",
        )
        add(
            f"W3 {backend} at 90%: zero lost",
            _best(rows, "W3", "lost", pre, "90%", lowest=True),
            lambda v: v == 0,
            "{:.0f}",
        )
    for metric, what, limit in (
        ("ready_ms", "`conveyor worker` ready", 300),
        ("inprocess_first_job_ms", "first job after process start, in-process,", 50),
    ):
        for backend in ("sqlite", "redis"):
            add(
                f"W5 {backend} {what} <= {limit} ms",
                _best(rows, "W5", metric, f"conveyor-{backend}", lowest=True),
                lambda v, limit=limit: v <= limit,
                "{:.0f} ms",
            )
    # Issue 14: PostgreSQL, against its peers on the same server in the same run.
    conv = _best(rows, "W1", "jobs_per_s", "conveyor-postgres")
    for peer_name, x in (("procrastinate", 3), ("oban-py", 2)):
        peer = _best(rows, "W1", "jobs_per_s", peer_name)
        if conv and peer:
            add(
                f"W1 postgres >= {x}x {peer_name} ({peer[1]:,.0f}/s)",
                (conv[0], conv[1] / peer[1]),
                lambda v, x=x: v >= x,
                "{:.1f}x",
            )
        else:
            add(f"W1 postgres >= {x}x {peer_name}", None, None)
    add(
        "E2 postgres >= 100,000/s",
        _best(rows, "E2", "jobs_per_s", "conveyor-postgres"),
        lambda v: v >= 100_000,
    )
    add(
        "W2 postgres p50 <= 3 ms",
        _best(rows, "W2", "p50_ms", "conveyor-postgres", lowest=True),
        lambda v: v <= 3,
        "{:.2f} ms",
    )
    return lines
