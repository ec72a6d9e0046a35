"""Issue 16's targets (SQLite, Redis: speed at default flags, enqueue as ratios to the
floors, cold start, two workers, durable mode) and issue 14's (PostgreSQL), checked
against one run directory: met / **MISSED** / not measured, plainly.

"Default flags" targets read the ``conveyor-*-default`` arms (``conveyor worker`` with no
tuning flag); enqueue targets compare the same arm with the floor arm of its storage at
the same N (``floor-sqlite``, ``floor-redis``: the raw client in the same run).

>>> check({})[2]
'| W1 sqlite >= 15,000 jobs/s (default flags) | not measured | - |'
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from bench.report import summarise

Rows = dict[str, list[dict[str, Any]]]
Got = tuple[str, float] | None

#: the arms "default flags" targets read
DEFAULT = {"sqlite": "conveyor-sqlite-default", "redis": "conveyor-redis-default"}
DURABLE = "conveyor-sqlite-durable"
FLOOR = {"sqlite": "floor-sqlite", "redis": "floor-redis"}
#: W6's params (bench/runner.py writes them)
W6_ONE, W6_TWO = "drain 1 worker", "drain 2 workers"


def _best(
    rows: Rows, scen: str, metric: str, prefix: str, param: str | None = None, lowest: bool = False
) -> Got:
    """The best median of ``metric`` among arms whose name starts with ``prefix``."""
    found = [
        (arm, statistics.median(v))
        for (p, arm), v in summarise(rows.get(scen, []), metric).items()
        if arm.startswith(prefix) and (param is None or p == param)
    ]
    if not found:
        return None
    return (min if lowest else max)(found, key=lambda x: x[1])


def _of(rows: Rows, scen: str, metric: str, arm: str, param: str | None = None) -> Got:
    """The median of ``metric`` for exactly ``arm`` (at ``param``, or its one param)."""
    found = [
        statistics.median(v)
        for (p, a), v in summarise(rows.get(scen, []), metric).items()
        if a == arm and (param is None or p == param)
    ]
    return (arm, found[0]) if len(found) == 1 else None


def best_peer(rows: Rows) -> Got:
    """The fastest W1 arm that is not conveyor and not a floor, on any storage."""
    found = [
        (arm, statistics.median(v))
        for (_, arm), v in summarise(rows.get("W1", []), "jobs_per_s").items()
        if not arm.startswith(("conveyor-", "floor-"))
    ]
    return max(found, key=lambda x: x[1]) if found else None


def floor_ratios(rows: Rows, scen: str, arm: str, floor: str) -> dict[str, float]:
    """N -> median jobs/s of ``arm`` over the median of ``floor`` at the same N."""
    rates = summarise(rows.get(scen, []), "jobs_per_s")
    out = {}
    for (param, a), v in rates.items():
        f = rates.get((param, floor))
        if a == arm and f:
            out[param] = statistics.median(v) / statistics.median(f)
    return dict(sorted(out.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))


def check(rows: Rows) -> list[str]:
    lines = ["| target | measured | verdict |", "|---|---|---|"]

    def add(label: str, got: Got, ok: Callable[[float], bool], fmt: str = "{:,.0f}") -> None:
        if got is None:
            lines.append(f"| {label} | not measured | - |")
            return
        verdict = "met" if ok(got[1]) else "**MISSED**"
        lines.append(f"| {label} | {fmt.format(got[1])} ({got[0]}) | {verdict} |")

    def ratio(label: str, conv: Got, peer: Got, x: float) -> None:
        if conv and peer:
            add(
                f"{label} ({peer[0]} {peer[1]:,.0f}/s)",
                (conv[0], conv[1] / peer[1]),
                lambda v: v >= x,
                "{:.2f}x",
            )
        else:
            add(label, None, lambda v: False)

    # Throughput at default flags (W1), against the peers of the same run.
    sqlite_w1 = _of(rows, "W1", "jobs_per_s", DEFAULT["sqlite"])
    redis_w1 = _of(rows, "W1", "jobs_per_s", DEFAULT["redis"])
    add("W1 sqlite >= 15,000 jobs/s (default flags)", sqlite_w1, lambda v: v >= 15_000)
    ratio(
        "W1 sqlite >= 4x the best peer (fastest W1 arm that is not conveyor or a floor, "
        "any storage)",
        sqlite_w1,
        best_peer(rows),
        4,
    )
    add("W1 redis >= 12,000 jobs/s (default flags)", redis_w1, lambda v: v >= 12_000)
    ratio(
        "W1 redis >= 3.5x Dramatiq's best",
        redis_w1,
        _best(rows, "W1", "jobs_per_s", "dramatiq"),
        3.5,
    )
    for backend, arm in DEFAULT.items():
        add(
            f"W1 {backend} CPU per 1,000 noop jobs <= 0.10 CPU-s (default flags)",
            _of(rows, "W1", "cpu_s_per_1000", arm),
            lambda v: v <= 0.10,
            "{:.3f} CPU-s",
        )
    # Enqueue as ratios to the floor of the same run, at every N both measured.
    for scen, what, targets in (
        ("E1", "single enqueue", {"sqlite": 0.7, "redis": 0.8}),
        ("E2", "enqueue_many", {"sqlite": 0.8, "redis": 0.8}),
    ):
        for backend, x in targets.items():
            arm, floor = DEFAULT[backend], FLOOR[backend]
            label = f"{scen} {backend} {what} >= {x}x {floor} (same N, every N)"
            got = floor_ratios(rows, scen, arm, floor)
            if not got:
                lines.append(f"| {label} | not measured | - |")
                continue
            cell = "; ".join(f"{r:.2f}x at n={int(n):,}" for n, r in got.items())
            verdict = "met" if all(r >= x for r in got.values()) else "**MISSED**"
            lines.append(f"| {label} | {cell} ({arm} / {floor}) | {verdict} |")
    # Cold start (W5).
    add(
        "W5 sqlite first job in-process (import, open, enqueue, run) <= 50 ms",
        # No worker flag is involved, so the suite measures it on one arm per backend
        # (bench/arms/conveyor_arm.py: in_process_cmd): the default arm's if it has it.
        _of(rows, "W5", "inprocess_first_job_ms", DEFAULT["sqlite"])
        or _of(rows, "W5", "inprocess_first_job_ms", "conveyor-sqlite"),
        lambda v: v <= 50,
        "{:.0f} ms",
    )
    for backend, limit in (("sqlite", 200), ("redis", 250)):
        add(
            f"W5 {backend} `conveyor worker` ready <= {limit} ms (default flags)",
            _of(rows, "W5", "ready_ms", DEFAULT[backend]),
            lambda v, limit=limit: v <= limit,
            "{:.0f} ms",
        )
    # Durable mode: synchronous=FULL, every commit fsynced.
    add(
        "W1 sqlite durable (synchronous=FULL) >= 3,000 jobs/s",
        _of(rows, "W1", "jobs_per_s", DURABLE),
        lambda v: v >= 3_000,
    )
    # Two workers on one file (W6).
    one = _of(rows, "W6", "jobs_per_s", DEFAULT["sqlite"], W6_ONE)
    two = _of(rows, "W6", "jobs_per_s", DEFAULT["sqlite"], W6_TWO)
    if one and two:
        add(
            f"W6 two workers on one SQLite file >= 1.4x one (one: {one[1]:,.0f}/s, "
            f"two: {two[1]:,.0f}/s)",
            (two[0], two[1] / one[1]),
            lambda v: v >= 1.4,
            "{:.2f}x",
        )
    else:
        add("W6 two workers on one SQLite file >= 1.4x one", None, lambda v: False)
    producers = [
        (p, a)
        for (p, a) in summarise(rows.get("W6", []), "enqueue_p99_ms")
        if a == DEFAULT["sqlite"]
    ]
    add(
        "W6 p99 enqueue latency <= 20 ms, four producers while two workers run",
        _of(rows, "W6", "enqueue_p99_ms", DEFAULT["sqlite"], producers[0][0])
        if len(producers) == 1
        else None,
        lambda v: v <= 20,
        "{:.1f} ms",
    )
    # Issue 14: PostgreSQL, against its peers on the same server in the same run.
    conv = _best(rows, "W1", "jobs_per_s", "conveyor-postgres")
    for peer_name, x in (("procrastinate", 3), ("oban-py", 2)):
        ratio(
            f"W1 postgres >= {x}x {peer_name}", conv, _best(rows, "W1", "jobs_per_s", peer_name), x
        )
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
