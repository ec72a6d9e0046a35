"""Issue 23's benchmark scenario: durable steps, conveyor against DBOS Transact 3.x on the
same store type, the same machine, the same run. Jobs (workflows) of 10 no-op steps:
workflows/s, steps/s, store statements and commits per step; then the replay overhead
of a 100-step job whose steps are all saved (conveyor's; :func:`bench.durable_steps.replay_overhead`).

Each measurement is a fresh process on a fresh store (a new SQLite file; a new database
on the run's PostgreSQL cluster, PostgreSQL's durable defaults plus
``pg_stat_statements``), the arms' order rotated every round; the figures are the
medians of the rounds. conveyor's arm runs :mod:`bench.durable_steps` in this Python,
DBOS's :mod:`bench.durable_dbos` in DBOS's venv (``make bench-venv-dbos``).

Counted the same way for both arms (:mod:`bench.sql_counter`): SQLite statements by a
trace callback on every connection of the arm's process, commits as transactions that
wrote; PostgreSQL statements from ``pg_stat_statements``, commits as the WAL's COMMIT
records (``pg_waldump``; transactions that wrote) and, beside them, ``xact_commit``
(every transaction, read-only ones included) and the WAL fsyncs the commits waited on
(``pg_stat_wal.wal_sync``; PostgreSQL merges concurrent commits into one flush).

``--baseline SRC`` adds conveyor's arms run on another checkout's ``src`` (``...-base``:
a before/after in the same run, alternated with the other arms).

Example::

    .venv/bin/python -m bench.durable_peer --rounds 3 --jobs 200
    .venv/bin/python -m bench.durable_peer --baseline ../main-checkout/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.fairness import arm_order
from bench.postgres_cluster import PostgresCluster, find_binary
from bench.sql_counter import PG_SETTINGS, wal_commits

ROOT = Path(__file__).resolve().parent.parent
DBOS_PYTHON = ROOT / ".venv-bench-dbos" / "bin" / "python"
#: The arms per store. SQLite: each tool as shipped (conveyor: WAL, synchronous=NORMAL,
#: which a power cut may roll back the last commits of; DBOS: SQLite's defaults, rollback
#: journal and synchronous=FULL) and each at the other's durability (conveyor
#: ``?synchronous=FULL``; DBOS with conveyor's PRAGMAs on its connections).
#: DBOS's arms call the workflow from 4 threads (its fastest path, the same 4 slots as
#: conveyor's worker); ``dbos-queue`` goes through a DBOS queue (worker_concurrency 4),
#: the path of a job queue, shown beside it. ``--concurrency N``: N for every arm.
ARMS = {
    "sqlite": ("conveyor", "conveyor-full", "dbos", "dbos-wal", "dbos-queue"),
    "postgres": ("conveyor", "dbos", "dbos-queue"),
}
#: The like-for-like pairs the targets are judged on (same durability).
PAIRS = {"sqlite": (("conveyor-full", "dbos"), ("conveyor", "dbos-wal")),
         "postgres": (("conveyor", "dbos"),)}  # fmt: skip
DURABILITY = {
    "sqlite": "conveyor and dbos-wal: WAL + synchronous=NORMAL (a process crash loses "
    "nothing committed; a power cut may roll back the last commits); conveyor-full and "
    "dbos: synchronous=FULL (every commit on disk before it returns; DBOS's rollback "
    "journal, conveyor's WAL); PRAGMAs read back from each arm's connections above",
    "postgres": "one cluster for both, PostgreSQL's defaults read back above "
    "(fsync, synchronous_commit, full_page_writes on)",
}


def measure(
    arm: str, url: str, jobs: int, python: dict[str, str], slots: int = 4
) -> dict[str, Any]:
    tool = arm.split("-")[0]
    module = "bench.durable_steps" if tool == "conveyor" else "bench.durable_dbos"
    env = None
    if arm.endswith("-base"):  # the same bench module, the baseline's conveyor
        env = {**os.environ, "PYTHONPATH": python["baseline"]}
    if arm.startswith("conveyor-full"):
        url += "?synchronous=FULL"
    command = [python[tool], "-m", module, "--url", url, "--jobs", str(jobs)]
    command += ["--concurrency", str(slots)] * (slots != 4)  # the same for every arm
    if tool == "conveyor":
        command.append("--json")
    else:
        command += ["--wal"] * (arm == "dbos-wal") + ["--direct"] * (arm != "dbos-queue")
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=1800, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{arm} failed: {done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def pg_counts(cluster: PostgresCluster, figures: dict[str, Any], steps: int) -> None:
    """Per-step PostgreSQL counts from an arm's counter deltas (and the WAL)."""
    pg = figures.pop("pg")
    waldump = find_binary("pg_waldump")
    start, end = pg["lsn"]
    user = "postgres" if cluster.as_root else None
    if waldump:
        wal = str(cluster.data / "pg_wal")
        figures["commits_per_step"] = wal_commits(waldump, wal, start, end, user) / steps
    figures["statements_per_step"] = pg["statements"] / steps
    figures["xact_commit_per_step"] = pg["xact_commit"] / steps
    if pg.get("wal_sync") is not None:
        figures["wal_syncs_per_step"] = pg["wal_sync"] / steps


def fresh_pg(cluster: PostgresCluster, name: str) -> str:
    import psycopg

    url = cluster.fresh_database(name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return url


def arms(store: str, python: dict[str, str]) -> tuple[str, ...]:
    """The store's arms, with the baseline's conveyor arms when one is given."""
    ours = ARMS[store]
    if "baseline" not in python:
        return ours
    return ours + tuple(f"{a}-base" for a in ours if a.startswith("conveyor"))


def run(
    stores: list[str], rounds: int, jobs: int, python: dict[str, str], slots: int = 4
) -> dict[str, Any]:
    out: dict[str, Any] = {"load_before": os.getloadavg(), "stores": {}}
    for store in stores:
        cluster = PostgresCluster().init(PG_SETTINGS).start() if store == "postgres" else None
        rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        try:
            for i in range(rounds):
                for arm in arm_order(list(arms(store, python)), i):
                    with tempfile.TemporaryDirectory() as tmp:
                        if cluster is None:
                            url = f"sqlite:///{Path(tmp) / 'store.sqlite'}"
                        else:
                            url = fresh_pg(cluster, f"durable_{arm.replace('-', '_')}_{i}")
                        figures = measure(arm, url, jobs, python, slots)
                        if cluster is not None:
                            pg_counts(cluster, figures, jobs * 10)
                        figures["load"] = os.getloadavg()[0]
                        rows[arm].append(figures)
                        print(store, i, arm, json.dumps(figures), flush=True)
                with tempfile.TemporaryDirectory() as tmp:
                    url = (
                        f"sqlite:///{Path(tmp) / 'replay.sqlite'}"
                        if cluster is None
                        else fresh_pg(cluster, f"durable_replay_{i}")
                    )
                    rows["replay"].append(replay(url, python["conveyor"]))
            server = cluster.settings() if cluster is not None else {}
        finally:
            if cluster is not None:
                cluster.stop()
                cluster.remove()
        out["stores"][store] = {"rows": rows, "server": server}
    out["load_after"] = os.getloadavg()
    return out


def replay(url: str, python: str) -> dict[str, float]:
    command = [python, "-m", "bench.durable_steps", "--replay", "--url", url]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"replay failed: {done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def median(rows: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else float("nan")


def report(result: dict[str, Any]) -> list[str]:
    """The table lines, the targets met or missed, and the fairness lines."""
    lines = [
        "| store | arm | workflows/s | steps/s | statements/step | commits/step | runs (steps/s) |",
        "|---|---|---|---|---|---|---|",
    ]
    verdicts, fairness = [], []
    for store, data in result["stores"].items():
        rows = data["rows"]
        for arm in [a for a in rows if a != "replay"]:
            runs = ", ".join(f"{r['steps_per_s']:,.0f}" for r in rows[arm])
            commits = f"{median(rows[arm], 'commits_per_step'):.2f}"
            if store == "postgres":
                commits += (
                    f" ({median(rows[arm], 'xact_commit_per_step'):.2f} xact_commit, "
                    f"{median(rows[arm], 'wal_syncs_per_step'):.2f} WAL fsyncs)"
                )
            lines.append(
                f"| {store} | {arm} | {median(rows[arm], 'jobs_per_s'):,.1f} | "
                f"{median(rows[arm], 'steps_per_s'):,.0f} | "
                f"{median(rows[arm], 'statements_per_step'):.2f} | {commits} | {runs} |"
            )
            fairness.append(f"{store} {arm}: {rows[arm][0]['settings']}")
        for ours, theirs in PAIRS[store]:
            ratio = median(rows[ours], "steps_per_s") / median(rows[theirs], "steps_per_s")
            commits = median(rows[ours], "commits_per_step")
            verdicts.append(
                f"{store}: {ours}/{theirs} steps/s = {ratio:.1f}x (target >= 10x: "
                f"{'met' if ratio >= 10 else 'missed'}); {ours} commits/step {commits:.2f} "
                f"(target <= 1: {'met' if commits <= 1 else 'missed'})"
            )
        overhead = median(rows["replay"], "overhead_ms")
        verdicts.append(
            f"{store}: replay of 100 saved steps {overhead:.2f} ms over a plain job (target "
            f"<= 5 ms: {'met' if overhead <= 5 else 'missed'}; runs "
            + ", ".join(f"{r['overhead_ms']:.2f}" for r in rows["replay"])
            + ")"
        )
        if data["server"]:
            fairness.append(f"{store} server (read back): {data['server']}")
        fairness.append(f"{store} durability: {DURABILITY[store]}")
    load = (
        f"load average {result['load_before'][0]:.1f} before, "
        f"{result['load_after'][0]:.1f} after (1 min); per run: "
        + "; ".join(
            f"{store} "
            + ", ".join(
                f"{r['load']:.1f}" for arm in d["rows"] if arm != "replay" for r in d["rows"][arm]
            )
            for store, d in result["stores"].items()
        )
    )
    return [*lines, "", *verdicts, "", *fairness, load]


def _version(python: str) -> str:
    command = [python, "-c", "import importlib.metadata as m; print(m.version('dbos'))"]
    return subprocess.run(command, capture_output=True, text=True).stdout.strip()


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.durable_peer")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--stores", default="sqlite,postgres")
    p.add_argument("--dbos-python", default=str(DBOS_PYTHON))
    p.add_argument("--out", type=Path, help="also write the raw figures here (JSON)")
    p.add_argument("--baseline", help="another checkout's src: its conveyor as -base arms")
    p.add_argument("--concurrency", type=int, default=4,
                   help="slots of every arm (conveyor's worker, DBOS's threads or queue)")  # fmt: skip
    args = p.parse_args()
    python = {"conveyor": sys.executable, "dbos": args.dbos_python}
    if args.baseline:
        python["baseline"] = str(Path(args.baseline).resolve())
    print(f"DBOS Transact {_version(args.dbos_python)}, conveyor in {sys.executable}", flush=True)
    result = run(args.stores.split(","), args.rounds, args.jobs, python, args.concurrency)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    print("\n".join(report(result)))


if __name__ == "__main__":
    main()
