"""Issue 2/3's quick check for conveyor's backends: single enqueue jobs/s,
``enqueue_many`` jobs/s, and W1 throughput (20,000 noop jobs pre-enqueued, one
``conveyor worker`` process, first job start to last job end).

``python -m bench.quick [--n 20000] [--backend sqlite|redis|both] [--repeat 1]``.
Reuses the suite's harness (same job body, same file-append completion marker, same
verification) so the numbers match ``python -m bench run``; the marker's own cost is
measured first and printed, with the fairness check against the W1 figures. The harness
starts its own ``redis-server`` on a free port for the Redis backend only (the marker
needs none). With ``--repeat N`` every figure is the median of N runs (min and max
shown).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import tempfile
from collections.abc import Callable
from typing import Any

from bench import floors, harness
from bench import marker as marker_mod
from bench import scenarios as sc

ARMS = {"sqlite": "conveyor-sqlite", "redis": "conveyor-redis"}


def _median(runs: list[dict[str, Any]]) -> str:
    rates = sorted(r["jobs_per_s"] for r in runs if r.get("valid", True))
    if not rates:
        return "invalid run: " + "; ".join(str(r.get("reason")) for r in runs)
    spread = f"  [min {rates[0]:,.0f}, max {rates[-1]:,.0f}]" if len(rates) > 1 else ""
    return f"{statistics.median(rates):>10,.0f} jobs/s{spread}"


def _floor(repeat: int, measure: Callable[[int], float]) -> float:
    """Median of ``repeat`` floor runs, gc off as in the producer's timed windows."""
    rates = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            rates.append(measure(len(rates)))
        finally:
            gc.enable()
    return statistics.median(rates)


def _ratio(runs: list[dict[str, Any]], floor: float) -> str:
    rates = [r["jobs_per_s"] for r in runs if r.get("valid", True)]
    if not rates or not floor:
        return ""
    return f"   floor {floor:>9,.0f}/s  ratio {statistics.median(rates) / floor:.2f}x"


def _floors(
    backend: str, n: int, repeat: int, workdir: str, url: str | None
) -> tuple[float, float]:
    """(E1 floor, E2 floor) of ``backend`` in jobs/s, measured now (bench/floors.py)."""
    if backend == "sqlite":
        path = lambda k: os.path.join(workdir, f"floor-{k}-{os.urandom(4).hex()}.db")  # noqa: E731
        single = _floor(repeat, lambda k: floors.sqlite_single(path(k), n))
        many = _floor(repeat, lambda k: floors.sqlite_many(path(k), n))
        return single, many
    assert url is not None
    single = _floor(repeat, lambda k: floors.redis_single(url, n))
    many = _floor(repeat, lambda k: floors.redis_many(url, n, prefix=f"floor{k}"))
    return single, many


def _runs(
    repeat: int, scenario: Callable[[sc.Ctx, str, int], dict[str, Any]], *a: Any
) -> list[dict[str, Any]]:
    return [scenario(*a) for _ in range(repeat)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quick")
    p.add_argument("--n", type=int, default=20_000, help="W1 jobs (default 20,000)")
    p.add_argument("--enqueue-n", type=int, default=10_000, help="E1/E2 jobs")
    p.add_argument("--backend", choices=("sqlite", "redis", "both"), default="both")
    p.add_argument("--repeat", type=int, default=1, help="runs per figure (median)")
    args = p.parse_args(argv)
    backends = ["sqlite", "redis"] if args.backend == "both" else [args.backend]
    server = harness.RedisServer() if "redis" in backends else None
    workdir = tempfile.mkdtemp(prefix="bench-quick-")
    ok = True
    w1_rates: dict[str, float] = {}
    try:
        marker = marker_mod.measure()
        print(f"completion marker: {marker_mod.describe(marker)}")
        if server is not None:
            os.environ["BENCH_REDIS_URL"] = server.url
        ctx = sc.Ctx(redis=server, workdir=workdir, scale={"timeout": 300})
        for backend in backends:
            arm = ARMS[backend]
            e1 = _runs(args.repeat, sc.e1, ctx, arm, args.enqueue_n)
            e2 = _runs(args.repeat, sc.e2, ctx, arm, args.enqueue_n)
            url = server.url if server is not None else None
            f1, f2 = _floors(backend, args.enqueue_n, args.repeat, workdir, url)
            w1 = _runs(args.repeat, sc.w1, ctx, arm, args.n)
            ok = ok and all(r.get("valid") for r in w1)
            valid = [r["jobs_per_s"] for r in w1 if r.get("valid")]
            if valid:
                w1_rates[arm] = statistics.median(valid)
            print(f"conveyor {backend}, {harness.ROOT}, median of {args.repeat}")
            print(f"  single enqueue : {_median(e1)}  (n={args.enqueue_n}){_ratio(e1, f1)}")
            print(f"  enqueue_many   : {_median(e2)}  (n={args.enqueue_n}){_ratio(e2, f2)}")
            print(f"  W1 one worker  : {_median(w1)}  (n={args.n}, first start to last finish)")
        print(marker_mod.verdict(marker, w1_rates))
        return 0 if ok and marker["intact"] else 1
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
