"""Many hosts, measured and modelled (issue 26, docs/scaling.md): 1, 2, 4, 8 worker hosts
in network namespaces on one Redis or one PostgreSQL whose CPU is capped at a fraction
of a core, throughput against hosts beside the capacity model's prediction.

On a 2-core box the worker hosts and the server share the cores, so an uncapped server
never saturates before the box does. Capping the server (bench/hosts_env.py: a cgroup
quota, e.g. 0.2 of a core) puts its capacity well inside what the rest of the box can
feed. The model, from two measurements made here:

- ``r1``: one host's own rate (one ``conveyor worker`` at its default flags, uncapped
  server), and ``c``: the server's CPU time per job while one host drains noop jobs on
  the capped server (which it saturates: claims and finishes batched, as
  bench/server_cost.py measures them; the server's CPU per job at each point is
  reported beside, since it moves with contention);
- prediction(N) = min(N x r1, quota / c): the hosts' demand, or the server's capacity.

Each point: a fresh store pre-filled (cap lifted) with enough jobs for the whole run,
then the cap set, N workers started (one per namespace, connecting to the server's
address on its cable), a warm-up once all are ready, and a window in which completed
jobs are counted from the store's own records (its per-state counts) and the server's
CPU time is read from its process tree. Rounds alternate the points; medians.

``--kind io`` (the default) jobs sleep 5 ms, so a worker's rate is set by its 8 slots,
not by this box's shared CPU: what a host with its own cores would do. ``--kind noop``
makes every worker CPU-bound; at a quota of 0.2 one such worker already saturates the
server, so the table is flat (the capacity only).

Example::

    python -m bench.hosts --store redis --hosts 1,2,4,8 --quota 0.2
    python -m bench.hosts --store postgres --hosts 1,2 --window 1 --rounds 1 --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench import harness, jobs
from bench.arms.base import bin_path
from bench.hosts_env import Host, Stage, stage

APP = "bench.arms.conveyor_arm:app"
READY = "ready: queues="
#: What one host alone may reach, to size its pre-filled queue (jobs/s, generous).
ALONE = {"redis": {"io": 2500.0, "noop": 12000.0}, "postgres": {"io": 2500.0, "noop": 4000.0}}


def predict(hosts: int, r1: float, quota: float, server_us: float) -> float:
    """The capacity model: N hosts' own demand, or what the capped server can serve.

    >>> predict(2, 1000.0, 0.2, 40.0)
    2000.0
    >>> predict(8, 1000.0, 0.2, 40.0)
    5000.0
    """
    return min(hosts * r1, quota / (server_us / 1e6))


def error_pct(measured: float, predicted: float) -> float:
    """Signed error of the prediction against the measurement, in % of the measurement.

    >>> error_pct(800.0, 1000.0)
    25.0
    """
    return (predicted - measured) / measured * 100 if measured else float("inf")


def succeeded(url: str) -> tuple[int, int]:
    """(succeeded, queued) jobs from the store's own per-state counts."""
    import conveyor

    app = conveyor.App(url)
    try:
        stats = app.backend.queue_stats()
    finally:
        app.close()
    done = sum(s.counts.get("succeeded", 0) for s in stats)
    return done, sum(s.counts.get("queued", 0) for s in stats)


def _count(url: str) -> tuple[int, int, float]:
    """(succeeded, queued, the wall time the count stands for: its call's midpoint)."""
    before = time.time()
    done, queued = succeeded(url)
    return done, queued, (before + time.time()) / 2


def _fill(url: str, n: int, kind: str) -> None:
    code = (
        "from bench.arms.conveyor_arm import job;"
        f"[job.enqueue_many([(i, 0.0, {kind!r}) for i in range(lo, min({n}, lo + 10000))])"
        f" for lo in range(0, {n}, 10000)]"
    )
    env = {**os.environ, "BENCH_CONVEYOR_URL": url, "PYTHONPATH": harness.ROOT}
    subprocess.run([sys.executable, "-c", code], env=env, cwd=harness.ROOT, check=True)


def _worker(host: Host, url: str, marks: str, nice: int) -> harness.Worker:
    env = {**os.environ, "BENCH_CONVEYOR_URL": url, jobs.PATH_ENV: marks}
    env["PYTHONPATH"] = harness.ROOT
    cmd = host.command(["nice", "-n", str(nice), bin_path("conveyor"), "worker", APP])
    return harness.Worker(cmd, env, READY, stop_grace=5)


def point(st: Stage, args: argparse.Namespace, hosts: int, quota: float | None,
          expect: float, name: str, kind: str = "") -> dict[str, Any]:  # fmt: skip
    """One measurement: ``hosts`` workers on a fresh, pre-filled store under ``quota``."""
    st.cap.set(None)
    url = st.fresh(name)
    # Enough for start-up, warm-up and window at the expected rate, with room to spare.
    n = max(args.min_jobs, int(expect * (args.window + args.warmup + 4) * 1.3))
    _fill(url, n, kind or args.kind)
    fd, marks = tempfile.mkstemp(prefix="bench-hosts-")  # the jobs' marker (unused here)
    os.close(fd)
    st.cap.set(quota)
    workers: list[harness.Worker] = []
    try:
        workers = [_worker(h, st.url_at(h, url), marks, args.nice) for h in st.hosts[:hosts]]
        deadline = time.time() + 60
        while any(w.ready_at is None for w in workers):
            dead = [w for w in workers if not w.alive()]
            if dead or time.time() > deadline:
                tail = "\n".join(list((dead or workers)[0].tail)[-15:])
                raise RuntimeError(f"a worker did not get ready:\n{tail}")
            time.sleep(0.05)
        time.sleep(args.warmup)
        # The counts are read outside the CPU window (a count is a query the capped
        # server serves too); the rate is over the counts' midpoints.
        d0, _, c0 = _count(url)
        time.sleep(0.05)  # the counting connection's backend has exited
        t0, s0, w0 = time.time(), st.server_cpu(), sum(harness.tree_cpu(w.ps) for w in workers)
        p0 = st.cap.throttle()
        time.sleep(args.window)
        t1, s1, w1 = time.time(), st.server_cpu(), sum(harness.tree_cpu(w.ps) for w in workers)
        p1 = st.cap.throttle()
        d1, left, c1 = _count(url)
    finally:
        for w in workers:
            w.stop()
        st.cap.set(None)
        os.unlink(marks)
    done, wall = d1 - d0, t1 - t0
    rate = done / (c1 - c0)
    periods = p1[0] - p0[0]
    return {
        "hosts": hosts,
        "quota": quota,
        "kind": kind or args.kind,
        "jobs_per_s": rate,
        "server_us_per_job": (s1 - s0) / wall / rate * 1e6 if done else None,
        "server_cores": (s1 - s0) / wall,
        "worker_us_per_job": (w1 - w0) / wall / rate * 1e6 if done else None,
        "throttled_share": (p1[1] - p0[1]) / periods if periods else 0.0,
        "queued_left": left,  # 0 means the queue ran dry: the point is invalid
        "jobs": n,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    counts = sorted(set(args.hosts))
    rounds: list[dict[str, Any]] = []
    with stage(args.store, max(counts)) as st:
        for r in range(args.rounds):
            alone = point(st, args, 1, None, ALONE[args.store][args.kind], f"hosts{r}a")
            # The server's cost per job where it saturates: one host draining noop jobs
            # (bench/server_cost.py's measurement) on the capped server, which that one
            # host already saturates: claims and finishes batched as under a backlog.
            noop = ALONE[args.store]["noop"]
            drain = point(st, args, 1, args.quota, noop, f"hosts{r}d", "noop")
            r1, c1 = alone["jobs_per_s"], drain["server_us_per_job"]
            row: dict[str, Any] = {"alone": alone, "drain": drain, "points": {}}
            for n in counts:
                expect = predict(n, r1, args.quota, c1)
                # Sized for 2.5 times the prediction: a queue that runs dry would cut the
                # measurement short (the table says "ran dry" if one did).
                size = 2.5 * expect
                row["points"][n] = point(st, args, n, args.quota, size, f"hosts{r}n{n}")
                print(f"round {r + 1}: {n} hosts {row['points'][n]['jobs_per_s']:,.0f} jobs/s "
                      f"(predicted {expect:,.0f})", file=sys.stderr)  # fmt: skip
            rounds.append(row)
        env: dict[str, Any] = {"store": st.store, "version": st.version, **st.extra}
        env |= {"cgroup": st.cap.version, "port": st.port}
    return _summary(args, counts, rounds, env)


def _med(values: list[float | None]) -> float:
    return statistics.median(v for v in values if v is not None)


def _summary(args: argparse.Namespace, counts: list[int], rounds: list[dict[str, Any]],
             env: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    r1 = _med([r["alone"]["jobs_per_s"] for r in rounds])
    c1 = _med([r["drain"]["server_us_per_job"] for r in rounds])
    table = []
    for n in counts:
        pts = [r["points"][n] for r in rounds]
        measured = _med([p["jobs_per_s"] for p in pts])
        predicted = predict(n, r1, args.quota, c1)
        table.append({
            "hosts": n,
            "predicted": predicted,
            "measured": measured,
            "error_pct": error_pct(measured, predicted),
            "server_us_per_job": _med([p["server_us_per_job"] for p in pts]),
            "server_cores": _med([p["server_cores"] for p in pts]),
            "throttled_share": _med([p["throttled_share"] for p in pts]),
            "worker_us_per_job": _med([p["worker_us_per_job"] for p in pts]),
            "ran_dry": sum(p["queued_left"] == 0 for p in pts),
        })  # fmt: skip
    return {
        "env": env,
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "one_host_jobs_per_s": r1,
        "server_us_per_job_drain": c1,
        "capacity_at_quota": args.quota / (c1 / 1e6),
        "one_core_jobs_per_s": 1e6 / c1,
        "table": table,
        "rounds": rounds,
        "load_average": os.getloadavg(),
    }


def render(result: dict[str, Any]) -> str:
    """The table as Markdown, under the model's inputs."""
    s, env = result["settings"], result["env"]
    lines = [
        f"{env['store']} {env['version']}, server capped at {s['quota']} core "
        f"(cgroup v{env['cgroup']}), jobs `{s['kind']}`, {s['rounds']} rounds, medians, "
        f"window {s['window']} s; load average {', '.join(f'{x:.1f}' for x in result['load_average'])}",
        f"one host alone (server uncapped): {result['one_host_jobs_per_s']:,.0f} jobs/s; server "
        f"CPU per job, one host draining noop jobs on the capped server, {result['server_us_per_job_drain']:.0f}"
        " µs -> capacity at the quota "
        f"{result['capacity_at_quota']:,.0f} jobs/s, one server core {result['one_core_jobs_per_s']:,.0f}",
        "",
        "| hosts | predicted jobs/s | measured jobs/s | error | server µs/job | server cores "
        "| throttled periods | worker µs/job |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for t in result["table"]:
        dry = " (queue ran dry)" if t["ran_dry"] else ""
        lines.append(
            f"| {t['hosts']} | {t['predicted']:,.0f} | {t['measured']:,.0f}{dry} "
            f"| {t['error_pct']:+.0f}% | {t['server_us_per_job']:.0f} | {t['server_cores']:.2f} "
            f"| {t['throttled_share']:.0%} | {t['worker_us_per_job']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.hosts")
    p.add_argument("--store", choices=("redis", "postgres"), required=True)
    p.add_argument("--hosts", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8])
    p.add_argument("--quota", type=float, default=0.2, help="server CPU cap, in cores")
    p.add_argument("--kind", choices=("io", "noop"), default="io")
    p.add_argument("--window", type=float, default=4.0, help="seconds counted per point")
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-jobs", type=int, default=2000)
    p.add_argument("--nice", type=int, default=0, help="every worker's nice level (equal)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = p.parse_args(argv)
    # A SIGTERM unwinds like an exception: the stage removes namespaces, cgroup, server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
