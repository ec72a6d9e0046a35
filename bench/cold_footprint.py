"""Cold start, counted instead of timed: what each start-up path imports and costs.

``python -m bench.cold_footprint [--rounds 20] [--callgrind] [--list] [--redis-url URL]
[SRC ...]`` runs the three paths of issue 16 in fresh processes and reports, at the
path's event (not at exit):

* ``first``: import conveyor, open a fresh SQLite store, enqueue one job, a burst
  ``Worker`` runs it (the event: the job body starts; ``bench/cold_start.py``'s path);
* ``worker-sqlite`` / ``worker-redis``: ``conveyor worker cold_app:app --burst`` (the
  console script's code, in-process) until its ``ready: queues=`` log record.

For each: the number of modules in ``sys.modules`` (exact), the process's CPU time
(``time.process_time``: user + system of every thread, less moved by load than wall
time; median of ``--rounds``) and, with ``--callgrind``, the instructions executed
(``valgrind --tool=callgrind``, deterministic to ~0.1%: the figure to compare on a busy
box). Given several ``SRC`` directories (checkouts' ``src``), the runs alternate between
them round by round (A B, B A, ...), so a load change touches each alike. ``--list``
prints the modules one path imports that another tree's does not.

The Redis paths need ``--redis-url`` (a server of your own; keys go under a fresh
``prefix`` each run). Method and figures: bench/HOTPATH.md, "Cold start: what each path
imports".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PATHS = ("first", "worker-sqlite", "worker-redis")
APP_MODULE = """import os

import conveyor

app = conveyor.App(os.environ["COLD_URL"])


@app.task
def first(x: int) -> int:
    return x + 1
"""

# The measured process. It imports only sys/os/time before the path (all three are
# loaded by the interpreter itself), reads the state at the event, then imports json
# to write it and leaves with os._exit: nothing after the event is counted.
PROBE = r"""
import os, sys, time

def event(out):
    cpu = time.process_time() * 1000
    names = sorted(sys.modules)
    import json
    with open(out, "w") as f:
        json.dump({"cpu_ms": cpu, "modules": names}, f)
    os._exit(0)

def first(url, out):
    import conveyor
    app = conveyor.App(url)

    @app.task
    def first(x: int) -> int:
        event(out)
        return x + 1

    first.enqueue(41)
    conveyor.Worker(app, burst=True).run()

def worker(url, out):
    import logging

    class AtReady(logging.Filter):
        def filter(self, record):
            if "ready: queues=" in record.getMessage():
                event(out)
            return True

    logging.getLogger("conveyor.worker").addFilter(AtReady())
    os.environ["COLD_URL"] = url
    sys.argv = ["conveyor", "worker", "cold_app:app", "--burst"]
    from conveyor.cli.main import main
    main()

mode, url, out = sys.argv[1:4]
(first if mode == "first" else worker)(url, out)
"""


def run_once(
    src: str, path: str, workdir: str, redis_url: str | None, seq: int, callgrind: bool
) -> dict[str, object]:
    """One fresh process on ``path`` with ``src`` first on the path: its event's state."""
    run_dir = tempfile.mkdtemp(dir=workdir)
    out = os.path.join(run_dir, "event.json")
    if path == "worker-redis":
        assert redis_url is not None
        sep = "&" if "?" in redis_url else "?"
        url = f"{redis_url}{sep}prefix=coldfp{os.getpid()}x{seq}"
    else:
        url = f"sqlite:///{run_dir}/store.db"
    mode = "first" if path == "first" else "worker"
    cmd = [sys.executable, os.path.join(workdir, "probe.py"), mode, url, out]
    prefix = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, workdir])}
    done = subprocess.run(
        (prefix if callgrind else []) + cmd,
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        with open(out) as f:
            state: dict[str, object] = json.load(f)
    except OSError:
        raise RuntimeError(f"{path} on {src} reached no event: {done.stderr[-800:]}") from None
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    if callgrind:
        lines = [ln for ln in done.stderr.splitlines() if "Collected :" in ln]
        state["instructions"] = int(lines[-1].split()[-1])
    return state


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cold_footprint")
    p.add_argument("src", nargs="*", help="src directories to compare (default: this one)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--callgrind", action="store_true", help="also count instructions")
    p.add_argument("--list", action="store_true", help="print the modules that differ")
    p.add_argument("--redis-url", help="a Redis server for the worker-redis path")
    args = p.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = args.src or [os.path.join(here, "src")]
    paths = [x for x in PATHS if x != "worker-redis" or args.redis_url]
    workdir = tempfile.mkdtemp(prefix="bench-coldfp-")
    for name, text in (("probe.py", PROBE), ("cold_app.py", APP_MODULE)):
        with open(os.path.join(workdir, name), "w") as f:
            f.write(text)
    cpu: dict[tuple[str, str], list[float]] = {(t, x): [] for t in trees for x in paths}
    instr: dict[tuple[str, str], list[int]] = {(t, x): [] for t in trees for x in paths}
    modules: dict[tuple[str, str], list[str]] = {}
    seq = 0
    try:
        for r in range(args.rounds + 1):  # round 0 warms the page cache, not counted
            order = trees if r % 2 == 0 else trees[::-1]
            for path in paths:
                for tree in order:
                    seq += 1
                    state = run_once(tree, path, workdir, args.redis_url, seq, args.callgrind)
                    if r == 0:
                        continue
                    cpu[(tree, path)].append(float(state["cpu_ms"]))  # type: ignore[arg-type]
                    if "instructions" in state:
                        instr[(tree, path)].append(int(state["instructions"]))  # type: ignore[call-overload]
                    modules[(tree, path)] = list(state["modules"])  # type: ignore[call-overload]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"cold start footprint, {args.rounds} fresh processes each, {sys.executable}")
    for path in paths:
        print(f"  {path}")
        for tree in trees:
            ms, counted = cpu[(tree, path)], instr[(tree, path)]
            line = f"    {tree:<40} modules {len(modules[(tree, path)]):4d}"
            if counted:  # CPU time under valgrind says nothing about the code: not shown
                line += f"   instructions median {statistics.median(counted) / 1e6:.1f}M"
            else:
                line += (
                    f"   CPU median {statistics.median(ms):6.1f} ms [{min(ms):.1f}, {max(ms):.1f}]"
                )
            print(line)
        if args.list and len(trees) > 1:
            first, *others = trees
            for other in others:
                a, b = set(modules[(first, path)]), set(modules[(other, path)])
                print(f"    only in {first}: {' '.join(sorted(a - b)) or '-'}")
                print(f"    only in {other}: {' '.join(sorted(b - a)) or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
