"""Enqueue: validation before any write, all-or-nothing batches, delays and schedules."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import decimal
import uuid

import pytest

import conveyor
from conveyor.backends.base import JobListParams
from conveyor.states import JobState


def _count(app: conveyor.App) -> int:
    return len(app.backend.job_list(JobListParams(limit=10_000)))


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_enqueue_stores_a_queued_job_with_task_options(app: conveyor.App) -> None:
    @app.task(queue="mail", priority=5, max_attempts=7, timeout=3.0)
    def send(to: str) -> None: ...

    job = send.enqueue("a@example.com")
    record = job.refresh()
    assert record.state is JobState.QUEUED
    assert (record.queue, record.priority, record.max_attempts, record.timeout) == (
        "mail",
        5,
        7,
        3.0,
    )
    assert record.task == send.name
    assert record.payload == '{"args":["a@example.com"],"kwargs":{}}'


def test_wrong_arity_and_unknown_keyword_raise_and_write_nothing(app: conveyor.App) -> None:
    @app.task
    def f(a: int, b: int = 0) -> None: ...

    with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments but 3"):
        f.enqueue(1, 2, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
        f.enqueue(1, c=3)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        f.enqueue()
    assert _count(app) == 0


def test_unencodable_argument_is_named_and_nothing_written(app: conveyor.App) -> None:
    @app.task
    def f(a: object, when: object = None) -> None: ...

    with pytest.raises(conveyor.EncodeError, match=r"'when'.*set"):
        f.enqueue(1, when={1, 2})
    with pytest.raises(conveyor.EncodeError, match="positional argument 0"):
        f.enqueue(object())
    assert _count(app) == 0


def test_payload_over_the_limit_is_refused(backend_url: str) -> None:
    small = conveyor.App(backend_url, max_payload_bytes=100)

    @small.task
    def f(blob: str) -> None: ...

    f.enqueue("x" * 50)
    with pytest.raises(conveyor.PayloadTooLarge, match="over the limit of 100"):
        f.enqueue("x" * 200)
    assert _count(small) == 1
    small.close()


def test_enqueue_many_is_all_or_nothing(app: conveyor.App) -> None:
    @app.task
    def f(a: object) -> None: ...

    jobs = f.enqueue_many([(1,), (2,), {"a": 3}, conveyor.Args(4)])
    assert len({j.id for j in jobs}) == 4
    with pytest.raises(conveyor.EncodeError):
        f.enqueue_many([(5,), (object(),), (6,)])
    with pytest.raises(TypeError):
        f.enqueue_many([(7,), (8, 9)])
    assert _count(app) == 4


def test_rich_types_round_trip_by_type_hints(app: conveyor.App) -> None:
    @app.task
    def f(
        when: datetime.datetime,
        day: datetime.date,
        key: uuid.UUID,
        amount: decimal.Decimal,
        p: Point,
    ) -> None: ...

    when = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
    key = uuid.uuid4()
    job = f.enqueue(when, datetime.date(2026, 1, 2), key, decimal.Decimal("1.10"), Point(1, 2))
    args, _kwargs = f.decoder.arguments(job.refresh().payload)
    assert args == [when, datetime.date(2026, 1, 2), key, decimal.Decimal("1.10"), Point(1, 2)]


def test_delays_and_schedules_are_stored_as_scheduled(app: conveyor.App) -> None:
    @app.task
    def f() -> None: ...

    later = f.enqueue_after(datetime.timedelta(hours=1)).refresh()
    at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
    scheduled = f.schedule_at(at).refresh()
    opt = f.with_options(delay=60, queue="other", priority=3).enqueue().refresh()
    assert later.state is scheduled.state is opt.state is JobState.SCHEDULED
    assert abs(scheduled.run_at - at.timestamp()) < 0.01
    assert (opt.queue, opt.priority) == ("other", 3)
    past = f.schedule_at(1.0).refresh()
    assert past.state is JobState.QUEUED
    with pytest.raises(ValueError, match="aware"):
        f.schedule_at(datetime.datetime(2030, 1, 1))


def test_ids_are_unique_and_sortable(app: conveyor.App) -> None:
    @app.task
    def f(i: int) -> None: ...

    jobs = f.enqueue_many([(i,) for i in range(500)])
    ids = [j.id for j in jobs]
    assert ids == sorted(ids) and len(set(ids)) == 500


def test_a_large_batch_stores_every_job_as_a_small_one_does(app: conveyor.App) -> None:
    # 600 jobs: above any backend's bulk-write threshold (Postgres switches to COPY at
    # 200), so the bulk path must write the same rows as the statement path.
    @app.task(queue="bulk", priority=4, max_attempts=6, timeout=2.5)
    def f(i: int) -> None: ...

    small = f.enqueue_many([(-1,)])[0].refresh()
    ready = f.enqueue_many([(i,) for i in range(600)])
    later = f.with_options(delay=3600).enqueue_many([(i,) for i in range(600, 1200)])
    records = app.backend.job_get_many([j.id for j in [*ready, *later]])
    assert [r.id for r in records] == [j.id for j in [*ready, *later]]
    for i, record in enumerate(records):
        expected = JobState.QUEUED if i < 600 else JobState.SCHEDULED
        assert record.state is expected
        assert record.payload == f'{{"args":[{i}],"kwargs":{{}}}}'
        assert (record.task, record.queue, record.priority) == (small.task, "bulk", 4)
        assert (record.max_attempts, record.timeout, record.lease) == (6, 2.5, small.lease)
        assert record.attempt == small.attempt == 0
    assert all(r.run_at > small.run_at + 3000 for r in records[600:])


def test_async_twins(app: conveyor.App) -> None:
    @app.task
    def f(i: int) -> None: ...

    asyncio.run(_async_twins(f))


async def _async_twins(f: conveyor.Task[..., None]) -> None:
    job = await f.aenqueue(1)
    many = await f.aenqueue_many([(2,), (3,)])
    later = await f.aenqueue_after(60, 4)
    assert await job.astatus() is JobState.QUEUED
    assert len(many) == 2
    assert (await later.arefresh()).state is JobState.SCHEDULED
    await job.acancel()
    with pytest.raises(conveyor.JobCancelled):
        await job.aresult(timeout=1)
