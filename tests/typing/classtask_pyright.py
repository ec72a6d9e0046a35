"""Class-based tasks spelled ``class X(app.Task, ...)``, as the docs show them: checked
by pyright only (test_types.py). mypy cannot take an instance attribute as a base class
(``Name "app.Task" is not defined``), so mypy users write ``conveyor.ClassTask, app=app``
(tasks_typed.py); the types are the same. Never imported by pytest."""

from __future__ import annotations

from typing import assert_type

import conveyor
from conveyor import Job
from conveyor.task import AsyncTask, Task

app = conveyor.App("sqlite:///:memory:")


class RecalculateAccount(app.Task, queue="critical", max_attempts=10):
    def execute(self, account_id: int) -> list[int]:
        return [account_id]

    @classmethod
    def retry_delay(cls, attempt: int, error: BaseException) -> float | None:
        return 5.0


class FetchAccount(app.Task):
    async def execute(self, account_id: int) -> str:
        return str(account_id)


assert_type(RecalculateAccount.enqueue(42), Job[list[int]])
assert_type(FetchAccount.enqueue(42), Job[str])
assert_type(RecalculateAccount.with_options(queue="low").enqueue(42), Job[list[int]])
assert_type(RecalculateAccount.task.execute(42), list[int])
assert_type(RecalculateAccount.delay(42), Job[list[int]])
assert_type(FetchAccount.apply_async((42,), countdown=1), Job[str])
class_task: Task[..., list[int]] = RecalculateAccount.task
async_class_task: AsyncTask[..., str] = FetchAccount.task

RecalculateAccount.enqueue("forty-two")  # pyright: ignore[reportArgumentType]
RecalculateAccount.delay("forty-two")  # pyright: ignore[reportArgumentType]
FetchAccount.enqueue("x")  # pyright: ignore[reportCallIssue, reportArgumentType]
wrong: int = RecalculateAccount.enqueue(1).result()  # pyright: ignore[reportAssignmentType]


class BadOptions(app.Task, queue=3):  # pyright: ignore[reportArgumentType, reportGeneralTypeIssues]
    def execute(self) -> None: ...
