"""``python -m bench run [--suite E1,W1,...] [--quick] [--arms a,b] [--out DIR |
--append DIR]`` and ``python -m bench report [DIR]``.

Example: W6 measured after a full run and merged into it, then the report::

    python -m bench run --suite W6 --arms conveyor-sqlite-default --append bench/results/<stamp>
    python -m bench report
"""

from __future__ import annotations

import argparse
import sys

from bench import arms as arm_registry
from bench import report, runner

SCENARIOS = runner.ORDER


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the suite")
    r.add_argument(
        "--suite", default=",".join(SCENARIOS), help="comma-separated scenarios (default: all)"
    )
    r.add_argument(
        "--arms",
        default=None,
        help="comma-separated, or 'all' (default: each system's best configuration: "
        f"{','.join(arm_registry.FULL)}); known: {','.join(arm_registry.ALL)}",
    )
    r.add_argument(
        "--quick",
        action="store_true",
        help="tiny N, conveyor-sqlite + huey-sqlite-thread1 unless --arms",
    )
    r.add_argument("--iterations", type=int, default=None, help="override measured iterations")
    r.add_argument("--warmup", type=int, default=None, help="override warm-up iterations")
    r.add_argument(
        "--scale", default=None, help="override sizes, e.g. W1=5000,E2=1000/10000,w3_s=3,W4_n=100"
    )
    r.add_argument("--out", default=None, help="output directory")
    r.add_argument(
        "--append",
        default=None,
        metavar="DIR",
        help="add these scenarios to an earlier run's directory (its scale and quick flag; "
        "CSVs added, meta.json merged, report.md rewritten)",
    )
    r.add_argument(
        "--no-charts",
        action="store_true",
        help="write report.md without drawing its PNG charts (matplotlib not imported)",
    )
    rep = sub.add_parser("report", help="regenerate BENCHMARKS.md from the latest full run")
    rep.add_argument("dir", nargs="?", default=None)
    args = p.parse_args(argv)
    if args.cmd == "report":
        print(report.write_benchmarks_md(args.dir))
        return 0
    suites = [s.strip().upper() for s in args.suite.split(",") if s.strip()]
    bad = [s for s in suites if s not in SCENARIOS]
    if bad:
        p.error(f"unknown scenario(s) {bad}")
    default_arms = arm_registry.QUICK if args.quick else arm_registry.FULL
    if args.arms == "all":
        chosen = list(arm_registry.ALL)
    else:
        chosen = [a.strip() for a in args.arms.split(",")] if args.arms else default_arms
    for a in chosen:
        arm_registry.family_of(a)  # fail fast on a typo
    overrides: dict[str, object] = {}
    if args.iterations is not None:
        overrides["iterations"] = args.iterations
    if args.warmup is not None:
        overrides["warmup"] = args.warmup
    for kv in (args.scale or "").split(","):
        if "=" in kv:
            k, v = kv.split("=", 1)
            values = [float(x) if "." in x else int(x) for x in v.split("/")]
            # list-valued sizes (E1, E2, W3, W4_c) take "a/b/c"; others one number
            overrides[k] = values if isinstance(runner.FULL.get(k), list) else values[0]
    if args.append and args.out:
        p.error("--append writes into its own directory: drop --out")
    runner.run(
        suites, chosen, args.quick, args.out, overrides, append=args.append, draw=not args.no_charts
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
