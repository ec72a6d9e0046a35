"""What a user's type checker sees of conveyor's tasks and jobs (checked by
test_types.py under mypy --strict and pyright strict; never imported by pytest)."""

from __future__ import annotations

import datetime
from collections.abc import Coroutine
from typing import Any, assert_type

import conveyor
from conveyor import Args, Job
from conveyor.compose import Chain, Signature
from conveyor.task import AsyncTask, Task
from conveyor.testing import Captured, Inline

app = conveyor.App("sqlite:///:memory:")


@app.task
def add(a: int, b: int = 0) -> int:
    return a + b


@app.task(queue="mail", max_attempts=3)
def send(to: str, subject: str = "hi") -> None: ...


@app.task
async def fetch(n: int) -> list[int]:
    return [n]


@app.task(queue="io")
async def fetch_io(n: int) -> list[int]:
    return [n]


when = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)

# -- sync and async tasks: Task[P, R], R the (awaited) result ------------------------------
sync_task: Task[..., int] = add
async_task: AsyncTask[..., list[int]] = fetch
async_with_options: AsyncTask[..., list[int]] = fetch_io
assert_type(add.enqueue(1), Job[int])
assert_type(add.enqueue(1).result(), int)
assert_type(send.enqueue("a@example.com", subject="x"), Job[None])
assert_type(fetch.enqueue(1), Job[list[int]])
assert_type(fetch.enqueue(1).result(timeout=5), list[int])
assert_type(fetch_io.enqueue(1), Job[list[int]])
assert_type(add.enqueue_after(5, 1, 2), Job[int])
assert_type(add.enqueue_after(datetime.timedelta(seconds=5), 1), Job[int])
assert_type(fetch.schedule_at(when, 1), Job[list[int]])
assert_type(add.with_options(queue="q", priority=3).enqueue(1), Job[int])
assert_type(fetch.with_options(delay=2).enqueue(1), Job[list[int]])
assert_type(add.enqueue_many([Args(1), Args(2, b=3), (4,), {"a": 5}]), list[Job[int]])
assert_type(add.enqueue_many(Args(i) for i in range(3)), list[Job[int]])
assert_type(add.execute(1, 2), int)
assert_type(fetch.execute(1), list[int])
assert_type(add.s(1), Signature)
# Celery's spellings: delay is typed like enqueue, apply_async keeps the job's result type
assert_type(add.delay(1, b=2), Job[int])
assert_type(fetch.delay(1), Job[list[int]])
assert_type(add.with_options(queue="q").delay(1), Job[int])
assert_type(add.apply_async((1,), {"b": 2}, countdown=5, queue="q", priority=3), Job[int])
assert_type(fetch.apply_async([1], eta=when, expires=60), Job[list[int]])
assert_type(add.s(1) | add.s(), Chain)
assert_type(conveyor.group(add.s(1)) | add.s() | add.s(), Chain)
# calling a task is calling the function: an async task gives its coroutine
assert_type(add(1), int)
# a result used as a statement: no false unused-coroutine (the job was Job[Coroutine])
fetch.enqueue(1).result()
fetch.with_options(queue="q").enqueue(1).result()
coroutine = fetch(1)
_ = assert_type(coroutine, Coroutine[Any, Any, list[int]])
coroutine.close()


async def from_async_code() -> None:
    job = await fetch.aenqueue(1)
    assert_type(job, Job[list[int]])
    assert_type(await job.aresult(), list[int])
    assert_type(await add.aenqueue_after(1, 2), Job[int])
    assert_type(await fetch.aschedule_at(when, 1), Job[list[int]])
    assert_type(await add.aenqueue_many([Args(1)]), list[Job[int]])
    await fetch.with_options(queue="q").aenqueue(2)
    (await fetch.aenqueue(3)).result()


# -- the testing modes ---------------------------------------------------------------------
with app.testing("inline") as inline:
    assert_type(inline, Inline)
    assert_type(add.enqueue(1).result(), int)
with app.testing("capture") as captured:
    assert_type(captured, Captured)
    assert_type(captured.jobs[0].args, tuple[Any, ...])
    assert_type(captured.drain(), list[Job[Any]])


# -- class-based tasks: R from execute's return annotation, P from its parameters ----------
# (``conveyor.ClassTask, app=app`` is the spelling mypy follows; pyright also follows
# ``app.Task``: classtask_pyright.py)
class RecalculateAccount(conveyor.ClassTask, app=app, queue="critical", max_attempts=10):
    def execute(self, account_id: int, force: bool = False) -> list[int]:
        return [account_id]

    @classmethod
    def retry_delay(cls, attempt: int, error: BaseException) -> float | None:
        return 5.0


class FetchAccount(conveyor.ClassTask, app=app):
    async def execute(self, account_id: int) -> str:
        return str(account_id)


assert_type(RecalculateAccount.enqueue(42), Job[list[int]])
assert_type(RecalculateAccount.enqueue(42, force=True).result(), list[int])
assert_type(FetchAccount.enqueue(42), Job[str])
assert_type(FetchAccount.enqueue(42).result(), str)
assert_type(RecalculateAccount.enqueue_after(5, 42), Job[list[int]])
assert_type(FetchAccount.schedule_at(when, 42), Job[str])
assert_type(RecalculateAccount.enqueue_many([Args(1), (2,)]), list[Job[list[int]]])
assert_type(RecalculateAccount.with_options(queue="low").enqueue(42), Job[list[int]])
assert_type(FetchAccount.with_options(delay=1).enqueue(42), Job[str])
assert_type(RecalculateAccount.s(42), Signature)
assert_type(RecalculateAccount.delay(42, force=True), Job[list[int]])
assert_type(FetchAccount.delay(42), Job[str])
assert_type(RecalculateAccount.apply_async((42,), countdown=5, queue="low"), Job[list[int]])
assert_type(FetchAccount.apply_async([42], priority=3), Job[str])
assert_type(RecalculateAccount.task.execute(42), list[int])
assert_type(FetchAccount.task.execute(42), str)
assert_type(RecalculateAccount().execute(42), list[int])
class_task: Task[..., list[int]] = RecalculateAccount.task
async_class_task: AsyncTask[..., str] = FetchAccount.task
FetchAccount.enqueue(1).result()  # no false unused-coroutine


async def class_tasks_from_async_code() -> None:
    assert_type(await RecalculateAccount.aenqueue(42), Job[list[int]])
    assert_type(await FetchAccount.aenqueue(42), Job[str])
    assert_type(await FetchAccount.aenqueue_after(1, 42), Job[str])
    assert_type(await RecalculateAccount.aschedule_at(when, 42), Job[list[int]])
    assert_type(await FetchAccount.aenqueue_many([Args(1)]), list[Job[str]])


def class_tasks_in_capture_mode() -> None:
    with app.testing("capture") as captured:
        RecalculateAccount.enqueue(1)
        captured.assert_enqueued(RecalculateAccount, 1)
        captured.assert_not_enqueued(FetchAccount)


# -- batch handlers: the body takes the items, the jobs take one item's arguments ----------


@app.task(batch=conveyor.Batch(size=100, wait=1.0))
def notify(items: list[conveyor.BatchItem[[str, int]]]) -> list[bool]:
    return [item.call(lambda to, n: bool(to) and n > 0) for item in items]


@app.task(batch=conveyor.Batch(size=10))
async def index_all(items: list[conveyor.BatchItem[[int]]]) -> list[str]:
    return [str(item.args[0]) for item in items]


assert_type(notify, Task[[str, int], bool])
assert_type(notify.enqueue("a@example.com", 3), Job[bool])
assert_type(index_all, AsyncTask[[int], str])
assert_type(index_all.enqueue(1), Job[str])
