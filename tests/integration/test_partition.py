"""A network partition between worker hosts and the store, on Redis and on PostgreSQL.

Two worker "hosts" (network namespaces, tests/support/netns.py) run real ``conveyor
worker`` processes against a server of this test listening on their veth ends. While
host a holds running jobs its cable is pulled: host b's rescuer sees a's heartbeat older
than ``heartbeat_ttl`` and requeues a's jobs, b runs them. Then the cable is plugged
back: a's finishes of the attempts it ran cut off are refused by the claim-token fence
and logged (``job.finish_refused``). Nothing is lost: every job ends succeeded with its
effect recorded, and only rescued jobs ran twice; the rescue came within
``heartbeat_ttl`` (on PostgreSQL ``max(heartbeat_ttl, DEAD_SESSION_BOUND)``) plus a
rescue pass of the cut. The PostgreSQL tests below pin what that bound rests on: a
session cut mid-transaction gives its row locks back within ``DEAD_SESSION_BOUND``, and
jobs it held locked are rescued then. Needs root and ``ip``: skips locally without them,
fails when ``CI=true``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import conveyor
from conveyor.backends.postgres.connection import DEAD_SESSION_BOUND
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


def _epoch(ts: str) -> float:
    """A log line's ``ts`` (ISO 8601, UTC, ``Z``) as epoch seconds."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


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
            cut_at = time.time()
            host_a.cut()
            try:
                # b finishes the queue alone, and a's jobs once their heartbeat is stale.
                try:
                    wait_for(all_succeeded, 30, "every job succeeded while a is cut off")
                except AssertionError as exc:
                    raise AssertionError(f"{exc}; server sessions:\n{server.sessions()}") from None
            finally:
                host_a.heal()
            # a writes the finishes it kept once it reaches the store again. A cut longer
            # than DEAD_SESSION_BOUND (PostgreSQL) has cost a its sessions: its pool
            # reconnects first, with the pool's back-off (1 s, doubling), which can take
            # longer than a graceful stop waits; so wait for the writes before stopping.
            wait_for(
                lambda: bool(a.of("job.finish_refused")),
                45,
                "host a to write its cut-off finishes after the heal",
            )
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
        rescue_lags = sorted(
            _epoch(e["ts"]) - cut_at for e in b.of("job.rescued") if e["from_worker"] == a_id
        )
        print(
            f"{kind}: rescued={len(rescued)} refused={len(refused)} "
            f"duplicates={len(duplicates)} jobs={len(jobs)} "
            f"rescue after the cut: first {rescue_lags[0]:.2f} s, last {rescue_lags[-1]:.2f} s"
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
        # Every job a held was rescued within the documented bound of the cut: its
        # heartbeat older than heartbeat_ttl and, on PostgreSQL, the rows its session
        # held mid-transaction given back (DEAD_SESSION_BOUND), plus a rescue pass.
        bound = max(TTL, DEAD_SESSION_BOUND if kind == "postgres" else 0.0) + 0.2 + SLACK
        assert rescue_lags[-1] <= bound, (rescue_lags, bound)


def _holder_env() -> dict[str, str]:
    """The environment of a script run in a host: this checkout importable first."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


#: Seconds a bounded wait may overrun its bound on a loaded 2-core box (the server's
#: backend must wake and exit, the waiter must be scheduled).
SLACK = 2.5

#: Run in host a: hold a row lock inside an open transaction, on a connection with the
#: options every conveyor connection has, and wait (the test then pulls the cable). Where
#: the session waits: "idle" between two statements (the client has the reply; a finish
#: or claim waiting for its COMMIT), or "copy" inside a statement that waits for the
#: client's data (COPY FROM STDIN, as a large enqueue_many sends it).
HOLD_LOCK = """
import sys, time, psycopg
from conveyor.backends.postgres.connection import connect_options
from conveyor.backends.postgres.url import parse_postgres_url

target = parse_postgres_url(sys.argv[1])
conn = psycopg.connect(target.conninfo, **connect_options(target))
conn.execute("SELECT n FROM public.held WHERE n = 1 FOR UPDATE")
if sys.argv[2] == "copy":
    with conn.cursor().copy("COPY public.copied FROM STDIN"):
        print("locked", flush=True)
        time.sleep(120)
print("locked", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("waiting", ["idle", "copy"])
def test_a_cut_off_postgres_session_gives_its_locks_back_within_the_bound(
    tmp_path: Path, waiting: str
) -> None:
    """What the rescue relies on when a host is cut in the middle of a transaction: the
    server drops the silent session (conveyor's connection options) and its row locks go
    with it within DEAD_SESSION_BOUND of the cut, long before the kernel's own timeouts
    (hours) would."""
    import psycopg

    with (
        hosts("a") as (host,),
        serve("postgres", tmp_path, (host,)) as server,
        psycopg.connect(server.url, autocommit=True) as admin,
    ):
        admin.execute(
            "CREATE TABLE held (n int PRIMARY KEY); INSERT INTO held VALUES (1); "
            "CREATE TABLE copied (n int)"
        )
        holder = subprocess.Popen(
            host.command([sys.executable, "-c", HOLD_LOCK, server.url_at(host.gateway), waiting]),
            env=_holder_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            cut_at = time.monotonic()
            host.cut()
            # Another session's lock on the row waits until the server has dropped the
            # cut-off one (bounded so that a failure ends). The session's row in
            # pg_stat_activity may outlive its locks by a moment while its backend
            # exits: the lock is what counts.
            admin.execute("SET lock_timeout = '30s'")
            try:
                admin.execute("BEGIN; SELECT n FROM held WHERE n = 1 FOR UPDATE")
            except psycopg.errors.LockNotAvailable:
                pytest.fail("the cut-off session still held its row lock 30 s after the cut")
            waited = time.monotonic() - cut_at
            admin.execute("COMMIT")
        finally:
            host.heal()
            holder.kill()
            holder.wait(10)
    print(f"{waiting}: the lock came back {waited:.2f} s after the cut")
    assert waited <= DEAD_SESSION_BOUND + SLACK


#: Run in host a: a worker that claimed jobs and is cut while its transaction on them is
#: open (a finish or progress statement sent, its COMMIT not yet), heartbeating until
#: the cut as a live worker does.
HOLD_JOBS = """
import sys, threading, time
from conveyor.backends.base import WorkerHeartbeatParams
from conveyor.backends.postgres.backend import PostgresBackend
from tests.contract.helpers import claim, register

backend = PostgresBackend(sys.argv[1])
info = register(backend, "w-a", host="a")
held = claim(backend, 10, worker_id="w-a")

def beat():
    while True:
        backend.worker_heartbeat(WorkerHeartbeatParams(info, running=len(held)))
        time.sleep(0.2)

threading.Thread(target=beat, daemon=True).start()
with backend._tx() as cur:
    cur.execute("UPDATE jobs SET progress = 0.5 WHERE worker_id = 'w-a' AND state = 'running'")
    print(len(held), flush=True)
    time.sleep(120)
"""


def test_jobs_locked_by_a_cut_off_worker_are_rescued_within_the_bound(tmp_path: Path) -> None:
    """The rescue of a cut-off worker's jobs waits for its heartbeat to be older than
    heartbeat_ttl, and for the rows it held locked mid-transaction: within
    max(heartbeat_ttl, DEAD_SESSION_BOUND) + one rescue pass of the cut."""
    from conveyor.backends.base import JobRescueParams
    from conveyor.backends.postgres.backend import PostgresBackend
    from tests.contract.helpers import insert
    from tests.support.postgres_server import with_schema

    with hosts("a") as (host,), serve("postgres", tmp_path, (host,)) as server:
        backend = PostgresBackend(with_schema(server.url, "cut"))
        ids = insert(backend, 5)
        url_a = with_schema(server.url_at(host.gateway), "cut")
        holder = subprocess.Popen(
            host.command([sys.executable, "-c", HOLD_JOBS, url_a]),
            env=_holder_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "5\n"
            assert backend.job_rescue(JobRescueParams([], time.time() - TTL)) == []  # live
            cut_at = time.monotonic()
            host.cut()
            rescued: set[str] = set()
            while set(ids) - rescued and time.monotonic() - cut_at < 30:
                # What a rescuer on another host does every rescue_interval.
                found = backend.job_rescue(JobRescueParams([], time.time() - TTL))
                rescued |= {r.job_id for r in found}
                time.sleep(0.2)
            waited = time.monotonic() - cut_at
            states = {j.state for j in backend.job_get_many(ids)}
        finally:
            host.heal()
            holder.kill()
            holder.wait(10)
            backend.close()
    print(f"the held jobs were rescued {waited:.2f} s after the cut")
    assert rescued == set(ids), f"rescued {len(rescued)} of 5 within 30 s of the cut"
    assert states == {JobState.QUEUED}
    assert waited <= max(TTL, DEAD_SESSION_BOUND) + 0.2 + SLACK
