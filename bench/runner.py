"""``python -m bench run``: iterate scenarios x arms with warm-up, rotation and
verification, showing a rich progress bar; write raw CSVs and report.md."""

from __future__ import annotations

import csv
import datetime
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench import arms as arm_registry
from bench import clusters, environment, fairness, harness, many_queues, mixed, report, w6
from bench import marker as marker_mod
from bench import scenarios as sc

FULL = {
    "E1": [1_000, 10_000],
    "E2": [1_000, 10_000, 100_000],
    # W1/W2/W3 sizes are the suite's choice (benchmarking.md fixes only E1 and E2): chosen
    # so the whole default run (14 arms, 5 iterations + 1 warm-up of everything) takes
    # about 1 h 50 min on the 2-core reference box (run 20261130T084851: 1 h 47 min).
    "W1": 10_000,
    "W2": 300,
    "W3": [0.5, 0.9],
    "w3_s": 5.0,
    "W4_n": 200,
    "W4_c": [1, 2, 4],
    "W4_kinds": ["cpu", "io", "mixed"],
    "iterations": 5,
    "warmup": 1,
    "timeout": 300,
    "idle_s": 3.0,
    "marker_n": 100_000,  # records per process when the marker is measured alone
    # W6 (issue 16): W1's queue (its size) drained by 1 and 2 workers on one file; then
    # 4 producers at a steady 2,000 jobs/s in total (about a quarter of the default
    # worker's W1 rate) for w6_s seconds while two workers run.
    "W6_producers": 4,
    "W6_rate": 2_000,
    "w6_s": 5.0,
    # W7 (issue 26): one default worker on many queues, W7_n jobs round robin over them
    "W7_queues": [1, 100, 1_000, 5_000],
    "W7_n": 1_000,
    # W8 (issue 26): noops at W8_rate/s for W8_s s, alone and behind W8_long sleeping jobs
    **{"W8_rate": 100, "W8_s": 1.5, "W8_long": 4, "W8_long_s": 2.0},
}
QUICK = {
    "E1": [200],
    "E2": [500],
    "W1": 500,
    "W2": 20,
    "W3": [0.5, 0.9],
    "w3_s": 1.0,
    "W4_n": 12,
    "W4_c": [1, 2],
    "W4_kinds": ["cpu", "io"],
    "iterations": 1,
    "warmup": 0,
    "timeout": 60,
    "idle_s": 0.5,
    "marker_n": 100_000,
    "W6_producers": 4,
    "W6_rate": 1_000,
    "w6_s": 1.0,
    "W7_queues": [1, 100],
    "W7_n": 200,
    **{"W8_rate": 100, "W8_s": 0.5, "W8_long": 4, "W8_long_s": 1.0},
}
#: The order scenarios run in (W3 needs W1's capacity from the same run).
ORDER = ["E1", "E2", "W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"]
#: Scenarios only some arms run (GAPS: why not, None if it does), planned by their module.
GAPS = {"W7": many_queues.w7_unsupported, "W8": mixed.w8_unsupported}
PLANS = {"W7": many_queues.plan, "W8": mixed.plan}


def plan(
    ctx: sc.Ctx, suites: list[str], arms: list[str], checks: dict[str, dict[str, Any]], it: int = 0
) -> list[tuple[str, str, str, Callable[[], Any]]]:
    """(scenario, param label, arm, thunk) for one iteration, in run order per scenario."""
    s = ctx.scale
    steps: list[tuple[str, str, str, Callable[[], Any]]] = []

    def can(arm: str, scen: str) -> bool:
        return checks[arm]["available"] and scen not in checks[arm]["unsupported"]

    for scen in suites:
        usable = [a for a in arms if can(a, scen)]
        if scen in ("E1", "E2"):
            fn = sc.e1 if scen == "E1" else sc.e2
            steps += [
                (scen, str(n), a, lambda a=a, n=n, fn=fn: fn(ctx, a, n))
                for n in s[scen]
                for a in usable
            ]
        elif scen == "W1":
            steps += [(scen, str(s["W1"]), a, lambda a=a: sc.w1(ctx, a, s["W1"])) for a in usable]
        elif scen == "W2":
            steps += [(scen, str(s["W2"]), a, lambda a=a: sc.w2(ctx, a, s["W2"])) for a in usable]
        elif scen == "W3":
            steps += [
                (scen, f"{int(f * 100)}%", a, lambda a=a, f=f: sc.w3(ctx, a, f, it))
                for f in s["W3"]
                for a in usable
            ]
        elif scen == "W4":
            w4_arms = [a for a in usable if checks[a]["w4"]]
            steps += [
                (scen, f"{k} c={c}", a, lambda a=a, k=k, c=c: sc.w4(ctx, a, k, c, s["W4_n"]))
                for k in s["W4_kinds"]
                for c in s["W4_c"]
                for a in w4_arms
            ]
        elif scen == "W5":
            steps += [(scen, "1", a, lambda a=a: sc.w5(ctx, a)) for a in usable]
        elif scen == "W6":
            # One worker and two alternate which goes first, iteration by iteration.
            counts = (1, 2) if it % 2 == 0 else (2, 1)
            steps += [
                (scen, W6_DRAIN[w], a, lambda a=a, w=w: w6.drain(ctx, a, s["W1"], w))
                for w in counts
                for a in usable
            ]
            k = int(s["W6_producers"])
            steps += [
                (
                    scen,
                    f"{k} producers + 2 workers",
                    a,
                    lambda a=a, k=k: w6.producers(ctx, a, k, float(s["W6_rate"]), s["w6_s"]),
                )
                for a in usable
            ]
        elif scen in PLANS:
            steps += PLANS[scen](ctx, usable, it)
    return steps


#: W6's drain params, by worker count (report.py and targets.py read them back).
W6_DRAIN = {1: "drain 1 worker", 2: "drain 2 workers"}


def _rotate(
    steps: list[tuple[str, str, str, Callable[[], Any]]], iteration: int, arms: list[str]
) -> list[tuple[str, str, str, Callable[[], Any]]]:
    """Within each (scenario, param) group, order arms by the rotation for this iteration;
    the groups keep the order ``plan`` gave them (W6 alternates its own)."""
    order = {a: i for i, a in enumerate(fairness.arm_order(arms, iteration))}
    group: dict[tuple[str, str], int] = {}
    for st in steps:
        group.setdefault((st[0], st[1]), len(group))
    return sorted(steps, key=lambda st: (group[(st[0], st[1])], order[st[2]]))


def _compile_sources() -> None:
    """Compile conveyor's (editable install) and the suite's sources to .pyc, as pip did
    for every peer at install time: otherwise, with PYTHONDONTWRITEBYTECODE set (as on
    the reference machine), only conveyor would recompile itself in every process."""
    import compileall

    for folder in ("src", "bench"):
        compileall.compile_dir(os.path.join(harness.ROOT, folder), quiet=1)


def run(
    suites: list[str],
    arms: list[str],
    quick: bool,
    out: str | None,
    overrides: dict[str, Any] | None = None,
    append: str | None = None,
    draw: bool = True,
) -> str:
    """Run ``suites`` x ``arms``; write the CSVs, ``meta.json`` and ``report.md`` to
    ``out`` (default ``bench/results/<stamp>``). With ``append`` (an earlier run's
    directory), write the new scenarios' CSVs into that directory instead, at that run's
    scale, and merge what was run into its ``meta.json`` (:func:`_merge_meta`). ``draw``
    false: ``report.md`` without drawing the PNG charts."""
    console = Console()
    base_meta: dict[str, Any] | None = None
    if append is not None:
        with open(os.path.join(append, "meta.json")) as f:
            base_meta = json.load(f)
        quick = bool(base_meta["quick"])
    defaults = QUICK if quick else FULL
    # An appended scenario runs at the earlier run's scale (its iterations, its W1 size);
    # keys that run did not have (a scenario added since) come from the defaults.
    scale = {**defaults, **(base_meta["scale"] if base_meta else {}), **(overrides or {})}
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    outdir = append or out or os.path.join(harness.ROOT, "bench", "results", stamp)
    os.makedirs(outdir, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="bench-work-")
    _compile_sources()
    # SIGTERM -> SystemExit, so the finally below stops our redis-server and workers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # The broker of the Redis arms; a run of SQLite arms only needs no Redis at all.
    redis_server = harness.RedisServer() if any(map(arm_registry.needs_redis, arms)) else None
    if redis_server is not None:
        # Arms build their worker command in this process (e.g. RQ's --url): one URL.
        os.environ["BENCH_REDIS_URL"] = redis_server.url
    ctx = sc.Ctx(redis=redis_server, workdir=workdir, scale=scale)
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        pg_settings, pg_fast = clusters.start(ctx, arms, console)
        # The marker alone, before any arm runs (same box, same minute as the arms).
        marker = marker_mod.measure(int(scale.get("marker_n", 100_000)))
        console.print(f"completion marker: {marker_mod.describe(marker)}")
        checks = {}
        for a in arms:
            try:
                env = ctx.fresh_env(a)
                checks[a] = harness.run_producer({"arm": a, "action": "check"}, env, 120)
            except Exception as exc:  # e.g. the peer library fails to import
                checks[a] = {
                    "available": False,
                    "reason": str(exc)[-300:],
                    "config": "",
                    "unsupported": {},
                    "w4": False,
                }
            if "W6" in suites:
                reason = w6.unsupported(a, str(checks[a].get("storage", "")))
                if reason:
                    checks[a]["unsupported"].setdefault("W6", reason)
            for scen in (x for x in GAPS if x in suites):
                if reason := GAPS[scen](a):
                    checks[a]["unsupported"].setdefault(scen, reason)
        # W3 needs each arm's W1 capacity from this run: W1 always precedes W3.
        if "W3" in suites and "W1" not in suites:
            suites = ["W1", *suites]
        suites = sorted(suites, key=ORDER.index)
        meta: dict[str, Any] = {
            "stamp": stamp,
            "quick": quick,
            "overrides": overrides or {},
            "suites": suites,
            "arms": arms,
            "scale": scale,
            "checks": checks,
            "environment": environment.describe(
                redis_server.version if redis_server else "not started (no Redis arm)"
            ),
            "marker": marker,
        }
        meta["environment"]["postgres"] = pg_settings or "not started (no PostgreSQL arm)"
        if pg_fast:
            meta["environment"]["postgres_fsync_off"] = pg_fast
        for a in arms:
            if arm_registry.fsync_off(a) and checks[a].get("available"):
                checks[a]["config"] += "; on the fsync-off cluster (labelled variant)"
                checks[a]["durability"] = clusters.FSYNC_OFF_DURABILITY
        meta["checklist"] = fairness.checklist(scale, checks, marker, pg_settings, pg_fast)
        for line in meta["checklist"]:
            console.print(f"[dim]- {line}[/dim]")
        for a, c in checks.items():
            if not c["available"]:
                console.print(f"[yellow]{a}: not available: {c['reason']}[/yellow]")

        def iters(scen: str) -> tuple[int, int]:
            """(warm-up, measured) iterations; a scenario may override the suite's."""
            return (
                int(scale.get(f"warmup_{scen}", scale["warmup"])),
                int(scale.get(f"iterations_{scen}", scale["iterations"])),
            )

        total = sum(len(plan(ctx, [scen], arms, checks)) * sum(iters(scen)) for scen in suites)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("bench", total=total)
            for scen in suites:
                n_warm, n_meas = iters(scen)
                for it in range(n_warm + n_meas):
                    warm = it < n_warm
                    for s_name, param, arm, thunk in _rotate(
                        plan(ctx, [scen], arms, checks, it), it, arms
                    ):
                        progress.update(
                            task,
                            description=f"{s_name} {param} {arm}"
                            f"{' (warm-up)' if warm else f' #{it}'}",
                        )
                        row = _measure(thunk)
                        row.update(
                            {
                                "scenario": s_name,
                                "param": param,
                                "arm": arm,
                                "iteration": it - n_warm,
                                "warmup": warm,
                            }
                        )
                        rows.setdefault(s_name, []).append(row)
                        if not row.get("valid"):
                            console.print(
                                f"[red]{s_name} {param} {arm}: discarded: "
                                f"{str(row.get('reason'))[:300]}[/red]"
                            )
                        progress.advance(task)
                if scen == "W1":
                    ctx.w1_capacity = _w1_capacity(rows.get("W1", []))
                    marker["verdict"] = marker_mod.verdict(marker, ctx.w1_capacity)
                    style = "red" if marker["verdict"].startswith("FAIRNESS") else "dim"
                    progress.console.print(f"[{style}]{marker['verdict']}[/{style}]")
        if "verdict" not in marker:
            marker["verdict"] = marker_mod.verdict(marker, ctx.w1_capacity)
        meta["checklist"].insert(3, f"  {marker['verdict']}")
        # Other tenants of the machine show up here; report them rather than hide them.
        meta["environment"]["loadavg_end"] = os.getloadavg()
        if base_meta is not None:
            meta = _merge_meta(base_meta, meta)
            rows = _merge_rows(outdir, rows)
        _write(outdir, rows, ctx.raw, meta)
        report.write_run_report(outdir, draw)
        if marker["verdict"].startswith("FAIRNESS"):
            console.print(f"[red]{marker['verdict']}[/red]")
        console.print(f"results: {outdir}")
    finally:
        if redis_server is not None:
            redis_server.stop()
        for cluster in (ctx.postgres, ctx.postgres_fast):
            if cluster is not None:
                cluster.stop("immediate")
                cluster.remove()
        shutil.rmtree(workdir, ignore_errors=True)
    return outdir


def _merge_meta(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """An earlier run's metadata with an appended run folded in: its suites and arms
    added, the new arms' checks added (an arm already there keeps its own, plus the
    scenarios the new run could not do for it), new scale keys, and an ``appended``
    entry saying what ran when, on which box state, with which marker measurement."""
    merged = dict(base)
    merged["suites"] = [s for s in ORDER if s in {*base["suites"], *new["suites"]}]
    merged["arms"] = [*base["arms"], *(a for a in new["arms"] if a not in base["arms"])]
    checks = dict(base["checks"])
    for arm, check in new["checks"].items():
        if arm in checks:
            gaps = {**checks[arm].get("unsupported", {}), **check.get("unsupported", {})}
            checks[arm] = {**checks[arm], "unsupported": gaps}
        else:
            checks[arm] = check
    # Arms of the earlier run that the appended scenarios do not apply to say so too.
    for arm, check in checks.items():
        if "W6" in new["suites"] and arm not in new["checks"]:
            reason = w6.unsupported(arm, str(check.get("storage", "")))
            if reason:
                check.setdefault("unsupported", {}).setdefault("W6", reason)
        for scen in (x for x in GAPS if x in new["suites"] and arm not in new["checks"]):
            if gap := GAPS[scen](arm):
                check.setdefault("unsupported", {}).setdefault(scen, gap)
    merged["checks"] = checks
    merged["scale"] = {**new["scale"], **base["scale"]}
    env = new["environment"]
    merged["appended"] = [
        *base.get("appended", []),
        {
            "stamp": new["stamp"],
            "suites": new["suites"],
            "arms": new["arms"],
            "overrides": new.get("overrides", {}),
            "loadavg_start": env.get("loadavg_start"),
            "loadavg_end": env.get("loadavg_end"),
            "marker": new.get("marker"),
        },
    ]
    return merged


def _merge_rows(
    outdir: str, rows: dict[str, list[dict[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    """The appended scenarios' rows, after the rows an earlier CSV of the same scenario
    holds for arms this run did not measure again (a rerun replaces an arm's rows)."""
    merged: dict[str, list[dict[str, Any]]] = {}
    for scen, new in rows.items():
        path = os.path.join(outdir, f"{scen}.csv")
        old: list[dict[str, Any]] = []
        if os.path.exists(path):
            with open(path, newline="") as f:
                again = {r["arm"] for r in new}
                old = [r for r in csv.DictReader(f) if r["arm"] not in again]
        merged[scen] = [*old, *new]
    return merged


def _measure(thunk: Callable[[], Any]) -> dict[str, Any]:
    t = time.time()
    try:
        row: dict[str, Any] = thunk()
    except Exception as exc:  # one broken arm must not end the suite
        row = {
            "valid": False,
            "reason": f"{type(exc).__name__}: {exc}"[:800],
            "trace": traceback.format_exc()[-800:],
        }
    row["wall_s"] = round(time.time() - t, 3)
    return row


def _w1_capacity(rows: list[dict[str, Any]]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for r in rows:
        if r.get("valid") and not r["warmup"] and r.get("jobs_per_s"):
            by.setdefault(r["arm"], []).append(r["jobs_per_s"])
    return {a: statistics.median(v) for a, v in by.items()}


def _write(
    outdir: str,
    rows: dict[str, list[dict[str, Any]]],
    raw: list[tuple[str, list[dict[str, Any]]]],
    meta: dict[str, Any],
) -> None:
    for scen, rs in rows.items():
        _csv(os.path.join(outdir, f"{scen}.csv"), rs)
    for name, rs in raw:
        _csv(os.path.join(outdir, "raw", f"{name}.csv"), rs)
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, default=str)


def _csv(path: str, rs: list[dict[str, Any]]) -> None:
    if not rs:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lead = ["scenario", "param", "arm", "iteration", "warmup", "valid"]
    keys = lead + sorted({k for r in rs for k in r} - set(lead))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rs:
            w.writerow({k: r.get(k, "") for k in keys})
