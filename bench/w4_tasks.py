"""W4 workloads (as in seed 004): a CPU job (100k-iteration integer loop), an IO job
(sleep 5 ms). Imported by the benchmarked worker as ``w4_tasks:app`` (PYTHONPATH=bench)."""

from __future__ import annotations

import os
import time

import conveyor

app = conveyor.App(os.environ.get("CONVEYOR_URL", "sqlite:///:memory:"))


@app.task(name="w4.cpu")
def cpu() -> int:
    total = 0
    for i in range(100_000):
        total += i
    return total


@app.task(name="w4.io")
def io() -> None:
    time.sleep(0.005)
