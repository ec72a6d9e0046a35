"""Reports: ``report.md`` inside a results directory, and ``BENCHMARKS.md`` at the repo
root regenerated from the latest full run (with PNG charts, matplotlib Agg)."""

from __future__ import annotations

import csv
import glob
import json
import os
import shutil
import statistics
from typing import Any

from bench import harness
from bench import marker as marker_mod

RESULTS = os.path.join(harness.ROOT, "bench", "results")

#: scenario -> (primary metric, other metrics) shown in tables
METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "E1": ("jobs_per_s", ()),
    "E2": ("jobs_per_s", ()),
    "W1": ("jobs_per_s", ("cpu_s_per_1000", "peak_rss_mib", "start_to_last_s")),
    "W2": ("p50_ms", ("p99_ms", "max_ms", "idle_cpu_pct")),
    "W3": (
        "p99_ms",
        ("rate", "p50_ms", "max_ms", "peak_backlog", "drain_s", "lost", "late_enqueues"),
    ),
    "W4": ("jobs_per_s", ("queue_p50_ms", "exec_p50_ms", "cpu_s_per_1000", "peak_rss_mib")),
    "W5": ("first_job_done_ms", ("ready_ms", "inprocess_first_job_ms", "python_start_ms")),
    # W6 is two tables (drain rows, producer rows): see w6_tables
    "W6": ("jobs_per_s", ("smaller_share", "cpu_s_per_1000")),
    "W7": ("jobs_per_s", ("cpu_s_per_1000", "start_to_last_s", "peak_rss_mib")),
    "W8": ("wait_p99_ms", ("wait_p50_ms", "wait_max_ms", "overlap", "late_enqueues")),
}
#: W6's producers-and-workers rows, shown by their enqueue latency
W6_PRODUCERS: tuple[str, tuple[str, ...]] = (
    "enqueue_p99_ms",
    ("enqueue_p50_ms", "enqueue_max_ms", "late_enqueues", "rate", "e2e_p99_ms"),
)
#: the floor arm of each storage (bench/arms/floor_arm.py): E1/E2 print it beside each arm
FLOORS = {"sqlite": "floor-sqlite", "redis": "floor-redis"}
TITLES = {
    "E1": "E1 enqueue one at a time (jobs/s, higher is better)",
    "E2": "E2 batch enqueue (jobs/s)",
    "W1": "W1 pre-filled noop queue, one fresh worker, first job start to last job end",
    "W2": "W2 sequential round trip enqueue -> worker -> result (ms); idle CPU % of a core",
    "W3": "W3 open loop at 50% / 90% of the arm's W1 capacity (latency from scheduled time)",
    "W4": "W4 cpu / io / mixed x concurrency",
    "W5": "W5 cold start (ms from spawning the worker command; in-process: from spawning "
    "one process that enqueues and runs the job itself; python_start_ms: `python -c` alone)",
    "W6": "W6 two `conveyor worker` processes on one SQLite file (W1's queue drained by one "
    "and by two, alternated; then producers enqueueing one at a time while two workers run)",
    "W7": "W7 one default worker consuming many queues (jobs round robin over them; first "
    "job start to last job end)",
    "W8": "W8 short noop jobs at a steady rate, alone and while long sleeping jobs hold "
    "slots; wait = enqueue call -> job start (ms, from the completion records)",
}


def load(outdir: str) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    with open(os.path.join(outdir, "meta.json")) as f:
        meta = json.load(f)
    rows: dict[str, list[dict[str, Any]]] = {}
    for path in glob.glob(os.path.join(outdir, "*.csv")):
        with open(path) as f:
            rows[os.path.basename(path)[:-4]] = list(csv.DictReader(f))
    return meta, rows


def _num(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if x != x else x  # drop NaN


def summarise(rs: list[dict[str, Any]], metric: str) -> dict[tuple[str, str], list[float]]:
    """(param, arm) -> values of ``metric`` over measured, verified runs."""
    out: dict[tuple[str, str], list[float]] = {}
    for r in rs:
        if r.get("warmup") == "True" or r.get("valid") != "True":
            continue
        v = _num(r.get(metric))
        if v is not None:
            out.setdefault((r["param"], r["arm"]), []).append(v)
    return out


def _fmt(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}" if abs(x) >= 1 else f"{x:.3f}"


def table(
    scen: str,
    rs: list[dict[str, Any]],
    storage: dict[str, str] | None = None,
    metrics: tuple[str, tuple[str, ...]] | None = None,
) -> list[str]:
    """One scenario's markdown table: median (min-max) of its primary metric per (param,
    arm), the medians of the others. E1/E2 add each arm's floor (the floor arm of its
    ``storage``, same N) and the ratio to it, when the run measured the floors."""
    if scen == "W6" and metrics is None:
        return w6_tables(rs)
    primary, others = metrics or METRICS[scen]
    prim = summarise(rs, primary)
    extra = {m: summarise(rs, m) for m in others}
    keys = sorted({(r["param"], r["arm"]) for r in rs}, key=lambda k: (_pkey(k[0]), k[1]))
    floors = scen in ("E1", "E2") and any(arm in FLOORS.values() for _, arm in keys)
    head = ["param", "arm", f"{primary} median (min-max)", "valid/runs", *others]
    if floors:
        head += ["floor (same N)", "x floor"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        runs = [r for r in rs if (r["param"], r["arm"]) == key and r.get("warmup") != "True"]
        ok = sum(r.get("valid") == "True" for r in runs)
        v = prim.get(key, [])
        cell = f"{_fmt(statistics.median(v))} ({_fmt(min(v))}-{_fmt(max(v))})" if v else "n/a"
        cols = [
            _fmt(statistics.median(extra[m][key])) if extra[m].get(key) else "n/a" for m in others
        ]
        if floors:
            cols += _floor_cells(key, prim, (storage or {}).get(key[1], ""))
        lines.append("| " + " | ".join([key[0], key[1], cell, f"{ok}/{len(runs)}", *cols]) + " |")
    if scen == "W4":
        lines += ["", *marginal_rss(rs)]
    return lines


def _floor_cells(
    key: tuple[str, str], prim: dict[tuple[str, str], list[float]], storage: str
) -> list[str]:
    """[floor's median jobs/s at the same N, this arm's median / that] for one E1/E2 row;
    ``-`` for a floor's own row and for arms whose storage has no floor (PostgreSQL)."""
    param, arm = key
    floor = FLOORS.get(storage)
    if floor is None or arm == floor:
        return ["-", "-"]
    mine, theirs = prim.get(key), prim.get((param, floor))
    if not mine or not theirs:
        return ["n/a", "n/a"]
    ratio = statistics.median(mine) / statistics.median(theirs)
    return [f"{_fmt(statistics.median(theirs))} ({floor})", f"{ratio:.2f}x"]


def w6_tables(rs: list[dict[str, Any]]) -> list[str]:
    """W6 as two tables: the drain by one and by two workers with the speed-up (median of
    two over median of one, per arm), then the producers' enqueue latency."""
    drain = [r for r in rs if r["param"].startswith("drain")]
    rest = [r for r in rs if not r["param"].startswith("drain")]
    lines = [*table("W6", drain, metrics=METRICS["W6"]), ""]
    rates = summarise(drain, "jobs_per_s")
    for arm in sorted({a for _, a in rates}):
        one, two = rates.get(("drain 1 worker", arm)), rates.get(("drain 2 workers", arm))
        if one and two:
            speedup = statistics.median(two) / statistics.median(one)
            lines.append(
                f"- {arm}: two workers drain at {speedup:.2f}x one worker's rate (medians)"
            )
    if rest:
        lines += ["", *table("W6", rest, metrics=W6_PRODUCERS)]
    return lines


def _pkey(p: str) -> tuple[str, int, str]:
    if p.isdigit():
        return ("", int(p), "")
    if p.endswith(" queues") and p.split()[0].isdigit():  # W7: by count, not as text
        return ("", int(p.split()[0]), p)
    head, _, c = p.partition(" c=")
    return (head, int(c) if c.isdigit() else 0, p)


def marginal_rss(rs: list[dict[str, Any]]) -> list[str]:
    """(peak RSS at the highest concurrency - at c=1) / extra units, per arm and kind."""
    rss = summarise(rs, "peak_rss_mib")
    out = ["Marginal RSS per extra unit of concurrency (MiB):", ""]
    seen = set()
    for param, arm in rss:
        kind = param.split(" c=")[0]
        if (kind, arm) in seen:
            continue
        seen.add((kind, arm))
        cs = sorted(int(p.split("c=")[1]) for (p, a) in rss if a == arm and p.startswith(kind))
        if len(cs) < 2:
            continue
        lo = statistics.median(rss[(f"{kind} c={cs[0]}", arm)])
        hi = statistics.median(rss[(f"{kind} c={cs[-1]}", arm)])
        out.append(
            f"- {arm} {kind}: {(hi - lo) / (cs[-1] - cs[0]):.1f} MiB/unit "
            f"(c={cs[0]} {lo:.0f} MiB -> c={cs[-1]} {hi:.0f} MiB)"
        )
    return out


def body(meta: dict[str, Any], rows: dict[str, list[dict[str, Any]]], img: str) -> list[str]:
    env = meta["environment"]
    lines = ["## Environment", ""]
    lines += [
        f"- CPU: {env['cpu']}, {env['cores']} cores; memory {env['memory']}",
        f"- {env['os']}",
        f"- Python {env['python']}, SQLite {env['sqlite']}, "
        + (
            "no redis-server (no Redis arm in this run)"
            if str(env["redis_server"]).startswith("not started")
            else f"redis-server {env['redis_server']} (private instance, loopback, no persistence)"
        ),
        f"- load average (1/5/15 min) at start {env.get('loadavg_start', '?')}, "
        f"at end {env.get('loadavg_end', '?')} on {env['cores']} cores",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
        f"- run {meta['stamp']}: quick={meta['quick']}, scale {meta['scale']}",
        f"- completion marker: {marker_mod.describe(meta.get('marker'))}",
        *[
            f"- appended later: {', '.join(a['suites'])} ({', '.join(a['arms'])}), run "
            f"{a['stamp']} into this directory"
            + (f" with {a['overrides']}" if a.get("overrides") else "")
            + f", load average at start {a.get('loadavg_start')}"
            f", at end {a.get('loadavg_end')}; completion marker then: "
            f"{marker_mod.describe(a.get('marker'))}"
            for a in meta.get("appended", [])
        ],
        "",
    ]
    lines += ["## Fairness checklist (enforced in code)", ""]
    lines += [f"- {c}" if not c.startswith("  ") else f"  - {c.strip()}" for c in meta["checklist"]]
    lines += [
        "",
        "## Arms",
        "",
        "| arm | configuration | storage | cannot do |",
        "|---|---|---|---|",
    ]
    for arm, c in meta["checks"].items():
        cannot = "; ".join(f"{k}: {v}" for k, v in c.get("unsupported", {}).items())
        if not c["available"]:
            cannot = f"everything: {c['reason']}"
        lines.append(
            f"| {arm} | {c.get('config', '')} | {c.get('storage', '')} | {cannot or '-'} |"
        )
    lines.append("")
    from bench import targets  # late: targets imports this module

    lines += ["## Targets from issues 16 and 14 (conveyor, this run)", "", *targets.check(rows), ""]
    storage = {arm: str(c.get("storage", "")) for arm, c in meta["checks"].items()}
    for scen in METRICS:
        if scen not in rows:
            continue
        lines += [f"## {TITLES[scen]}", "", *table(scen, rows[scen], storage), ""]
        chart = {"W1": "w1.png", "W3": "w3_latency.png", "W4": "w4.png"}.get(scen)
        if chart and os.path.exists(os.path.join(img, chart)):
            lines += [f"![{scen}]({os.path.basename(img)}/{chart})", ""]
    bad = [r for rs in rows.values() for r in rs if r.get("valid") != "True"]
    if bad:
        lines += ["## Discarded runs", ""]
        lines += [
            f"- {r['scenario']} {r['param']} {r['arm']} #{r['iteration']}: "
            f"{(r.get('reason') or '')[:200]}"
            for r in bad
        ]
    return lines


def _draw(outdir: str, rows: dict[str, list[dict[str, Any]]], img: str) -> None:
    # Imported here: matplotlib costs ~1 s to import, and a run without charts skips it.
    from bench import charts

    charts.draw_all(outdir, rows, img)


def write_run_report(outdir: str, draw: bool = True) -> str:
    """``report.md`` in ``outdir`` from its CSVs, with PNG charts unless ``draw`` is
    false (the report then links only the charts already there)."""
    meta, rows = load(outdir)
    img = os.path.join(outdir, "charts")
    if draw:
        _draw(outdir, rows, img)
    path = os.path.join(outdir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join([f"# Benchmark run {meta['stamp']}", "", *body(meta, rows, img)]))
    return path


def latest_full_run() -> str | None:
    runs = sorted(glob.glob(os.path.join(RESULTS, "*", "meta.json")), reverse=True)
    for path in runs:
        with open(path) as f:
            if not json.load(f)["quick"]:
                return os.path.dirname(path)
    return None


def _marker_name(meta: dict[str, Any]) -> str:
    """Which completion marker a result directory was measured with, in a few words."""
    m = meta.get("marker")
    if not m:
        return "Redis round-trip marker (~85 µs a job, before issue 16: figures capped by it)"
    return f"file-append marker ({m['cost_us']:.1f} µs a job, measured in the same run)"


def write_benchmarks_md(outdir: str | None = None) -> str:
    """Regenerate BENCHMARKS.md (and its charts under bench/charts/) from a run."""
    outdir = outdir or latest_full_run()
    if outdir is None:
        raise SystemExit("no full (non --quick) run under bench/results/")
    meta, rows = load(outdir)
    img = os.path.join(harness.ROOT, "bench", "charts")
    os.makedirs(img, exist_ok=True)
    _draw(outdir, rows, img)
    rel = os.path.relpath(outdir, harness.ROOT)
    reduced = " (reduced scale: see the scale line)" if meta.get("overrides") else ""
    head = [
        "# conveyor benchmarks",
        "",
        f"Generated by `python -m bench report` from `{rel}`{reduced}, measured with "
        f"the {_marker_name(meta)}. Rerun with "
        "`make bench-venv && .venv-bench/bin/python -m bench run && "
        ".venv-bench/bin/python -m bench report` (every arm on one Python 3.12, which "
        "qler needs).",
        "Method: `bench/` follows the design note on honest benchmarking (fairness "
        "checklist below); absolute numbers hold for the machine described only, so "
        "compare ratios measured side by side in the same run.",
        "Floors: `floor-sqlite` and `floor-redis` are the raw client doing the same "
        "enqueue (a `BEGIN IMMEDIATE` + `INSERT` of conveyor's own job row + `COMMIT`, "
        "one `executemany` transaction for a batch; a bare redis-py `PING`, one pipeline "
        "of `HSET` + `ZADD` per job), measured in E1/E2 in the same run and rotation as "
        "every system; the E1/E2 tables print each figure beside its storage's floor at "
        "the same N, with the ratio, and issue 16's enqueue targets are those ratios.",
        "",
    ]
    extra = os.path.join(harness.ROOT, "bench", "NOTES.md")
    notes: list[str] = []
    if os.path.exists(extra):
        with open(extra) as f:
            notes = f.read().splitlines()
    # The hot-path section (bench/quick.py before/after figures) is measured by hand
    # across commits, so it lives in its own file and is carried into every report.
    hot = os.path.join(harness.ROOT, "bench", "HOTPATH.md")
    hot_lines: list[str] = []
    if os.path.exists(hot):
        with open(hot) as f:
            hot_lines = ["", *f.read().splitlines()]
    body_lines = body(meta, rows, img)
    body_lines = [ln.replace("](charts/", "](bench/charts/") for ln in body_lines]
    path = os.path.join(harness.ROOT, "BENCHMARKS.md")
    with open(path, "w") as f:
        f.write("\n".join([*head, *notes, "", *body_lines, *hot_lines]) + "\n")
    shutil.copy(os.path.join(outdir, "meta.json"), os.path.join(img, "source-meta.json"))
    return path
