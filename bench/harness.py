"""Processes the suite owns: its private redis-server, worker processes (with a psutil
sampler over the whole process tree) and producer processes. The completion marker's
harness side is :mod:`bench.marker`."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from typing import Any

import psutil

from bench import arms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A private redis-server on a free loopback port, no persistence (never 6379): the
    broker of the Redis arms. The completion marker does not use it (bench/marker.py)."""

    def __init__(self) -> None:
        import redis  # only runs with a Redis arm need redis-py in the harness

        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bench-redis-")
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{self.port}"
        self.client = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        else:
            self.stop()
            raise RuntimeError("redis-server did not start")
        self.version = str(self.client.info("server")["redis_version"])

    def flushall(self) -> None:
        self.client.flushall()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds of a process tree: each live process's own time plus the time of
    children it has already reaped (so fork-per-job workers are counted, never twice)."""
    total = 0.0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def tree_rss(proc: psutil.Process) -> int:
    total = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


class Worker:
    """A fresh worker process, its log reader (for the ready line) and a tree sampler."""

    def __init__(
        self,
        cmd: list[str],
        env: dict[str, str],
        ready_marker: str,
        interval: float = 0.05,
        stop_grace: float = 10.0,
    ) -> None:
        self.cmd = cmd
        self.stop_grace = stop_grace
        self.ready_marker = ready_marker
        self.ready_at: float | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self.samples: list[tuple[float, float, int]] = []  # (time, cpu_s, rss_bytes)
        self._stop = threading.Event()
        self.started = time.time()
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
            errors="replace",
        )
        self.ps = psutil.Process(self.proc.pid)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._sampler = threading.Thread(target=self._sample, args=(interval,), daemon=True)
        self._sampler.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if self.ready_at is None and self.ready_marker and self.ready_marker in line:
                self.ready_at = time.time()
            self.tail.append(line.rstrip())

    def _sample(self, interval: float) -> None:
        while not self._stop.is_set() and self.proc.poll() is None:
            self.samples.append((time.time(), tree_cpu(self.ps), tree_rss(self.ps)))
            self._stop.wait(interval)

    def sample_now(self) -> tuple[float, float, int]:
        s = (time.time(), tree_cpu(self.ps), tree_rss(self.ps))
        self.samples.append(s)
        return s

    def cpu_at(self, t: float) -> float:
        """CPU seconds at the last sample taken at or before ``t``."""
        best = 0.0
        for ts, cpu, _ in self.samples:
            if ts <= t:
                best = cpu
        return best

    def peak_rss(self) -> int:
        return max((rss for _, _, rss in self.samples), default=0)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace: float | None = None) -> None:
        """SIGTERM the worker's own process group, SIGKILL it after ``grace`` seconds
        (default: the arm's ``stop_grace``). Always after the measurement."""
        grace = self.stop_grace if grace is None else grace
        self._stop.set()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        else:
            # burst workers exit by themselves; kill any straggler left in their group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._reader.join(2)


def run_producer(spec: dict[str, Any], env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run one producer process; return its JSON result or raise with its output."""
    proc = subprocess.run(
        [arms.python_for(spec["arm"]), "-m", "bench.producer", json.dumps(spec)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"producer failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_producers(
    specs: list[dict[str, Any]], env: dict[str, str], timeout: float
) -> list[dict[str, Any]]:
    """Run one producer process per spec, all at once (W6's concurrent producers);
    return their JSON results in spec order, or raise with a failed one's output."""
    procs = [
        subprocess.Popen(
            [arms.python_for(spec["arm"]), "-m", "bench.producer", json.dumps(spec)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for spec in specs
    ]
    results: list[dict[str, Any]] = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"producer failed ({proc.returncode}): {(err or out)[-1500:]}")
            results.append(json.loads(lines[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    return results
