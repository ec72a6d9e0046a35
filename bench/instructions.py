"""CPU instructions per job, counted with valgrind's callgrind: a speed budget CI can hold
on any machine (issue 26). Counts, not timings: the same code on the same Python gives
the same count (to well under 1%) on a loaded 2-core box and on an idle 64-core one.

Paths (each a fresh process of the Python running this module, ``PYTHONHASHSEED=0``):

* ``enqueue_single``: ``task.enqueue(i)`` N times on a SQLite store (one transaction each);
* ``enqueue_batch``: one ``task.enqueue_many`` of N jobs;
* ``claim_run_finish``: an in-process burst ``Worker`` at default settings draining N
  no-op jobs from a SQLite store filled beforehand by another, uncounted, process;
* ``cold_start``: import conveyor, open a fresh SQLite store, enqueue one job and run it
  with a burst ``Worker``; counted up to the job body (which leaves with ``os._exit``),
  less the instructions of ``python -c pass`` on the same interpreter.

Per-job figures are whole-program counts of two runs, one with 2N jobs and one with N:
``(I(2N) - I(N)) / N``. Everything that does not grow with the job count (interpreter
start, imports, schema creation, the worker's start and burst exit) is in both runs and
cancels; no marker inside the measured process is needed, so the harness measures
nothing of its own beyond a ``range`` loop. The limits are in ``bench/budget.toml``,
under ``[instructions."3.X"]``: instruction counts belong to one Python minor version
(3.12's interpreter executes a different number of instructions for the same code), so
the budget holds for the Python ``make test`` uses and is skipped, with the reason, on
one it has no figures for.

Example::

    python -m bench.instructions            # measure, print measured vs limit
    python -m bench.instructions --write    # store the measured values (+ margin) as limits
    python -m bench.instructions --check    # exit 1 when a path is over its limit
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = ROOT / "bench" / "budget.toml"
#: Jobs of the smaller run (the larger runs twice as many). Enough that a per-job figure
#: is not moved by batching steps (claims of ~40, WAL checkpoints every ~1,000 pages),
#: few enough that the eight valgrind runs take ~30 s.
JOBS = {"enqueue_single": 300, "enqueue_batch": 2000, "claim_run_finish": 1000}
#: The limit is the measured value plus this share (written by ``--write``). Enqueue and
#: cold start counts move by ~1% and 0.1% between runs. The worker's moves by up to ~10%
#: (measured 292k-349k a job on one tree): its threads' batching (claim sizes,
#: completer batches) follows wall-clock waits, which valgrind's 50x slow-down and the
#: machine's load change; hence 20% there. A per-job store statement more is caught
#: exactly by the store budget (tests/integration/test_store_budget.py) instead.
MARGIN = {
    "enqueue_single": 0.10,
    "enqueue_batch": 0.10,
    "claim_run_finish": 0.20,
    "cold_start": 0.10,
}
#: What the paths are, for the report and the toml's comments.
PATHS = {
    "enqueue_single": "task.enqueue, one SQLite transaction a job",
    "enqueue_batch": "task.enqueue_many, one call of N jobs",
    "claim_run_finish": "burst Worker (defaults) draining N no-op jobs, SQLite",
    "cold_start": "import + fresh SQLite store + first job, over `python -c pass`",
}

# The measured process: only the stdlib modules the interpreter loads anyway before
# conveyor. It leaves with os._exit once the path is done, so store teardown (close,
# WAL checkpoint of a file whose size differs between N and 2N) is not counted.
PROBE = r"""
import os, sys

mode, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "pass":
    os._exit(0)
import conveyor

app = conveyor.App(url)

@app.task
def noop(i: int) -> None:
    if mode == "cold_start":
        os._exit(0)

if mode == "fill":
    noop.enqueue_many([(i,) for i in range(n)])
    app.close()
elif mode == "enqueue_single":
    for i in range(n):
        noop.enqueue(i)
elif mode == "enqueue_batch":
    noop.enqueue_many([(i,) for i in range(n)])
elif mode == "claim_run_finish":
    worker = conveyor.Worker(app, burst=True)
    worker.run(install_signals=False)
    if next(worker.processed) != n:
        sys.exit(f"ran {next(worker.processed)} jobs, not {n}")
elif mode == "cold_start":
    noop.enqueue(41)
    conveyor.Worker(app, burst=True).run(install_signals=False)
    sys.exit("the job never ran")
os._exit(0)
"""

_COLLECTED = re.compile(r"Collected : (\d+)")


def python_key() -> str:
    """The budget's key for this interpreter: its minor version.

    >>> python_key().startswith("3.")
    True
    """
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def valgrind() -> str | None:
    """The valgrind binary, or None when it is not installed."""
    return shutil.which("valgrind")


def _env() -> dict[str, str]:
    # A fixed environment: hash seed, no user site, nothing of the caller's PYTHON*
    # settings (a PYTHONPATH or dev mode would change what runs).
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    return {**keep, "PYTHONHASHSEED": "0", "PYTHONNOUSERSITE": "1", "LC_ALL": "C.UTF-8"}


def _run(workdir: str, mode: str, n: int, *, counted: bool, url: str | None = None) -> int | None:
    """Run the probe in ``mode`` (under callgrind when ``counted``): its instruction count."""
    url = url or f"sqlite:///{tempfile.mkdtemp(dir=workdir)}/store.db"
    cmd = [sys.executable, os.path.join(workdir, "probe.py"), mode, url, str(n)]
    if counted:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
    done = subprocess.run(
        cmd, env=_env(), cwd=workdir, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode} (n={n}) failed: {done.stderr[-1500:]}")
    if not counted:
        return None
    found = _COLLECTED.findall(done.stderr)
    if not found:
        raise RuntimeError(f"no callgrind count for {mode}: {done.stderr[-800:]}")
    return int(found[-1])


def _filled(workdir: str, n: int) -> str:
    """A SQLite store holding ``n`` queued no-op jobs, written by an uncounted process."""
    url = f"sqlite:///{tempfile.mkdtemp(dir=workdir)}/store.db"
    _run(workdir, "fill", n, counted=False, url=url)
    return url


def measure(jobs: dict[str, int] | None = None, parallel: int | None = None) -> dict[str, float]:
    """Instructions per job of each path (``cold_start``: of the whole path over
    ``python -c pass``). Runs the valgrind processes ``parallel`` at a time (default:
    the machine's cores, at most 4): counts do not depend on the load."""
    jobs = {**JOBS, **(jobs or {})}
    workdir = tempfile.mkdtemp(prefix="bench-instr-")
    try:
        with open(os.path.join(workdir, "probe.py"), "w") as f:
            f.write(PROBE)
        # One uncounted run first: compiles every module to bytecode (a cold start with
        # a missing .pyc would count the compiler) and warms the page cache.
        _run(workdir, "cold_start", 1, counted=False)
        runs: dict[str, Callable[[], int | None]] = {
            "pass": lambda: _run(workdir, "pass", 0, counted=True)
        }
        runs["cold_start"] = lambda: _run(workdir, "cold_start", 1, counted=True)
        for path in ("enqueue_single", "enqueue_batch"):
            for k in (1, 2):
                n = jobs[path] * k
                runs[f"{path}/{k}"] = lambda p=path, n=n: _run(workdir, p, n, counted=True)
        for k in (1, 2):
            n = jobs["claim_run_finish"] * k
            url = _filled(workdir, n)
            runs[f"claim_run_finish/{k}"] = lambda n=n, url=url: _run(
                workdir, "claim_run_finish", n, counted=True, url=url
            )
        width = parallel or min(4, os.cpu_count() or 1)
        with ThreadPoolExecutor(width) as pool:
            futures = {name: pool.submit(fn) for name, fn in runs.items()}
            counts = {name: fut.result() or 0 for name, fut in futures.items()}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    per_job = {
        path: (counts[f"{path}/2"] - counts[f"{path}/1"]) / jobs[path]
        for path in ("enqueue_single", "enqueue_batch", "claim_run_finish")
    }
    per_job["cold_start"] = float(counts["cold_start"] - counts["pass"])
    per_job["python_start"] = float(counts["pass"])
    return per_job


def limits() -> dict[str, float]:
    """This Python's limits from bench/budget.toml (empty when it has none)."""
    table = tomllib.loads(BUDGET.read_text()).get("instructions", {})
    return {k: float(v) for k, v in table.get(python_key(), {}).items()}


def over_budget(
    measured: dict[str, float], limit: dict[str, float]
) -> dict[str, tuple[float, float]]:
    """The paths whose measured count is above their limit: name -> (measured, limit).

    >>> over_budget({"a": 11.0, "b": 9.0}, {"a": 10.0, "b": 10.0})
    {'a': (11.0, 10.0)}
    """
    return {k: (measured[k], v) for k, v in limit.items() if k in measured and measured[k] > v}


def report(measured: dict[str, float], limit: dict[str, float]) -> str:
    """Measured vs limit, one line a path."""
    lines = [f"instructions (callgrind), Python {python_key()}, {sys.executable}"]
    for path, what in PATHS.items():
        got, cap = measured[path], limit.get(path)
        unit = "" if path == "cold_start" else " a job"
        verdict = "no limit" if cap is None else ("OVER" if got > cap else "ok")
        cap_text = "-" if cap is None else f"{cap:,.0f}"
        lines.append(
            f"  {path:<17} {got:>13,.0f}{unit:<6} limit {cap_text:>13}  {verdict}  ({what})"
        )
    lines.append(f"  (python -c pass: {measured['python_start']:,.0f})")
    return "\n".join(lines)


def write(measured: dict[str, float]) -> None:
    """Store ``measured`` + MARGIN as this Python's limits in bench/budget.toml, replacing
    its previous ``[instructions."3.X"]`` table (the rest of the file is kept as is)."""
    key = python_key()
    head = f'[instructions."{key}"]'
    body = [
        head,
        f"# Measured on Python {sys.version.split()[0]} by",
        "# `python -m bench.instructions --write`; limit = measured + the margin named.",
    ]
    for path, what in PATHS.items():
        margin = MARGIN[path]
        body.append(f"# {path}: {what}; measured {measured[path]:,.0f}, margin {margin:.0%}")
        body.append(f"{path} = {round(measured[path] * (1 + margin))}")
    text = BUDGET.read_text()
    # The table runs from its header to the next header (or the end of the file).
    pattern = re.compile(rf"^{re.escape(head)}\n(?:(?!\[).*\n?)*", re.M)
    block = "\n".join(body) + "\n"
    if pattern.search(text):
        text = pattern.sub(lambda _m: block + "\n", text).rstrip("\n") + "\n"
    else:
        text = text.rstrip("\n") + "\n\n" + block
    BUDGET.write_text(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.instructions")
    p.add_argument("--write", action="store_true", help="store measured + margin as limits")
    p.add_argument("--check", action="store_true", help="exit 1 when over a limit")
    p.add_argument("--parallel", type=int, help="valgrind runs at once (default: cores, <= 4)")
    args = p.parse_args(argv)
    if valgrind() is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    measured = measure(parallel=args.parallel)
    if args.write:
        write(measured)
    limit = limits()
    print(report(measured, limit))
    if args.check and over_budget(measured, limit):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
