"""The benchmark suite cannot rot: ``python -m bench run --quick`` runs end to end.

Asserts that the CSVs exist and that every measured run verified its job count; never a
timing. Needs redis-server on PATH (the suite starts its own on a free loopback port).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.skipif(
    shutil.which("redis-server") is None and os.environ.get("CI") != "true",
    reason="redis-server not on PATH",
)
def test_quick_suite_runs_and_every_run_verifies(tmp_path: Path) -> None:
    for module in ("huey", "psutil", "matplotlib"):
        try:
            __import__(module)
        except ImportError:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{module} missing: `make test` installs the [bench] extra")
            pytest.skip(f"{module} not installed (pip install -e '.[bench]')")
    out = tmp_path / "quick"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "run", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    meta = json.loads((out / "meta.json").read_text())
    available = [a for a, c in meta["checks"].items() if c["available"]]
    assert available, meta["checks"]
    for scen in ("E1", "E2", "W1", "W2", "W3", "W4", "W5"):
        path = out / f"{scen}.csv"
        assert path.exists(), f"{scen}.csv missing"
        rows = list(csv.DictReader(path.open()))
        assert rows, f"{scen}.csv is empty"
        for row in rows:
            assert row["valid"] == "True", row
            if row.get("done"):
                # the run's own verification: every job ran exactly once
                assert row["done"] == row["distinct"] == row["n"], row
    # W5 in-process: the conveyor arm spawned one process that enqueued and ran a job
    w5 = {r["arm"]: r for r in csv.DictReader((out / "W5.csv").open())}
    assert float(w5["conveyor-sqlite"]["inprocess_first_job_ms"]) > 0, w5
    assert float(w5["conveyor-sqlite"]["python_start_ms"]) > 0, w5
    assert (out / "report.md").exists()
