"""Issue 16's targets and the report's floor columns, read from rows shaped like a run's
CSVs (strings, as ``csv.DictReader`` gives them); and ``--append``'s merge of a later
scenario into an earlier run's metadata and CSVs. No process is started."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import pytest

try:
    from bench import report, runner, targets
except ImportError as exc:  # psutil / rich: the [bench] extra
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(
        f"bench dependencies missing ({exc}): pip install -e '.[bench]'", allow_module_level=True
    )


def _row(scen: str, param: str, arm: str, **metrics: float) -> dict[str, Any]:
    return {
        "scenario": scen,
        "param": param,
        "arm": arm,
        "warmup": "False",
        "valid": "True",
        **{k: str(v) for k, v in metrics.items()},
    }


def _verdicts(rows: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[str, str]]:
    """target label -> (measured cell, verdict), from the markdown table."""
    out = {}
    for line in targets.check(rows)[2:]:
        label, measured, verdict = (c.strip() for c in line.strip("|").split(" | "))
        out[label] = (measured, verdict)
    return out


def test_targets_read_default_arms_floors_and_the_best_peer() -> None:
    rows = {
        "W1": [
            _row("W1", "10000", "conveyor-sqlite-default", jobs_per_s=16_000, cpu_s_per_1000=0.2),
            # a tuned conveyor arm is faster, and no target may read it
            _row("W1", "10000", "conveyor-sqlite-c8-prefetch", jobs_per_s=30_000),
            _row("W1", "10000", "dramatiq-p2t8", jobs_per_s=3_000),
            _row("W1", "10000", "huey-sqlite-thread1", jobs_per_s=4_500),
            _row("W1", "10000", "conveyor-sqlite-durable", jobs_per_s=2_000),
        ],
        "E1": [
            _row("E1", "1000", "conveyor-sqlite-default", jobs_per_s=8_000),
            _row("E1", "1000", "floor-sqlite", jobs_per_s=10_000),
            _row("E1", "10000", "conveyor-sqlite-default", jobs_per_s=6_000),
            _row("E1", "10000", "floor-sqlite", jobs_per_s=10_000),
        ],
        "W6": [
            _row("W6", "drain 1 worker", "conveyor-sqlite-default", jobs_per_s=10_000),
            _row("W6", "drain 2 workers", "conveyor-sqlite-default", jobs_per_s=15_000),
            _row("W6", "4 producers + 2 workers", "conveyor-sqlite-default", enqueue_p99_ms=12),
        ],
    }
    v = _verdicts(rows)
    assert v["W1 sqlite >= 15,000 jobs/s (default flags)"] == (
        "16,000 (conveyor-sqlite-default)",
        "met",
    )
    peer = next(k for k in v if k.startswith("W1 sqlite >= 4x the best peer"))
    assert "(huey-sqlite-thread1 4,500/s)" in peer  # the fastest peer, on any storage
    assert v[peer] == ("3.56x (conveyor-sqlite-default)", "**MISSED**")
    cpu = "W1 sqlite CPU per 1,000 noop jobs <= 0.10 CPU-s (default flags)"
    assert v[cpu][1] == "**MISSED**"
    # E1: every N must reach 0.7x the floor at the same N; 0.60x at 10,000 misses
    e1 = v["E1 sqlite single enqueue >= 0.7x floor-sqlite (same N, every N)"]
    assert e1 == (
        "0.80x at n=1,000; 0.60x at n=10,000 (conveyor-sqlite-default / floor-sqlite)",
        "**MISSED**",
    )
    assert v["W1 sqlite durable (synchronous=FULL) >= 3,000 jobs/s"][1] == "**MISSED**"
    w6 = next(k for k in v if k.startswith("W6 two workers"))
    assert v[w6] == ("1.50x (conveyor-sqlite-default)", "met")
    assert v["W6 p99 enqueue latency <= 20 ms, four producers while two workers run"][1] == "met"
    # what the rows do not hold is said, not guessed
    assert v["W1 redis >= 12,000 jobs/s (default flags)"] == ("not measured", "-")
    assert v["E2 sqlite enqueue_many >= 0.8x floor-sqlite (same N, every N)"] == (
        "not measured",
        "-",
    )


def test_e1_table_prints_the_floor_beside_each_arm_and_the_ratio() -> None:
    rs = [
        _row("E1", "1000", "conveyor-sqlite-default", jobs_per_s=7_000),
        _row("E1", "1000", "floor-sqlite", jobs_per_s=10_000),
        _row("E1", "1000", "conveyor-postgres-thread", jobs_per_s=3_000),
    ]
    storage = {
        "conveyor-sqlite-default": "sqlite",
        "floor-sqlite": "sqlite",
        "conveyor-postgres-thread": "postgres",
    }
    lines = report.table("E1", rs, storage)
    assert lines[0].endswith("| floor (same N) | x floor |")
    by_arm = {ln.split(" | ")[1]: ln for ln in lines[2:]}
    assert by_arm["conveyor-sqlite-default"].endswith("| 10,000 (floor-sqlite) | 0.70x |")
    assert by_arm["floor-sqlite"].endswith("| - | - |")
    assert by_arm["conveyor-postgres-thread"].endswith("| - | - |")  # no PostgreSQL floor


def test_append_merges_meta_and_replaces_only_the_rerun_arms_rows(tmp_path: Path) -> None:
    base = {
        "stamp": "A",
        "quick": False,
        "suites": ["E1", "W1"],
        "arms": ["conveyor-sqlite-default", "huey-sqlite-thread1"],
        "scale": {"W1": 10_000, "iterations": 3},
        "checks": {
            "conveyor-sqlite-default": {"storage": "sqlite", "unsupported": {}},
            "huey-sqlite-thread1": {"storage": "sqlite", "unsupported": {}},
        },
        "checklist": ["kept"],
    }
    new = {
        "stamp": "B",
        "suites": ["W6"],
        "arms": ["conveyor-sqlite-default"],
        "scale": {"W1": 10_000, "iterations": 3, "W6_rate": 2_000},
        "overrides": {},
        "checks": {"conveyor-sqlite-default": {"storage": "sqlite", "unsupported": {}}},
        "environment": {"loadavg_start": [1, 1, 1], "loadavg_end": [2, 2, 2]},
        "checklist": ["dropped"],
    }
    meta = runner._merge_meta(base, new)
    assert meta["suites"] == ["E1", "W1", "W6"] and meta["stamp"] == "A"
    assert meta["checklist"] == ["kept"]
    assert meta["scale"]["W6_rate"] == 2_000
    assert "W6" in meta["checks"]["huey-sqlite-thread1"]["unsupported"]
    assert "W6" not in meta["checks"]["conveyor-sqlite-default"]["unsupported"]
    assert [a["stamp"] for a in meta["appended"]] == ["B"]
    # a W6.csv already there: the rerun arm's rows are replaced, the others kept
    with open(tmp_path / "W6.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["scenario", "param", "arm"])
        w.writeheader()
        w.writerow({"scenario": "W6", "param": "drain 1 worker", "arm": "conveyor-sqlite-default"})
        w.writerow({"scenario": "W6", "param": "drain 1 worker", "arm": "conveyor-sqlite-durable"})
    fresh = [{"scenario": "W6", "param": "drain 2 workers", "arm": "conveyor-sqlite-default"}]
    merged = runner._merge_rows(str(tmp_path), {"W6": fresh})
    assert [(r["param"], r["arm"]) for r in merged["W6"]] == [
        ("drain 1 worker", "conveyor-sqlite-durable"),
        ("drain 2 workers", "conveyor-sqlite-default"),
    ]
