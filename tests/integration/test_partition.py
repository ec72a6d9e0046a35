"""A network partition between worker hosts and the store, on Redis and on PostgreSQL.

Two worker "hosts" (network namespaces, tests/support/netns.py) run real ``conveyor
worker`` processes against a server of this test listening on their veth ends. While
host a holds running jobs its cable is pulled: host b's rescuer sees a's heartbeat older
than ``heartbeat_ttl`` and requeues a's jobs, b runs them. Then the cable is plugged
back: a's finishes of the attempts it ran cut off are refused by the claim-token fence
and logged (``job.finish_refused``). Nothing is lost: every job ends succeeded with its
effect recorded, and only rescued jobs ran twice. Needs root and ``ip``: skips locally
without them, fails when ``CI=true``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import conveyor
from conveyor.states import JobState
from tests.integration.conftest import ROOT, wait_for
from tests.support.netns import Host, hosts, subnet_of
from tests.support.postgres_server import PostgresServer
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

JOBS = 200
TTL = 2.0

#: The workers' app: short timings so the rescue comes within seconds of the cut. The
#: effect of a job (a line "job-id host" appended to one file) is written by the task
#: itself, so a run whose finish is later refused still shows.
TASKS = f"""
import os
import time

import conveyor

app = conveyor.App(heartbeat_interval=0.2, heartbeat_ttl={TTL}, rescue_interval=0.2)


@app.task(name="partition.step")
def step(n: int) -> int:
    time.sleep(0.05)
    line = f"{{conveyor.current_job().id}} {{os.environ['PARTITION_HOST']}}\\n".encode()
    fd = os.open(os.environ["PARTITION_EFFECTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)  # one write of a short line under O_APPEND: never interleaved
    finally:
        os.close(fd)
    return n
"""


@dataclass
class Server:
    """The store under test: ``url`` for the test itself, ``url_at`` for the hosts."""

    url: str
    url_at: Callable[[str], str]
    #: What the server says of its clients, for a failure message (who holds what).
    sessions: Callable[[], str] = lambda: ""


def _pg_sessions(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT client_addr, state, wait_event_type, left(query, 60) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchall()
    return "\n".join(map(str, rows))


@contextlib.contextmanager
def serve(kind: str, directory: Path, network: tuple[Host, ...]) -> Iterator[Server]:
    gateways = [h.gateway for h in network]
    if kind == "redis":
        redis = RedisServer(directory / "redis", bind=gateways).start()
        try:
            yield Server(redis.url, redis.url_at)
        finally:
            redis.stop()
        return
    pg = PostgresServer(listen=gateways, trust=[subnet_of(network)]).init().start()
    try:
        yield Server(pg.url, pg.url_at, lambda: _pg_sessions(pg.url))
    finally:
        with contextlib.suppress(RuntimeError):
            pg.stop("immediate")
        pg.remove()


class HostWorker:
    """One ``conveyor worker`` process inside a host's namespace, logging JSON to a file."""

    def __init__(self, host: Host, letter: str, url: str, directory: Path) -> None:
        self.letter = letter
        self.log = directory / f"worker-{letter}.jsonl"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(directory), str(ROOT), env.get("PYTHONPATH", "")])
        env["PARTITION_HOST"] = letter
        env["PARTITION_EFFECTS"] = str(directory / "effects.txt")
        env.pop("CONVEYOR_URL", None)
        command = [
            sys.executable, "-m", "conveyor.cli", "worker", "partition_tasks:app",
            "--url", url, "--concurrency", "4", "--log-format", "json",
            "--shutdown-timeout", "20",
        ]  # fmt: skip
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                host.command(command), cwd=directory, env=env, stdout=out, stderr=out
            )

    def events(self) -> list[dict[str, Any]]:
        events = []
        for line in self.log.read_text().splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
        return events

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("event") == event]

    def worker_id(self) -> str:
        wait_for(lambda: bool(self.of("worker.started")), 30, f"worker {self.letter} ready")
        return str(self.of("worker.started")[0]["worker_id"])

    def stop(self) -> int:
        """SIGTERM and wait: the worker writes every finish it kept before it exits."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_partitioned_host_is_rescued_and_its_stale_finishes_refused(
    kind: str, tmp_path: Path
) -> None:
    (tmp_path / "partition_tasks.py").write_text(textwrap.dedent(TASKS))
    with hosts("a", "b") as (host_a, host_b), serve(kind, tmp_path, (host_a, host_b)) as server:
        app = conveyor.App(server.url)

        @app.task(name="partition.step")
        def step(n: int) -> int:  # the workers' task, named the same: enqueued from here
            return n

        a = HostWorker(host_a, "a", server.url_at(host_a.gateway), tmp_path)
        b = HostWorker(host_b, "b", server.url_at(host_b.gateway), tmp_path)
        try:
            a_id, b_id = a.worker_id(), b.worker_id()
            ids = [j.id for j in step.enqueue_many([(n,) for n in range(JOBS)])]

            def held_by_a() -> bool:
                return any(
                    j.state is JobState.RUNNING and j.worker_id == a_id
                    for j in app.backend.job_get_many(ids)
                )

            def all_succeeded() -> bool:
                jobs = app.backend.job_get_many(ids)
                return all(j.state is JobState.SUCCEEDED for j in jobs)

            wait_for(held_by_a, 20, "host a to hold running jobs")
            host_a.cut()
            try:
                # b finishes the queue alone, and a's jobs once their heartbeat is stale.
                try:
                    wait_for(all_succeeded, 30, "every job succeeded while a is cut off")
                except AssertionError as exc:
                    raise AssertionError(f"{exc}; server sessions:\n{server.sessions()}") from None
            finally:
                host_a.heal()
            assert a.stop() == 0, a.log.read_text()[-3000:]
            assert b.stop() == 0, b.log.read_text()[-3000:]
        finally:
            a.kill()
            b.kill()

        rescued = {
            e["job_id"]
            for w in (a, b)
            for e in w.of("job.rescued")
            if e["from_worker"] == a_id and e["state"] == "queued"
        }
        refused = [e["job_id"] for e in a.of("job.finish_refused")]
        jobs = {j.id: j for j in app.backend.job_get_many(ids)}
        effects: dict[str, list[str]] = {}
        for line in (tmp_path / "effects.txt").read_text().splitlines():
            job_id, host = line.split()
            effects.setdefault(job_id, []).append(host)
        winners = {  # who ran each job's succeeded attempt (the one the store kept)
            job_id: [
                r.worker_id for r in app.backend.job_attempts(job_id) if r.outcome == "succeeded"
            ]
            for job_id in ids
        }
        duplicates = {job_id for job_id, hosts_ in effects.items() if len(hosts_) > 1}
        print(
            f"{kind}: rescued={len(rescued)} refused={len(refused)} "
            f"duplicates={len(duplicates)} jobs={len(jobs)}"
        )

        assert {j.state for j in jobs.values()} == {JobState.SUCCEEDED}  # 0 lost
        assert len(jobs) == JOBS
        assert set(effects) == set(ids)  # every job's effect recorded at least once
        assert rescued, "host a held running jobs at the cut: some must be rescued"
        # b rescued them (a could not reach the store) and ran them.
        assert all(e["from_worker"] == a_id for e in b.of("job.rescued"))
        assert not [e for e in a.of("job.rescued") if e["job_id"] in rescued]
        assert all("b" in effects[job_id] for job_id in rescued)
        assert all(winners[job_id] == [b_id] for job_id in rescued)
        # a's finishes for its cut-off attempts were refused by the fence, and counted.
        assert refused, "a ran its held jobs while cut off: their finishes must be refused"
        assert len(refused) == len(set(refused))
        assert [e["refused_total"] for e in a.of("job.finish_refused")] == list(
            range(1, len(refused) + 1)
        )
        # A refused finish is one of a rescued job, or (a cut between the store applying
        # a's finish and a reading the reply: a's retry is refused) of one a finished.
        assert all(job_id in rescued or winners[job_id] == [a_id] for job_id in refused)
        assert all(len(w) == 1 for w in winners.values())  # one success each, never two
        # Only a rescued job ran twice (at least once, never more than its attempts).
        assert duplicates <= rescued
        assert not [line for line in a.log.read_text().splitlines() if "gave up writing" in line]


#: Run in host a: hold a row lock inside an open transaction, on a connection with the
#: options every conveyor connection has, and wait (the test then pulls the cable).
HOLD_LOCK = """
import sys, time, psycopg
from conveyor.backends.postgres.connection import connect_options
from conveyor.backends.postgres.url import parse_postgres_url

target = parse_postgres_url(sys.argv[1])
conn = psycopg.connect(target.conninfo, **connect_options(target))
conn.execute("SELECT n FROM public.held WHERE n = 1 FOR UPDATE")
print("locked", flush=True)
time.sleep(120)
"""


def test_a_cut_off_postgres_session_gives_its_locks_back(tmp_path: Path) -> None:
    """What the rescue relies on when a host is cut between a statement and its COMMIT:
    the server drops the silent session (conveyor's connection options) and its row
    locks go with it, long before the kernel's own timeouts (hours) would."""
    import psycopg

    with (
        hosts("a") as (host,),
        serve("postgres", tmp_path, (host,)) as server,
        psycopg.connect(server.url, autocommit=True) as admin,
    ):
        admin.execute("CREATE TABLE held (n int PRIMARY KEY); INSERT INTO held VALUES (1)")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        holder = subprocess.Popen(
            host.command([sys.executable, "-c", HOLD_LOCK, server.url_at(host.gateway)]),
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            host.cut()
            # Another session's lock on the row waits until the server has dropped
            # the cut-off one (the wait is bounded so that a failure ends: without the
            # options, lock_timeout). The session's row in pg_stat_activity may outlive
            # its locks by a moment while its backend exits: the lock is what counts.
            admin.execute("SET lock_timeout = '30s'")
            try:
                admin.execute("BEGIN; SELECT n FROM held WHERE n = 1 FOR UPDATE")
            except psycopg.errors.LockNotAvailable:
                pytest.fail("the cut-off session still held its row lock 30 s after the cut")
            admin.execute("COMMIT")
        finally:
            host.heal()
            holder.kill()
            holder.wait(10)
