"""``app.testing("inline")``, ``app.testing("capture")``, ``task.execute`` and the store
``drain``, as a user's test suite uses them. Every app points at a SQLite file that must
never be created: nothing in a testing mode may reach the store."""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor import Args, Backoff, JobFailed, JobState, current_job
from conveyor.errors import EncodeError
from conveyor.testing import drain


@dataclasses.dataclass
class Order:
    id: int
    placed: datetime.date


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "never.db"


@pytest.fixture
def app(store: Path) -> Iterator[conveyor.App]:
    application = conveyor.App(f"sqlite:///{store}")
    yield application
    application.close()
    assert not store.exists(), "a testing mode wrote to the store"


# -- inline --------------------------------------------------------------------------------


def test_inline_runs_at_once_through_the_codec_with_current_job(app: conveyor.App) -> None:
    seen: list[tuple[object, str, int]] = []

    @app.task(queue="orders")
    def ship(order: Order) -> dict[str, object]:
        job = current_job()
        seen.append((type(order.placed), job.queue, job.attempt))
        return {"id": order.id, "on": order.placed}

    with app.testing("inline"):
        job = ship.enqueue(Order(7, datetime.date(2026, 1, 2)))
        assert job.status is JobState.SUCCEEDED
        # the argument came back as the dataclass (by the hint), the result as JSON text
        assert seen == [(datetime.date, "orders", 1)]
        assert job.result() == {"id": 7, "on": "2026-01-02"}
        with pytest.raises(EncodeError):
            ship.enqueue(object())  # type: ignore[arg-type]


def test_inline_retries_without_sleeping_and_dead_raises_job_failed(app: conveyor.App) -> None:
    tries: list[int] = []

    @app.task(max_attempts=3, retry=Backoff(base=60, jitter=0))
    def flaky(n: int) -> int:
        tries.append(current_job().attempt)
        if len(tries) < 3:
            raise ValueError(f"try {len(tries)}")
        return n

    @app.task(max_attempts=2, retry=Backoff(base=60, jitter=0))
    def broken() -> None:
        raise RuntimeError("always")

    started = time.monotonic()
    with app.testing("inline"):
        assert flaky.enqueue(5).result() == 5
        dead = broken.enqueue()
    assert time.monotonic() - started < 5  # two 60 s back-offs were not slept
    assert tries == [1, 2, 3]
    assert dead.status is JobState.DEAD
    assert [a.outcome for a in dead.attempts()] == ["failed", "dead"]
    with pytest.raises(JobFailed) as failed:
        dead.result()
    assert failed.value.error_type == "RuntimeError"
    assert failed.value.message == "always"


def test_inline_sync_timeout_is_the_thread_pools(app: conveyor.App) -> None:
    @app.task(timeout=0.2, max_attempts=1)
    def spin() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pass

    started = time.monotonic()
    with app.testing("inline"):
        job = spin.enqueue()
    assert time.monotonic() - started < 5
    with pytest.raises(JobFailed) as failed:
        job.result()
    assert failed.value.error_type == "JobTimeout"


def test_inline_async_task_and_its_timeout(app: conveyor.App) -> None:
    import asyncio

    @app.task
    async def double(x: int) -> list[int]:
        await asyncio.sleep(0)
        return [x, x]

    @app.task(timeout=0.1, max_attempts=1)
    async def hang() -> None:
        await asyncio.sleep(10)

    with app.testing("inline"):
        assert double.enqueue(4).result() == [4, 4]
        with pytest.raises(JobFailed, match="timed out"):
            hang.enqueue().result()


def test_inline_every_enqueue_method(app: conveyor.App) -> None:
    @app.task
    def add(a: int, b: int = 0) -> int:
        return a + b

    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    with app.testing("inline") as inline:
        assert [j.result() for j in add.enqueue_many([Args(1, 2), (3,), {"a": 4}])] == [3, 3, 4]
        assert add.enqueue_after(3600, 1, 1).result() == 2
        assert add.schedule_at(soon, 2, 2).result() == 4
        assert add.with_options(queue="q", priority=5, delay=60).enqueue(3, 3).result() == 6
    assert [(j.args, j.queue) for j in inline.jobs][-1] == ((3, 3), "q")
    assert inline.jobs[-1].priority == 5
    assert len(inline.jobs) == 6


def test_inline_workflows_release_their_children(app: conveyor.App) -> None:
    failures: list[dict[str, object]] = []

    @app.task
    def fetch(n: int) -> int:
        return n * 10

    @app.task
    def total(values: list[int]) -> int:
        return sum(values)

    @app.task(max_attempts=1)
    def fail() -> None:
        raise ValueError("no")

    @app.task
    def alert(info: dict[str, object]) -> None:
        failures.append(info)

    with app.testing("inline"):
        assert conveyor.chain(fetch.s(1), fetch.s()).enqueue().result() == 100
        assert conveyor.group(fetch.s(1), fetch.s(2)).then(total.s()).enqueue().result() == 30
        first = fail.enqueue()
        after = first.then(fetch.s())
        handler = first.on_failure(alert.s())
        assert after.status is JobState.CANCELLED
        assert handler.status is JobState.SUCCEEDED
        chained = conveyor.chain(fail.s(), fetch.s(), fetch.s()).enqueue()
        chained.on_failure(alert.s())
    assert failures[0]["state"] == "dead"
    assert chained.status is JobState.CANCELLED
    assert "cancelled" in (chained.refresh().reason or "")
    # The chain's last step never ran: its handler is told the failed first step's error.
    assert failures[-1]["job_id"] == chained.id and failures[-1]["state"] == "cancelled"
    assert failures[-1]["error"] == failures[0]["error"]
    assert isinstance(failures[0]["error"], dict) and failures[0]["error"]["message"] == "no"


def test_inline_run_scheduled_false_holds_later_jobs_until_drain(app: conveyor.App) -> None:
    @app.task
    def ping(n: int) -> int:
        return n

    with app.testing("inline", run_scheduled=False) as inline:
        now = ping.enqueue(1)
        later = ping.enqueue_after(60, 2)
        assert now.status is JobState.SUCCEEDED
        assert later.status is JobState.SCHEDULED
        with pytest.raises(TimeoutError, match="drain"):
            later.result()
        inline.assert_enqueued(ping, 2)
        assert [j.result() for j in inline.drain()] == [2]
        assert later.result() == 2


def test_inline_expired_job_never_runs_and_cancels_its_dependants(app: conveyor.App) -> None:
    ran: list[int] = []

    @app.task
    def ping(n: int) -> int:
        ran.append(n)
        return n

    past = datetime.datetime(2001, 1, 1, tzinfo=datetime.UTC)
    with app.testing("inline"):
        late = ping.with_options(expires=past).enqueue(1)
        batch = ping.with_options(expires=past).enqueue_many([(2,), (3,)])
        fresh = ping.with_options(expires=datetime.timedelta(hours=1)).enqueue(4)
        assert late.status is JobState.EXPIRED
        assert {j.status for j in batch} == {JobState.EXPIRED}
        child = ping.with_options(depends_on=[late]).enqueue(5)
        assert child.status is JobState.CANCELLED
        assert fresh.result() == 4
    assert ran == [4]


def test_inline_nested_enqueue_runs_inline_too(app: conveyor.App) -> None:
    @app.task
    def child(n: int) -> int:
        return n + 1

    @app.task
    def parent(n: int) -> int:
        return child.enqueue(n).result() * 2

    with app.testing("inline") as inline:
        assert parent.enqueue(1).result() == 4
    assert [j.task_name for j in inline.jobs] == [parent.name, child.name]


# -- capture -------------------------------------------------------------------------------


def test_capture_records_in_order_and_asserts(app: conveyor.App) -> None:
    @app.task(queue="mail")
    def send(to: str, subject: str = "hi") -> None: ...

    @app.task
    def other() -> None: ...

    at = time.time() + 3600
    with app.testing("capture") as captured:
        job = send.enqueue("a@example.com")
        send.with_options(priority=3).schedule_at(at, "b@example.com", subject="yo")
    assert job.status is JobState.QUEUED
    first, second = captured.jobs
    assert (first.task_name, first.args, first.kwargs) == (send.name, ("a@example.com",), {})
    assert (first.queue, first.priority, first.run_at) == ("mail", 0, None)
    assert (second.kwargs, second.priority, second.run_at) == ({"subject": "yo"}, 3, at)
    # compared as the function binds them: defaults and keywords do not matter
    captured.assert_enqueued(send, to="a@example.com", subject="hi")
    captured.assert_enqueued(send)
    captured.assert_not_enqueued(other)
    with pytest.raises(AssertionError) as wrong:
        captured.assert_enqueued(send, "c@example.com")
    assert str(wrong.value) == (
        f"expected a job: {send.name}('c@example.com')\n"
        "enqueued (2):\n"
        f"  {send.name}('a@example.com')  queue=mail\n"
        "      differs: to='a@example.com' (expected 'c@example.com')\n"
        f"  {send.name}('b@example.com', subject='yo')  queue=mail\n"
        "      differs: to='b@example.com' (expected 'c@example.com'), "
        "subject='yo' (expected 'hi')"
    )
    with pytest.raises(AssertionError, match=r"expected no job of .*send, but 2 were enqueued"):
        captured.assert_not_enqueued(send)


def test_capture_drain_runs_what_jobs_enqueue_and_clear_forgets(app: conveyor.App) -> None:
    ran: list[str] = []

    @app.task
    def leaf(n: int) -> int:
        ran.append(f"leaf {n}")
        return n

    @app.task
    def fan_out(n: int) -> int:
        ran.append("fan_out")
        leaf.enqueue_many(Args(i) for i in range(n))
        return n

    with app.testing("capture") as captured:
        top = fan_out.enqueue(2)
        captured.assert_not_enqueued(leaf)
        assert ran == []
        done = captured.drain()
        assert [j.result() for j in done] == [2, 0, 1]
        assert ran == ["fan_out", "leaf 0", "leaf 1"]
        assert top.status is JobState.SUCCEEDED
        assert len(captured.jobs) == 3
        captured.clear()
        assert captured.jobs == []
        assert captured.drain() == []
        captured.assert_not_enqueued(fan_out)


def test_capture_keeps_workflows_waiting_until_drain(app: conveyor.App) -> None:
    @app.task
    def step(n: int) -> int:
        return n + 1

    with app.testing("capture") as captured:
        last = conveyor.chain(step.s(1), step.s(), step.s()).enqueue()
        assert last.status is JobState.WAITING
        assert [j.depends_on != () for j in captured.jobs] == [False, True, True]
        captured.drain()
        assert last.result() == 4


# -- execute -------------------------------------------------------------------------------


def test_execute_runs_the_body_as_a_worker_without_a_store(app: conveyor.App) -> None:
    @app.task(queue="orders")
    def ship(order: Order) -> str:
        assert current_job().queue == "orders"
        return order.placed.isoformat()

    @app.task
    def boom() -> None:
        raise KeyError("missing")

    assert ship.execute(Order(1, datetime.date(2026, 3, 4))) == "2026-03-04"
    with pytest.raises(KeyError):
        boom.execute()
    with pytest.raises(TypeError):
        ship.execute(1, 2)  # type: ignore[call-arg]


# -- the store-backed helpers --------------------------------------------------------------


def test_drain_runs_a_real_store_until_nothing_is_left(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(queue="q2")
    def add(a: int, b: int) -> int:
        return a + b

    jobs = [add.enqueue(i, i) for i in range(5)]
    follow = jobs[0].then(add.s(100))
    drain(app, timeout=30)
    assert [j.result(timeout=0) for j in jobs] == [0, 2, 4, 6, 8]
    assert follow.result(timeout=0) == 100
    app.close()


def test_plugin_fixtures(conveyor_app: conveyor.App, conveyor_worker: object) -> None:
    @conveyor_app.task
    def add(a: int, b: int) -> int:
        return a + b

    assert conveyor_app.url.startswith("sqlite:///")
    assert add.enqueue(2, 3).result(timeout=20) == 5


def test_a_mode_ends_with_its_block_and_modes_nest(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task
    def ping(n: int) -> int:
        return n

    with app.testing("capture") as outer:
        with app.testing("inline") as inner:
            assert ping.enqueue(1).result() == 1
        ping.enqueue(2)
        with pytest.raises(ZeroDivisionError), app.testing("inline"):
            1 / 0  # noqa: B018 - an error inside a block still ends the mode
        ping.enqueue(3)
    assert [j.args for j in inner.jobs] == [(1,)]
    assert [j.args for j in outer.jobs] == [(2,), (3,)]
    assert not (tmp_path / "jobs.db").exists()
    stored = ping.enqueue(4)  # no mode: the store
    assert stored.status is JobState.QUEUED
    assert app.backend.job_get_many([stored.id])[0].payload == '{"args":[4],"kwargs":{}}'
    app.close()


def test_modes_apply_unique_keys_and_limits_as_a_store_does(app: conveyor.App) -> None:
    order: list[tuple[str, object]] = []

    @app.task(concurrency=1, limit_key="one")
    def limited(n: int) -> int:
        order.append(("start", n))
        if n == 1:  # the only slot is this job's: the inner one waits for it
            order.append(("inner", limited.enqueue(2).status))
        return n

    @app.task(unique_key=lambda n: str(n))
    def once(n: int) -> int:
        return n

    with app.testing("inline"):
        assert limited.enqueue(1).result() == 1
    assert order == [("start", 1), ("inner", JobState.SCHEDULED), ("start", 2)]
    with app.testing("capture") as captured:
        first, again = once.enqueue(1), once.enqueue(1)
        assert first.id == again.id  # the holder stands
        assert len(captured.jobs) == 2  # every enqueue is listed
        assert [j.result() for j in captured.drain()] == [1]


def test_a_mode_runs_the_app_on_a_memory_store_its_handles_keep(app: conveyor.App) -> None:
    @app.task
    def ping(n: int) -> int:
        return n

    with app.testing("capture") as captured:
        assert app.backend.name == "memory" and app.substitute is app.backend
        job = ping.enqueue(1)
        assert app.backend.job_get_many([job.id])[0].state is JobState.QUEUED
    assert app.substitute is None and not app.backend_is_open
    assert job.status is JobState.QUEUED  # read from the mode's store, after the block
    assert captured.jobs[0].id == job.id


def test_a_mode_on_another_app_is_allowed_beside_the_plugin_fixture(
    conveyor_app: conveyor.App, tmp_path: Path
) -> None:
    # The fixture refuses any other App's own store; a mode's memory store is the test's.
    other = conveyor.App("redis://production-redis:6379/0")

    @other.task
    def ping(n: int) -> int:
        return n

    with other.testing("inline"):
        assert ping.enqueue(3).result() == 3
    with pytest.raises(conveyor.ConfigurationError, match="conveyor_app = module:app"):
        ping.enqueue(4)  # no mode: its own store, which the test did not make
