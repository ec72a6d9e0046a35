"""PostgreSQL-only behaviour under the seam: the migration's advisory lock, the DDL
printed by ``conveyor migrate-schema --sql``, and LISTEN/NOTIFY wake-ups (sent only by
commits, and survived by a listener whose connection is killed), for workers and for
``job_wait``. The contract suite
covers everything the backends share."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence

import psycopg
import pytest

from conveyor.backends.base import (
    JobClaimParams,
    JobFinishParams,
    JobInsertParams,
    JobRecord,
    JobWaitParams,
)
from conveyor.backends.postgres import backend as backend_module
from conveyor.backends.postgres.backend import PostgresBackend
from conveyor.backends.postgres.connection import SCHEMA_VERSION
from conveyor.backends.postgres.listener import CHANNEL, DONE_CHANNEL
from conveyor.states import FinishKind, JobState
from tests.support.postgres_server import drop_schema, with_schema


@pytest.fixture
def schema(postgres_url: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex}"
    yield name
    drop_schema(postgres_url, name)


def _job(job_id: str | None = None) -> JobInsertParams:
    return JobInsertParams(id=job_id or uuid.uuid4().hex, task="t", queue="q", payload="{}")


def _versions(postgres_url: str, schema: str) -> list[int]:
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(f"SELECT version FROM {schema}.schema_version").fetchall()
    return [r[0] for r in rows]


def test_workers_starting_at_once_on_an_empty_database_migrate_once(
    postgres_url: str, schema: str
) -> None:
    url = with_schema(postgres_url, schema)
    starters = 6
    barrier = threading.Barrier(starters)
    opened: list[PostgresBackend] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            opened.append(PostgresBackend(url))
        except BaseException as exc:  # reported below: a race shows as an error here
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(starters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert _versions(postgres_url, schema) == list(range(1, SCHEMA_VERSION + 1))
        opened[0].job_insert_many([_job("j1")])
        assert [r.id for r in opened[-1].job_get_many(["j1"])] == ["j1"]
    finally:
        for b in opened:
            b.close()


def test_processes_starting_at_once_migrate_once(postgres_url: str, schema: str) -> None:
    url = with_schema(postgres_url, schema)
    code = (
        "import sys\n"
        "from conveyor.backends.postgres.backend import PostgresBackend\n"
        "PostgresBackend(sys.argv[1]).close()\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    results = [(p.wait(60), p.stderr.read() if p.stderr else b"") for p in procs]
    assert results == [(0, b"")] * 4
    assert _versions(postgres_url, schema) == list(range(1, SCHEMA_VERSION + 1))


def test_the_printed_ddl_makes_a_schema_the_backend_uses_as_is(
    postgres_url: str, schema: str
) -> None:
    url = with_schema(postgres_url, schema)
    ddl = subprocess.run(
        [sys.executable, "-m", "conveyor", "migrate-schema", "--sql", "--url", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(ddl.encode())
    assert _versions(postgres_url, schema) == list(range(1, SCHEMA_VERSION + 1))
    backend = PostgresBackend(url)  # finds the schema current: nothing applied twice
    try:
        backend.job_insert_many([_job("j1")])
        claimed = backend.job_claim(JobClaimParams(worker_id="w", queues=(("q", 1),), total=1))
        assert [j.id for j in claimed] == ["j1"]
    finally:
        backend.close()
    assert _versions(postgres_url, schema) == list(range(1, SCHEMA_VERSION + 1))


def test_a_rolled_back_insert_sends_no_notification(postgres_url: str, schema: str) -> None:
    backend = PostgresBackend(with_schema(postgres_url, schema))
    try:
        with psycopg.connect(postgres_url, autocommit=True) as listener:
            listener.execute(f"LISTEN {CHANNEL}")
            backend.job_insert_many([_job("dup")])
            with pytest.raises(psycopg.errors.UniqueViolation):
                backend.job_insert_many([_job("fresh"), _job("dup")])  # all or nothing
            backend.job_insert_many([_job("last")])
            payloads = [n.payload for n in listener.notifies(stop_after=2, timeout=30)]
            # Delivered in commit order: the two commits, and nothing between them.
            assert payloads == [schema, schema]
            assert list(listener.notifies(timeout=0.2)) == []
        assert [r.id for r in backend.job_get_many(["dup", "fresh", "last"])] == ["dup", "last"]
    finally:
        backend.close()


def _empty_claim(backend: PostgresBackend) -> None:
    assert backend.job_claim(JobClaimParams(worker_id="w", queues=(("q", 1),), total=1)) == []


def test_an_insert_elsewhere_wakes_a_waiting_worker(postgres_url: str, schema: str) -> None:
    url = with_schema(postgres_url, schema)
    fetcher, producer = PostgresBackend(url), PostgresBackend(url)
    try:
        fetcher.work_wait(5.0)  # starts the listener
        listener = fetcher._listener
        assert listener is not None and listener.wait_listening(30)
        _empty_claim(fetcher)
        seen = listener.generation
        producer.job_insert_many([_job()])  # commits after the empty claim
        fetcher.work_wait(600.0)
        assert listener.generation != seen  # woken by the notification, not the timeout
    finally:
        fetcher.close()
        producer.close()


def test_a_killed_listener_reconnects_and_waits_poll_meanwhile(
    postgres_url: str, schema: str
) -> None:
    url = with_schema(postgres_url, schema)
    fetcher, producer = PostgresBackend(url), PostgresBackend(url)
    try:
        fetcher.work_wait(5.0)
        listener = fetcher._listener
        assert listener is not None and listener.wait_listening(30)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()"
            )
        assert listener.wait_listening(30)  # back (or never noticed yet: both fine)
        _empty_claim(fetcher)
        seen = listener.generation
        producer.job_insert_many([_job()])
        fetcher.work_wait(600.0)
        assert listener.generation != seen
        assert len(fetcher.job_claim(JobClaimParams("w", (("q", 1),), 1))) == 1
    finally:
        fetcher.close()
        producer.close()


def test_a_read_only_command_on_a_missing_schema_is_an_error_and_creates_nothing(
    postgres_url: str, schema: str
) -> None:
    url = with_schema(postgres_url, schema)
    proc = subprocess.run(
        [sys.executable, "-m", "conveyor", "status", "--url", url], capture_output=True, text=True
    )
    assert proc.returncode == 1 and f"no conveyor schema '{schema}'" in proc.stderr
    with psycopg.connect(postgres_url) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
    assert found == (0,)
    created = subprocess.run(
        [sys.executable, "-m", "conveyor", "migrate-schema", "--url", url],
        capture_output=True,
        text=True,
    )
    assert created.returncode == 0 and "is current" in created.stdout
    assert _versions(postgres_url, schema) == list(range(1, SCHEMA_VERSION + 1))
    shown = subprocess.run(
        [sys.executable, "-m", "conveyor", "status", "--url", url], capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr


def _register(backend: PostgresBackend, concurrency: int) -> None:
    from conveyor.backends.base import WorkerHeartbeatParams, WorkerInfo

    me = WorkerInfo(
        id="w", host="h", pid=1, pid_started=None, started_at=0.0, queues=("q",),
        concurrency=concurrency, pool="thread",
    )  # fmt: skip
    backend.worker_heartbeat(WorkerHeartbeatParams(worker=me))


def test_the_pool_grows_to_the_worker_unless_the_url_sized_it(
    postgres_url: str, schema: str
) -> None:
    sized_by_worker = PostgresBackend(with_schema(postgres_url, schema))
    sized_by_url = PostgresBackend(with_schema(postgres_url, schema) + "&pool_max=4")
    try:
        _register(sized_by_worker, 20)
        _register(sized_by_url, 20)
        assert sized_by_worker._pool.max_size == 23  # a connection per slot, plus three
        assert sized_by_url._pool.max_size == 4
    finally:
        sized_by_worker.close()
        sized_by_url.close()


def test_a_batch_and_a_release_each_send_one_notification(postgres_url: str, schema: str) -> None:
    from conveyor.backends.base import JobReleaseParams

    backend = PostgresBackend(with_schema(postgres_url, schema))
    try:
        with psycopg.connect(postgres_url, autocommit=True) as listener:
            listener.execute(f"LISTEN {CHANNEL}")
            backend.job_insert_many([_job(f"b{i}") for i in range(50)])  # one transaction
            jobs = backend.job_claim(JobClaimParams(worker_id="w", queues=(("q", 50),), total=50))
            assert len(jobs) == 50  # a claim that promotes nothing notifies nobody
            backend.job_release_many(JobReleaseParams("w", [(j.id, j.token) for j in jobs]))
            backend.job_insert_many([_job("sentinel")])
            payloads = [n.payload for n in listener.notifies(stop_after=3, timeout=30)]
            assert payloads == [schema] * 3  # the batch, the release, the sentinel
            assert list(listener.notifies(timeout=0.2)) == []
    finally:
        backend.close()


def test_while_the_listener_is_down_a_wait_polls_instead_of_sleeping_out() -> None:
    from conveyor.backends.postgres.listener import Listener
    from tests.support.redis_server import free_port

    # Nothing listens on this port: the listener never connects and keeps retrying.
    listener = Listener(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres", {}, "s")
    try:
        assert not listener.wait_listening(0.2)
        seen = listener.generation
        listener.wait(seen, 600.0)  # returns after a poll interval, not 600 s (the
        assert listener.generation == seen  # suite's timeout would fail it): no wake-up
        assert not listener.listening
    finally:
        listener.close()


def test_concurrent_claimers_skip_each_others_rows_and_share_every_job_once(
    postgres_url: str, schema: str
) -> None:
    url = with_schema(postgres_url, schema)
    producer = PostgresBackend(url)
    ids = {f"c{i:04d}" for i in range(400)}
    producer.job_insert_many([_job(i) for i in sorted(ids)])
    claimed: list[list[str]] = []
    barrier = threading.Barrier(4)

    def claimer(name: str) -> None:
        backend = PostgresBackend(url)
        mine: list[str] = []
        barrier.wait()
        try:
            while got := backend.job_claim(JobClaimParams(name, (("q", 10),), 10)):
                mine += [j.id for j in got]
        finally:
            backend.close()
            claimed.append(mine)

    threads = [threading.Thread(target=claimer, args=(f"w{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    producer.close()
    every = [job_id for mine in claimed for job_id in mine]
    assert sorted(every) == sorted(ids)  # each job once: none twice, none left behind


def test_claims_racing_updates_of_their_rows_still_take_every_job_once(
    postgres_url: str, schema: str
) -> None:
    # A row another transaction changed since the claim's snapshot must be taken in its
    # new version, or left queued for the next claim, never taken twice nor lost.
    url = with_schema(postgres_url, schema)
    producer = PostgresBackend(url)
    ids = [f"r{i:04d}" for i in range(600)]
    producer.job_insert_many([_job(i) for i in ids])
    claimed: list[str] = []
    done = threading.Event()

    def claimer(name: str) -> None:
        backend = PostgresBackend(url)
        try:
            while not done.is_set():
                claimed.extend(
                    j.id for j in backend.job_claim(JobClaimParams(name, (("q", 7),), 7))
                )
        finally:
            backend.close()

    def toucher(seed: int) -> None:
        # A new row version for queued jobs, over and over (what a cancel or a
        # replace of a unique job would do): the claims' locks meet changed rows.
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            n = seed
            while not done.is_set():
                n = (n * 7 + 3) % len(ids)
                conn.execute(
                    f"UPDATE {schema}.jobs SET priority = priority WHERE id = %s "
                    "AND state = 'queued'",
                    (ids[n],),
                )

    threads = [threading.Thread(target=claimer, args=(f"w{n}",)) for n in range(3)]
    threads += [threading.Thread(target=toucher, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            for _ in range(600):
                row = conn.execute(
                    f"SELECT count(*) FROM {schema}.jobs WHERE state = 'queued'"
                ).fetchone()
                if row is not None and row[0] == 0:
                    break
                threading.Event().wait(0.1)
    finally:
        done.set()
        for t in threads:
            t.join()
        producer.close()
    assert sorted(claimed) == ids
    with psycopg.connect(postgres_url) as conn:
        tokens = conn.execute(f"SELECT DISTINCT state, token FROM {schema}.jobs").fetchall()
    assert tokens == [("running", 1)]


def test_a_finish_names_the_jobs_it_ended_to_their_waiters(postgres_url: str, schema: str) -> None:
    backend = PostgresBackend(with_schema(postgres_url, schema))
    try:
        backend.job_insert_many([_job("a"), _job("b"), _job("c")])
        claimed = backend.job_claim(JobClaimParams(worker_id="w", queues=(("q", 3),), total=3))
        token = {j.id: j.token for j in claimed}
        with psycopg.connect(postgres_url, autocommit=True) as listener:
            listener.execute(f"LISTEN {DONE_CHANNEL}")
            refused = backend.job_finish_many(
                [
                    JobFinishParams("a", token["a"], FinishKind.SUCCEEDED, "w", result="1"),
                    JobFinishParams("b", token["b"], FinishKind.RETRY, "w", run_at=1.0),
                    JobFinishParams("c", token["c"], FinishKind.DEAD, "w", reason="x"),
                ]
            )
            assert refused == []
            payloads = [n.payload for n in listener.notifies(stop_after=1, timeout=30)]
            # One notification for the commit: the schema, then the jobs that ended (a
            # retried job has not: its waiter keeps waiting).
            assert payloads == [f"{schema}\na\nc"]
            assert list(listener.notifies(timeout=0.2)) == []
    finally:
        backend.close()


def test_a_wait_returns_on_the_finish_notification_not_at_its_next_poll(
    postgres_url: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = with_schema(postgres_url, schema)
    waiter, worker = PostgresBackend(url), PostgresBackend(url)
    # Polls 60 s apart: a wait that returns within 30 s was woken by the notification.
    monkeypatch.setattr(backend_module, "WAIT_MAX", 60.0)
    try:
        assert waiter._done_listener().wait_listening(30)
        worker.job_insert_many([_job("j")])
        (job,) = worker.job_claim(JobClaimParams(worker_id="w", queues=(("q", 1),), total=1))
        reads: list[int] = []
        read = waiter.job_get_many

        def counted(ids: Sequence[str]) -> list[JobRecord]:
            rows = read(ids)
            reads.append(1)  # after the read: the finish below must not overtake it
            return rows

        waiter.job_get_many = counted  # type: ignore[method-assign]
        got: list[JobRecord | None] = []
        thread = threading.Thread(
            target=lambda: got.append(waiter.job_wait(JobWaitParams("j", 50)))
        )
        thread.start()
        while not reads:  # the waiter read the job running once, then waits
            threading.Event().wait(0.01)
        worker.job_finish_many(
            [JobFinishParams("j", job.token, FinishKind.SUCCEEDED, "w", result="7")]
        )
        thread.join(30)
        assert not thread.is_alive()
        record = got[0]
        assert record is not None and record.state is JobState.SUCCEEDED and record.result == "7"
        assert len(reads) == 2  # the first read, and one after the notification
    finally:
        waiter.close()
        worker.close()
