"""PNG charts (matplotlib, Agg backend): W1 throughput, W3 latency over time, W4."""

from __future__ import annotations

import csv
import glob
import os
import statistics
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on a benchmark box
import matplotlib.pyplot as plt


def _ok(r: dict[str, Any]) -> bool:
    return r.get("valid") == "True" and r.get("warmup") != "True"


def draw_all(outdir: str, rows: dict[str, list[dict[str, Any]]], img: str) -> None:
    os.makedirs(img, exist_ok=True)
    if "W1" in rows:
        w1(rows["W1"], os.path.join(img, "w1.png"))
    raws = sorted(glob.glob(os.path.join(outdir, "raw", "W3_*.csv")))
    if raws:
        w3(raws, os.path.join(img, "w3_latency.png"))
    if "W4" in rows:
        w4(rows["W4"], os.path.join(img, "w4.png"))


def w1(rs: list[dict[str, Any]], path: str) -> None:
    by: dict[str, list[float]] = {}
    for r in rs:
        if _ok(r):
            by.setdefault(r["arm"], []).append(float(r["jobs_per_s"]))
    if not by:
        return
    arms = sorted(by, key=lambda a: statistics.median(by[a]))
    med = [statistics.median(by[a]) for a in arms]
    err = [
        [m - min(by[a]) for a, m in zip(arms, med, strict=True)],
        [max(by[a]) - m for a, m in zip(arms, med, strict=True)],
    ]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(arms) + 1.5))
    ax.barh(
        arms,
        med,
        xerr=err,
        color=["#d62728" if a.startswith("conveyor") else "#7f7f7f" for a in arms],
    )
    ax.set_xlabel("noop jobs/s (median, min-max), one worker process")
    ax.set_title("W1 pre-filled queue throughput")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def w3(paths: list[str], path: str) -> None:
    """Latency vs scheduled arrival time, first measured iteration of each arm at 90%
    (and 50%) of its own capacity."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, pct in zip(axes, ("50", "90"), strict=True):
        for p in paths:
            name = os.path.basename(p)[3:-4]  # arm_pct_iter
            arm, fpct, it = name.rsplit("_", 2)
            if fpct != pct or it != "0":
                continue
            with open(p) as f:
                data = list(csv.DictReader(f))
            ax.plot(
                [float(d["sched_s"]) for d in data],
                [float(d["latency_ms"]) for d in data],
                ".",
                ms=2,
                label=arm,
            )
        ax.set_title(f"W3 at {pct}% of W1 capacity")
        ax.set_xlabel("scheduled arrival (s)")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("latency from scheduled arrival (ms, log)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def w4(rs: list[dict[str, Any]], path: str) -> None:
    kinds = sorted({r["param"].split(" c=")[0] for r in rs})
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.5 * len(kinds), 4), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        by: dict[str, dict[int, list[float]]] = {}
        for r in rs:
            if _ok(r) and r["param"].startswith(kind + " "):
                c = int(r["param"].split("c=")[1])
                by.setdefault(r["arm"], {}).setdefault(c, []).append(float(r["jobs_per_s"]))
        for arm, cs in sorted(by.items()):
            xs = sorted(cs)
            ax.plot(xs, [statistics.median(cs[c]) for c in xs], "o-", label=arm)
        ax.set_title(f"W4 {kind}")
        ax.set_xlabel("concurrency")
        ax.set_ylabel("jobs/s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
