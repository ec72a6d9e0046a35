"""W4: thread vs process vs interpreter pools on CPU, IO and mixed jobs.

For each pool, workload and concurrency: a fresh SQLite store pre-filled with N jobs, a
fresh ``conveyor worker --burst`` subprocess, throughput measured from the first job
started to the last one finished (from the store's own timestamps, so worker start-up is
excluded), and the peak RSS of the worker's whole process tree (worker + children),
sampled every 20 ms (psutil if installed, else /proc). Marginal RSS per extra unit is
``(peak(c) - peak(1)) / (c - 1)``.

Run it with the Python whose pools you want (the interpreter pool needs 3.13):

    .venv313/bin/python bench/w4_pools.py                 # N=300, all pools
    W4_N=1000 W4_REPEAT=5 W4_POOLS=thread,process .venv/bin/python bench/w4_pools.py

Prints a markdown table (and writes it to bench/results/w4_pools.md).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
N = int(os.environ.get("W4_N", "300"))
CONCURRENCY = [int(c) for c in os.environ.get("W4_CONCURRENCY", "1,2,4").split(",")]
WORKLOADS = os.environ.get("W4_WORKLOADS", "cpu,io,mixed").split(",")
DEFAULT_POOLS = "thread,process,interpreter" if sys.version_info >= (3, 13) else "thread,process"
POOLS = os.environ.get("W4_POOLS", DEFAULT_POOLS).split(",")
REPEAT = int(os.environ.get("W4_REPEAT", "3"))  # median of this many fresh workers
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants."""
    try:
        import psutil  # type: ignore[import-untyped]

        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
        total = 0
        for p in procs:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        return total
    except ImportError:
        pass
    except Exception:
        return 0
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            statm = Path(f"/proc/{entry}/statm").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        rss[int(entry)] = int(statm.split()[1]) * PAGE
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return total


_ENQUEUE = """
import sys
sys.path.insert(0, sys.argv[1])
import w4_tasks as t
workload, n = sys.argv[2], int(sys.argv[3])
if workload == "mixed":  # alternate cpu and io, in one batch
    t.cpu.enqueue_many([[] for _ in range((n + 1) // 2)])
    t.io.enqueue_many([[] for _ in range(n // 2)])
else:
    getattr(t, workload).enqueue_many([[] for _ in range(n)])
"""


def enqueue(url: str, workload: str) -> None:
    subprocess.run(
        [sys.executable, "-c", _ENQUEUE, str(BENCH), workload, str(N)],
        check=True,
        env={**os.environ, "CONVEYOR_URL": url},
    )


def run_one(pool: str, workload: str, concurrency: int) -> tuple[float, float]:
    """(jobs/s, peak tree RSS MiB) for one fresh worker."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "w4.db"
        url = f"sqlite:///{db}"
        enqueue(url, workload)
        env = {
            **os.environ,
            "CONVEYOR_URL": url,
            "PYTHONPATH": os.pathsep.join([str(BENCH), str(ROOT)]),
        }
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from conveyor.cli.main import main; main()",
                "worker",
                "w4_tasks:app",
                "--pool",
                pool,
                "-c",
                str(concurrency),
                "--burst",
                "--log-level",
                "WARNING",
            ],
            cwd=tmp,
            env=env,
        )
        peak = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, tree_rss(proc.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        rc = proc.wait(timeout=600)
        done.set()
        sampler.join()
        if rc != 0:
            raise RuntimeError(f"worker exited {rc} ({pool}/{workload}/c={concurrency})")
        with sqlite3.connect(db) as conn:
            first, last, ok = conn.execute(
                "SELECT min(started_at), max(finished_at), count(*) FROM jobs "
                "WHERE state = 'succeeded'"
            ).fetchone()
        if ok != N:
            raise RuntimeError(f"only {ok}/{N} jobs succeeded ({pool}/{workload})")
        return N / (last - first), peak / 2**20


def main() -> None:
    rows = []
    header = "| workload | c | pool | jobs/s | vs c=1 | peak RSS (MiB) | marginal RSS/unit (MiB) |"
    print(
        f"W4 on Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, N={N} jobs/run, "
        f"median of {REPEAT}"
    )
    print(header)
    print("|---|---|---|---|---|---|---|")
    for workload in WORKLOADS:
        for pool in POOLS:
            base: tuple[float, float] | None = None
            for c in CONCURRENCY:
                runs = sorted(run_one(pool, workload, c) for _ in range(REPEAT))
                rate = runs[len(runs) // 2][0]
                peak = sorted(r[1] for r in runs)[len(runs) // 2]
                if base is None:
                    base = (rate, peak)
                marginal = "-" if c == 1 else f"{(peak - base[1]) / (c - 1):.1f}"
                row = (
                    f"| {workload} | {c} | {pool} | {rate:.0f} | {rate / base[0]:.2f}x | "
                    f"{peak:.0f} | {marginal} |"
                )
                print(row, flush=True)
                rows.append(row)
    out = BENCH / "results" / "w4_pools.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        "\n".join(
            [
                f"W4, Python {sys.version.split()[0]}, N={N}, median of {REPEAT}",
                "",
                header,
                "|---|---|---|---|---|---|---|",
                *rows,
                "",
            ]
        )
    )


if __name__ == "__main__":
    main()
