"""One function per scenario; each performs ONE measurement (fresh state, fresh worker
process, fresh producer process) and returns a row for the CSV. Fairness rules that
apply per measurement (verification, identical completion detection) live here."""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from bench import arms, harness, jobs
from bench.marker import MarkerFile
from bench.postgres_cluster import PostgresCluster

#: The one database every PostgreSQL measurement uses, dropped and created again per
#: measurement (a fixed name, so worker commands built in the harness process name it).
PG_DATABASE = "bench_store"


@dataclasses.dataclass
class Ctx:
    """Everything a measurement needs: the suite's Redis (``None`` when no Redis arm
    runs), a scratch dir, the scale, the current measurement's marker file, and the
    suite's PostgreSQL cluster (``None`` when no PostgreSQL arm runs)."""

    redis: harness.RedisServer | None
    workdir: str
    scale: dict[str, Any]
    postgres: PostgresCluster | None = None
    #: the fsync-off cluster, for arms named with ``arms.FSYNC_OFF`` (started only for them)
    postgres_fast: PostgresCluster | None = None
    counter: int = 0
    w1_capacity: dict[str, float] = dataclasses.field(default_factory=dict)
    raw: list[tuple[str, list[dict[str, Any]]]] = dataclasses.field(default_factory=list)
    marker: MarkerFile | None = None

    def fresh_env(self, arm: str, results: bool = False) -> dict[str, str]:
        """A clean store per measurement: FLUSHALL Redis, a new SQLite file, a new
        PostgreSQL database (for a PostgreSQL arm) and a new, empty marker file."""
        if self.redis is not None:
            self.redis.flushall()
        self.counter += 1
        path = os.path.join(self.workdir, f"m{self.counter}.db")
        if self.marker is not None:  # read by now; W1 at 100k jobs leaves 6.4 MB
            os.unlink(self.marker.path)
        self.marker = MarkerFile(os.path.join(self.workdir, f"m{self.counter}.marks"))
        env = dict(os.environ)
        env.update(
            {
                "BENCH_VARIANT": arms.base_name(arm),
                "BENCH_SQLITE_PATH": path,
                jobs.PATH_ENV: self.marker.path,
                "BENCH_RESULTS": "1" if results else "0",
                # The suite's modules first; a PYTHONPATH given to the run follows (to
                # measure another checkout's conveyor: PYTHONPATH=<its src>).
                "PYTHONPATH": os.pathsep.join(
                    filter(None, [harness.ROOT, os.environ.get("PYTHONPATH")])
                ),
                "PYTHONUNBUFFERED": "1",
            }
        )
        if self.redis is not None:
            env["BENCH_REDIS_URL"] = self.redis.url
        if arms.needs_postgres(arm):
            cluster = self.postgres_fast if arms.fsync_off(arm) else self.postgres
            if cluster is None:
                raise RuntimeError(f"{arm} needs PostgreSQL, and this run started no cluster")
            url = cluster.fresh_database(PG_DATABASE)
            env["BENCH_POSTGRES_URL"] = env["BENCH_CONVEYOR_URL"] = url
            # Worker commands that name the server (pgqueuer's, oban's) are built in this
            # process: the cluster of this measurement, not the one first set.
            os.environ["BENCH_POSTGRES_URL"] = url
        elif arms.needs_redis(arm):
            if self.redis is None:
                raise RuntimeError(f"{arm} needs Redis, and this run started no redis-server")
            env["BENCH_CONVEYOR_URL"] = f"{self.redis.url}/0"
        else:
            # Explicit: conveyor's default is NORMAL too; spelled out so the PRAGMA set
            # matches Huey's (CommonPragmaStorage) by construction, not by accident.
            # The -durable variant is issue 16's durable mode: every commit fsynced.
            sync = "FULL" if arm.endswith("-durable") else "NORMAL"
            env["BENCH_CONVEYOR_URL"] = f"sqlite:///{path}?synchronous={sync}&busy_timeout=5000"
        return env


def _fresh(ctx: Ctx, arm: str, results: bool = False) -> dict[str, str]:
    """A fresh store, created by the arm's own init command where it has one (qler: two
    processes running qler's schema set-up at once on a new file race on ALTER TABLE)."""
    env = ctx.fresh_env(arm, results)
    cmd = arms.make(arm).store_init_cmd(env)
    if cmd:
        proc = subprocess.run(
            cmd, env=env, cwd=harness.ROOT, capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            raise RuntimeError(f"store init failed: {(proc.stderr or proc.stdout)[-800:]}")
    return env


def _worker(
    arm: str,
    env: dict[str, str],
    concurrency: int | None = None,
    burst: bool = True,
    verbose: bool = False,
) -> harness.Worker:
    a = arms.make(arm)
    cmd = a.worker_cmd(concurrency or a.variant.concurrency, burst, verbose)
    return harness.Worker(cmd, env, a.ready_marker, stop_grace=a.stop_grace)


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-len(s) * p // 1)) - 1))  # nearest-rank
    return s[k]


def _marker(ctx: Ctx) -> MarkerFile:
    assert ctx.marker is not None, "fresh_env() makes the measurement's marker file"
    return ctx.marker


def _finish(ctx: Ctx, worker: harness.Worker, n: int, timeout: float) -> dict[str, Any]:
    """Wait for n completion records, stop the worker, verify them exactly."""
    _, t_done = _marker(ctx).wait(n, timeout, worker.alive)
    cpu_done = worker.sample_now()[1] if worker.alive() else worker.cpu_at(t_done)
    worker.stop()
    row = _marker(ctx).verify(n)
    row["cpu_at_done"] = cpu_done
    if not row["valid"]:
        row["reason"] = (
            f"expected jobs 0..{n - 1} once each; records {row['done']}, distinct "
            f"{row['distinct']}, duplicates {row['duplicates']}, missing {row['lost']}, "
            f"out of range {row['stray']}, torn {row['torn']}; worker log: "
        )
        row["reason"] += " | ".join(list(worker.tail)[-5:])
    return row


def e1(ctx: Ctx, arm: str, n: int) -> dict[str, Any]:
    env = _fresh(ctx, arm)
    r = harness.run_producer({"arm": arm, "action": "e1", "n": n}, env, timeout=600)
    return {"n": n, "valid": True, **r}


def e2(ctx: Ctx, arm: str, n: int) -> dict[str, Any]:
    env = _fresh(ctx, arm)
    r = harness.run_producer({"arm": arm, "action": "e2", "n": n}, env, timeout=600)
    return {"n": n, "valid": True, **r}


def _throughput_run(
    ctx: Ctx, arm: str, n: int, kind: str, concurrency: int | None = None
) -> dict[str, Any]:
    """Pre-fill n jobs, start one fresh worker, first job start to last job end."""
    env = _fresh(ctx, arm)
    harness.run_producer({"arm": arm, "action": "fill", "n": n, "kind": kind}, env, 600)
    return drain(ctx, _worker(arm, env, concurrency, burst=True), n)


def drain(ctx: Ctx, worker: harness.Worker, n: int) -> dict[str, Any]:
    """Wait for the n pre-filled jobs, verify them, and time the span: first job start to
    last job end (the W1 figure), CPU of the worker's tree over that span, RSS."""
    row = _finish(ctx, worker, n, timeout=ctx.scale["timeout"])
    t = _marker(ctx).timings()
    if not row["valid"] or not t:
        return row
    first = min(s for _, _, s, _ in t)
    last = max(e for _, _, _, e in t)
    cpu = row.pop("cpu_at_done") - worker.cpu_at(first)
    row.update(
        {
            "jobs_per_s": n / (last - first),
            "span_s": last - first,
            "start_to_last_s": last - worker.started,
            "queue_p50_ms": statistics.median(s - t0 for _, t0, s, _ in t) * 1000,
            "exec_p50_ms": statistics.median(e - s for _, _, s, e in t) * 1000,
            "cpu_s_per_1000": cpu / n * 1000,
            "peak_rss_mib": worker.peak_rss() / 2**20,
        }
    )
    return row


def w1(ctx: Ctx, arm: str, n: int) -> dict[str, Any]:
    return _throughput_run(ctx, arm, n, "noop")


def w4(ctx: Ctx, arm: str, kind: str, concurrency: int, n: int) -> dict[str, Any]:
    row = _throughput_run(ctx, arm, n, kind, concurrency)
    return {"kind": kind, "concurrency": concurrency, **row}


def _warm(ctx: Ctx, arm: str, env: dict[str, str], worker: harness.Worker) -> bool:
    """Push a few jobs through a fresh long-running worker, then reset the marker."""
    harness.run_producer({"arm": arm, "action": "fill", "n": 5, "base": 0}, env, 120)
    done, _ = _marker(ctx).wait(5, 60, worker.alive)
    # All 5 records are written; the worker keeps its O_APPEND descriptor, so after the
    # truncation its next record lands at offset 0 of the emptied file.
    _marker(ctx).reset()
    return done >= 5


def w2(ctx: Ctx, arm: str, n: int) -> dict[str, Any]:
    env = _fresh(ctx, arm, results=True)
    worker = _worker(arm, env, burst=False)
    try:
        if not _warm(ctx, arm, env, worker):
            worker.stop()
            return {
                "n": n,
                "valid": False,
                "reason": "warm-up jobs never ran: " + " | ".join(list(worker.tail)[-5:]),
            }
        r = harness.run_producer({"arm": arm, "action": "w2", "n": n, "warmup": 3}, env, 600)
        # Idle CPU: the worker with an empty queue, over a fixed window, same for all.
        c0 = worker.sample_now()
        time.sleep(ctx.scale["idle_s"])
        c1 = worker.sample_now()
    except Exception:
        worker.stop()
        raise
    row = _finish(ctx, worker, n + 3, timeout=30)
    lat = r["latencies_ms"]
    row.pop("cpu_at_done", None)
    # Enqueue -> job body start, from the records (the wake-up path alone, without the
    # result's way back); the 3 warm-up round trips have indices n..n+2.
    starts = [(s - t0) * 1000 for i, t0, s, _ in _marker(ctx).timings() if i < n]
    if starts:
        row.update({"start_p50_ms": statistics.median(starts), "start_p99_ms": _pct(starts, 0.99)})
    row.update(
        {
            "p50_ms": statistics.median(lat),
            "p99_ms": _pct(lat, 0.99),
            "max_ms": max(lat),
            "idle_cpu_pct": (c1[1] - c0[1]) / (c1[0] - c0[0]) * 100,
        }
    )
    return row


def w3(ctx: Ctx, arm: str, fraction: float, iteration: int) -> dict[str, Any]:
    capacity = ctx.w1_capacity.get(arm)
    if not capacity:
        return {"fraction": fraction, "valid": False, "reason": "no W1 capacity measured"}
    rate = capacity * fraction
    duration = ctx.scale["w3_s"]
    env = _fresh(ctx, arm)
    worker = _worker(arm, env, burst=False)
    try:
        if not _warm(ctx, arm, env, worker):
            worker.stop()
            return {"fraction": fraction, "valid": False, "reason": "warm-up never ran"}
        r = harness.run_producer(
            {"arm": arm, "action": "w3", "rate": rate, "duration": duration}, env, duration + 300
        )
    except Exception:
        worker.stop()
        raise
    n = int(r["n"])
    row = _finish(ctx, worker, n, timeout=max(10.0, duration * 3))
    row.pop("cpu_at_done", None)
    t = _marker(ctx).timings()
    row.update({"fraction": fraction, "rate": rate, "late_enqueues": r["late_enqueues"]})
    if not t:
        return row
    lat = [(e - t0) * 1000 for _, t0, _, e in t]
    ends = sorted(e for *_, e in t)
    scheds = sorted(t0 for _, t0, _, _ in t)
    row.update(
        {
            "p50_ms": statistics.median(lat),
            "p99_ms": _pct(lat, 0.99),
            "max_ms": max(lat),
            "peak_backlog": _peak_backlog(scheds, ends),
            "drain_s": max(ends) - r["t_last"],
        }
    )
    ctx.raw.append(
        (
            f"W3_{arm}_{int(fraction * 100)}_{iteration}",
            [
                {"sched_s": round(t0 - r["t_start"], 6), "latency_ms": round((e - t0) * 1000, 3)}
                for _, t0, _, e in sorted(t, key=lambda x: x[1])
            ],
        )
    )
    return row


def _peak_backlog(scheds: list[float], ends: list[float]) -> int:
    """Max over time of (arrived by t) - (finished by t), by a merge of both streams."""
    i = j = peak = 0
    while i < len(scheds):
        if j < len(ends) and ends[j] <= scheds[i]:
            j += 1
        else:
            i += 1
            peak = max(peak, i - j)
    return peak


def w5(ctx: Ctx, arm: str) -> dict[str, Any]:
    """Cold start: one job waiting; worker command to ready line, and to first job done."""
    env = _fresh(ctx, arm)
    harness.run_producer({"arm": arm, "action": "fill", "n": 1}, env, 120)
    worker = _worker(arm, env, burst=True, verbose=True)
    row = _finish(ctx, worker, 1, timeout=60)
    row.pop("cpu_at_done", None)
    t = _marker(ctx).timings()
    if t:
        row["first_job_done_ms"] = (t[0][3] - worker.started) * 1000
    row["ready_ms"] = (worker.ready_at - worker.started) * 1000 if worker.ready_at else float("nan")
    # The interpreter's own start-up by the same method: the floor under every W5 figure.
    row["python_start_ms"] = _spawn_until_done([sys.executable, COLD_START, "--floor"], env)
    store = _fresh(ctx, arm)  # an empty store of its own
    cmd = arms.make(arm).in_process_cmd(store)
    if cmd is not None:
        row["inprocess_first_job_ms"] = _spawn_until_done(cmd, store)
    return row


COLD_START = os.path.join(os.path.dirname(__file__), "cold_start.py")


def _spawn_until_done(cmd: list[str], env: dict[str, str]) -> float:
    """Milliseconds from just before spawning ``cmd`` to the wall time it prints as
    ``done <t>`` (see bench/cold_start.py)."""
    started = time.time()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("done "):
            return (float(line.split()[1]) - started) * 1000
    raise RuntimeError(f"{cmd[1]} did not finish a job: {out.stdout[-300:]} {out.stderr[-500:]}")


# -- W6: two workers on one SQLite file (issue 16) ------------------------------------------
