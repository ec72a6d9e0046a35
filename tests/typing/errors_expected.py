"""Calls a type checker must reject: each line's ``type: ignore`` is needed (mypy runs
with --warn-unused-ignores, pyright with reportUnnecessaryTypeIgnoreComment), so a
line that stopped being an error fails the suite."""

from __future__ import annotations

import conveyor
from conveyor import Args

app = conveyor.App("sqlite:///:memory:")


@app.task
def add(a: int, b: int = 0) -> int:
    return a + b


@app.task
async def fetch(n: int) -> list[int]:
    return [n]


add.enqueue("one")  # type: ignore[arg-type]
add.enqueue(1, b="two")  # type: ignore[arg-type]
add.enqueue(1, 2, 3)  # type: ignore[call-arg]
add.enqueue_after(5, "one")  # type: ignore[arg-type]
add.schedule_at(0.0, "one")  # type: ignore[arg-type]
add.with_options(queue="q").enqueue("one")  # type: ignore[arg-type]
add.execute("one")  # type: ignore[arg-type]
add.enqueue_many([Args("one")])  # type: ignore[arg-type]
fetch.enqueue("one")  # type: ignore[arg-type]
fetch.execute("one")  # type: ignore[arg-type]
text: str = add.enqueue(1).result()  # type: ignore[assignment]
numbers: list[str] = fetch.enqueue(1).result()  # type: ignore[assignment]
app.testing("sideways")  # type: ignore[call-overload]
add.delay("one")  # type: ignore[arg-type]
add.delay(1, 2, 3)  # type: ignore[call-arg]
fetch.delay("one")  # type: ignore[arg-type]
add.apply_async((1,), retry_policy={"max_retries": 3})  # type: ignore[arg-type]
add.apply_async((1,), countdown="soon")  # type: ignore[arg-type]
add.s(1) | add  # type: ignore[operator]


async def from_async_code() -> None:
    await fetch.aenqueue("one")  # type: ignore[arg-type]
    await add.aenqueue_after(1, "one")  # type: ignore[arg-type]


class RecalculateAccount(conveyor.ClassTask, app=app, queue="critical"):
    def execute(self, account_id: int) -> list[int]:
        return [account_id]


class FetchAccount(conveyor.ClassTask, app=app):
    async def execute(self, account_id: int) -> str:
        return str(account_id)


RecalculateAccount.enqueue("forty-two")  # type: ignore[arg-type]
RecalculateAccount.enqueue(1, 2)  # type: ignore[call-arg]
RecalculateAccount.enqueue_after(5, "x")  # type: ignore[arg-type]
RecalculateAccount.with_options(queue="q").enqueue("x")  # type: ignore[arg-type]
RecalculateAccount.task.execute("x")  # type: ignore[arg-type]
FetchAccount.enqueue("x")  # type: ignore[call-overload]
wrong: int = RecalculateAccount.enqueue(1).result()  # type: ignore[assignment]
RecalculateAccount.delay("forty-two")  # type: ignore[arg-type]
RecalculateAccount.apply_async((1,), link=None)  # type: ignore[arg-type]


class BadOptions(conveyor.ClassTask, app=app, queue=3):  # type: ignore[arg-type]
    def execute(self) -> None: ...


async def class_tasks_from_async_code() -> None:
    await RecalculateAccount.aenqueue("x")  # type: ignore[arg-type]


RecalculateAccount.with_options(queu="q")  # type: ignore[call-arg]


class TypoOption(conveyor.ClassTask, app=app, queeu="q"):  # type: ignore[call-arg]
    def execute(self) -> None: ...


@app.task(batch=conveyor.Batch(size=100))
def notify(items: list[conveyor.BatchItem[[str, int]]]) -> None: ...


notify.enqueue("a@example.com", "three")  # type: ignore[arg-type]
