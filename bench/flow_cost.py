"""Issue 24's cost figures: W1 with flow control against plain W1, alternated in one run.

Each round measures, for each arm, W1 (n pre-filled noop jobs, one fresh worker at the
arm's flags, first job start to last job end, every record verified) four ways, in an
order rotated round by round: ``plain``; ``fair`` (every job with a ``fair_key``, 100
keys round robin); ``limit`` (``App(queue_concurrency={"default": 1000})``: a declared
global concurrency limit on the queue, above what one worker holds, so it costs its
checks and never defers); ``batch`` (``@app.task(batch=Batch(size=100, wait=0.1))``,
whose body runs the same job body per item). The targets: fair and limit >= 80% of
plain, batch >= 3x plain on SQLite. Medians over the rounds, and the median of the
per-round ratios (each round's arms measured seconds apart).

Example::

    nice -n 10 python -m bench.flow_cost --arms conveyor-sqlite-default --n 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from typing import Any

from rich.console import Console

from bench import arms, clusters, harness
from bench.scenarios import Ctx, _fresh, _worker, drain

FLOWS = ("plain", "fair", "limit", "batch")
TARGETS = {"fair": 0.8, "limit": 0.8, "batch": 3.0}


def w1_flow(ctx: Ctx, arm: str, n: int, flow: str) -> dict[str, Any]:
    """One W1 measurement of ``arm`` with ``flow`` (``plain`` or one of the options)."""
    env = _fresh(ctx, arm)
    env["BENCH_FLOW"] = "" if flow == "plain" else flow
    harness.run_producer({"arm": arm, "action": "fill", "n": n, "kind": "noop"}, env, 600)
    return drain(ctx, _worker(arm, env, burst=True), n)


def order(round_no: int, flows: tuple[str, ...] = FLOWS) -> list[str]:
    """The flows of one round, rotated so each goes first in turn.

    >>> order(0), order(1)[0], order(1, ("plain", "limit"))
    (['plain', 'fair', 'limit', 'batch'], 'fair', ['limit', 'plain'])
    """
    k = round_no % len(flows)
    return list(flows[k:] + flows[:k])


def run(
    arm_names: list[str], n: int, rounds: int, console: Console, flows: tuple[str, ...] = FLOWS
) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="bench-flow-")
    redis = harness.RedisServer() if any(map(arms.needs_redis, arm_names)) else None
    if redis is not None:
        os.environ["BENCH_REDIS_URL"] = redis.url
    ctx = Ctx(redis=redis, workdir=workdir, scale={"timeout": 600})
    rows: list[dict[str, Any]] = []
    load = [os.getloadavg()[0]]
    try:
        clusters.start(ctx, arm_names, console)
        for r in range(rounds):
            for arm in arm_names:
                for flow in order(r, flows):
                    row = w1_flow(ctx, arm, n, flow)
                    row.update({"arm": arm, "flow": flow, "round": r})
                    rows.append(row)
                    rate = row.get("jobs_per_s")
                    shown = f"{rate:,.0f} jobs/s" if rate else f"invalid: {row.get('reason')}"
                    console.print(f"round {r} {arm} {flow}: {shown}")
            load.append(os.getloadavg()[0])
    finally:
        if redis is not None:
            redis.stop()
        for cluster in (ctx.postgres, ctx.postgres_fast):
            if cluster is not None:
                cluster.stop("immediate")
                cluster.remove()
        shutil.rmtree(workdir, ignore_errors=True)
    return {"rows": rows, "load": load}


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per arm and flow: median jobs/s (min-max), the ratio of medians to plain, and the
    median of the per-round ratios; with the target and whether it is met."""
    out = []
    for arm in dict.fromkeys(r["arm"] for r in rows):
        mine = [r for r in rows if r["arm"] == arm and r.get("valid")]
        plain = {r["round"]: r["jobs_per_s"] for r in mine if r["flow"] == "plain"}
        for flow in FLOWS:
            got = [r for r in mine if r["flow"] == flow]
            if not got or not plain:
                continue
            rates = [r["jobs_per_s"] for r in got]
            ratio = statistics.median(rates) / statistics.median(plain.values())
            per_round = [r["jobs_per_s"] / plain[r["round"]] for r in got if r["round"] in plain]
            target = TARGETS.get(flow)
            out.append(
                {
                    "arm": arm,
                    "flow": flow,
                    "median": statistics.median(rates),
                    "min": min(rates),
                    "max": max(rates),
                    "valid": f"{len(got)}/{sum(1 for r in rows if r['arm'] == arm and r['flow'] == flow)}",
                    "ratio": ratio,
                    "round_ratio": statistics.median(per_round) if per_round else float("nan"),
                    "cpu_s_per_1000": statistics.median(r["cpu_s_per_1000"] for r in got),
                    "target": target,
                    "met": None if target is None else ratio >= target,
                }
            )
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    lines = [
        "| arm | flow | W1 jobs/s median (min-max) | valid | x plain (per-round median) "
        "| worker CPU-s / 1,000 | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in table:
        target = (
            "-"
            if t["target"] is None
            else f">= {t['target']:g}x: " + ("**met**" if t["met"] else "**missed**")
        )
        lines.append(
            f"| {t['arm']} | {t['flow']} | {t['median']:,.0f} ({t['min']:,.0f}-{t['max']:,.0f}) "
            f"| {t['valid']} | {t['ratio']:.2f}x ({t['round_ratio']:.2f}x) "
            f"| {t['cpu_s_per_1000']:.3f} | {target} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.flow_cost")
    p.add_argument("--arms", default="conveyor-sqlite-default")
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--flows", default=",".join(FLOWS), help="which of plain,fair,limit,batch (plain needed)"
    )
    a = p.parse_args(argv)
    console = Console()
    result = run(a.arms.split(","), a.n, a.rounds, console, tuple(a.flows.split(",")))
    console.print(markdown(summary(result["rows"])))
    console.print(f"load average (1 min) at the start and after each round: {result['load']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
