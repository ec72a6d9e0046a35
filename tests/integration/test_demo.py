"""`conveyor demo` (the README's first command) runs end to end on a fresh directory."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path


def test_demo_runs_every_job_and_reports_them(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CONVEYOR_URL", "CONVEYOR_DEMO_URL")}
    proc = subprocess.run(
        [sys.executable, "-m", "conveyor.cli", "demo", "--jobs", "300"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "demo summary" in proc.stdout
    db = tmp_path / ".conveyor-demo" / "demo.db"
    with sqlite3.connect(db) as conn:
        counts = dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
        retried = conn.execute("SELECT COUNT(*) FROM jobs WHERE attempt > 1").fetchone()[0]
    # 300 jobs: 2 doomed (dead after 2 attempts), the rest succeed; flaky ones retried.
    assert counts == {"succeeded": 298, "dead": 2}
    assert retried >= 30
    row = re.search(r"│\s*300\s*│\s*298\s*│\s*(\d+)\s*│\s*2\s*│", proc.stdout)
    assert row is not None and int(row.group(1)) == retried
