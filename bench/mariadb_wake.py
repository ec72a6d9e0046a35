"""What waking idle MariaDB workers costs (backends/mariadb/wake.py), wake on against
wake off (the old polling) in alternated rounds on one private server:

- ``enqueue``: single enqueues from one thread with no worker, µs each (the clock read
  also reads the idle locks: no new round trip, some server time);
- ``idle``: the server's CPU seconds per minute while one worker idles (wake on: one
  sleep statement per poll interval beside its claim).

Example::

    python -m bench.mariadb_wake --enqueues 2000 --idle 10 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import conveyor
from conveyor.backends.mariadb import backend as mariadb_backend
from conveyor.backends.mariadb import wake
from conveyor.backends.mariadb.dialect import server_now


@contextmanager
def wake_off() -> Iterator[None]:
    """The old behaviour: no lock read at enqueue, a Python sleep when idle."""
    read, init = mariadb_backend.read_clock_and_idle, wake.IdleWaiter.__init__

    def no_idle(ex: Any, database: str) -> tuple[float, list[int]]:
        return server_now(ex), []

    def polling(self: wake.IdleWaiter, target: Any) -> None:
        init(self, target)
        self.usable = False

    mariadb_backend.read_clock_and_idle = no_idle  # type: ignore[assignment]
    wake.IdleWaiter.__init__ = polling  # type: ignore[method-assign]
    try:
        yield
    finally:
        mariadb_backend.read_clock_and_idle = read  # type: ignore[assignment]
        wake.IdleWaiter.__init__ = init  # type: ignore[method-assign]


def enqueue_us(url: str, n: int) -> float:
    app = conveyor.App(url)
    task = app.task(name="bench.noop", queue="nobody")(lambda: None)
    try:
        task.enqueue()  # connection and statements warmed
        start = time.perf_counter()
        for _ in range(n):
            task.enqueue()
        return (time.perf_counter() - start) / n * 1e6
    finally:
        app.close()


def _server_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu_per_min(url: str, pid: int, seconds: float) -> float:
    app = conveyor.App(url)
    worker = conveyor.Worker(app, concurrency=1, queues=["idle"])
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False})
    thread.start()
    try:
        time.sleep(2.0)  # started, idle
        before = _server_cpu(pid)
        time.sleep(seconds)
        return (_server_cpu(pid) - before) / seconds * 60
    finally:
        worker.stop()
        thread.join(30)
        app.close()


def main() -> None:
    from tests.support import mariadb_server

    parser = argparse.ArgumentParser(prog="python -m bench.mariadb_wake")
    parser.add_argument("--enqueues", type=int, default=2000)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    url = mariadb_server.run_database("wake_bench")
    pid = mariadb_server._run_server[0].proc.pid  # the mariadbd started just now
    figures: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for arm in ("on", "off"):
            with wake_off() if arm == "off" else contextlib.nullcontext():
                figures.setdefault(f"enqueue_us_{arm}", []).append(enqueue_us(url, args.enqueues))
                figures.setdefault(f"idle_cpu_s_per_min_{arm}", []).append(
                    idle_cpu_per_min(url, pid, args.idle)
                )
    print(json.dumps({k: round(statistics.median(v), 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
