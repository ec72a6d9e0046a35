"""Class-based tasks (``class X(app.Task, ...)``): what defining the class registers,
and the refusals at definition time. Enqueueing writes to an in-memory SQLite store."""

from __future__ import annotations

from typing import Any

import pytest

import conveyor
from conveyor import Args, ConfigurationError, JobState
from conveyor.classtask import ClassTask
from conveyor.task import AsyncTask, Task


@pytest.fixture
def app() -> conveyor.App:
    return conveyor.App("sqlite:///:memory:", max_attempts=4)


def test_defining_the_class_registers_a_task_named_module_qualname(app: conveyor.App) -> None:
    class Recalculate(app.Task, queue="critical", max_attempts=10, priority=3):
        """Recalculate one account."""

        def execute(self, account_id: int, force: bool = False) -> int:
            return account_id

    task = Recalculate.task
    assert type(task) is Task
    assert task.name == f"{__name__}.{Recalculate.__qualname__}"
    assert app.tasks[task.name] is task
    assert (task.options.queue, task.options.max_attempts, task.options.priority) == (
        "critical",
        10,
        3,
    )
    assert task.__doc__ == "Recalculate one account."
    # the registered function has execute's signature without self, hints resolved
    assert list(task.decoder.signature.parameters) == ["account_id", "force"]
    with pytest.raises(TypeError, match="account_id"):
        Recalculate.enqueue("x")  # type: ignore[arg-type]


def test_an_async_execute_gives_an_async_task(app: conveyor.App) -> None:
    class Fetch(app.Task):
        async def execute(self, n: int) -> list[int]:
            return [n]

    assert isinstance(Fetch.task, AsyncTask)
    assert Fetch.task.is_async
    with app.testing("inline"):
        assert Fetch.enqueue(2).result() == [2]


def test_enqueue_methods_write_jobs_of_the_task(app: conveyor.App) -> None:
    class Mail(app.Task, queue="mail", name="mail.send"):
        def execute(self, to: str, subject: str = "hi") -> None: ...

    job = Mail.enqueue("a@example.com")
    record = job.refresh()
    assert (record.task, record.queue, record.state) == ("mail.send", "mail", JobState.QUEUED)
    assert [j.refresh().task for j in Mail.enqueue_many([Args("b"), ("c",)])] == ["mail.send"] * 2
    assert Mail.with_options(queue="low").enqueue("d").refresh().queue == "low"
    assert Mail.enqueue_after(60, "e").refresh().state is JobState.SCHEDULED
    assert Mail.schedule_at(2**31, "f").refresh().state is JobState.SCHEDULED
    with pytest.raises(TypeError, match="subject"):
        Mail.enqueue("a", subject=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Mail.enqueue()  # type: ignore[call-arg]


def test_every_job_gets_a_fresh_instance(app: conveyor.App) -> None:
    class Counter(app.Task):
        def __init__(self) -> None:
            self.calls = 0

        def execute(self) -> int:
            self.calls += 1
            return self.calls

    with app.testing("inline"):
        assert [Counter.enqueue().result() for _ in range(3)] == [1, 1, 1]


def test_inline_execution_and_a_plain_call(app: conveyor.App) -> None:
    seen: list[str] = []

    class Double(app.Task, queue="math"):
        def execute(self, x: int) -> int:
            seen.append(conveyor.current_job().queue)
            return 2 * x

    # .task.execute: as a worker would (current_job() set), no store
    assert Double.task.execute(21) == 42
    assert seen == ["math"]
    # a plain call of the method: no job at all
    with pytest.raises(LookupError):
        Double().execute(1)


def test_capture_assertions_take_the_class(app: conveyor.App) -> None:
    class Ship(app.Task):
        def execute(self, order: int, express: bool = False) -> None: ...

    class Other(app.Task):
        def execute(self) -> None: ...

    with app.testing("capture") as captured:
        Ship.enqueue(7)
        captured.assert_enqueued(Ship, 7, express=False)
        captured.assert_not_enqueued(Other)
        assert [j.args for j in captured.enqueued(Ship)] == [(7,)]
        with pytest.raises(AssertionError, match="order=7 \\(expected 8\\)"):
            captured.assert_enqueued(Ship, 8)
        assert [j.status for j in captured.drain()] == [JobState.SUCCEEDED]


def test_workflows_take_the_class_and_its_signatures(app: conveyor.App) -> None:
    class Add(app.Task):
        def execute(self, a: int, b: int) -> int:
            return a + b

    class Square(app.Task):
        def execute(self, x: int) -> int:
            return x * x

    with app.testing("inline"):
        assert conveyor.chain(Add.s(1, 2), Square.s()).enqueue().result() == 9
        assert Add.enqueue(2, 2).then(Square).result() == 16


def test_retry_delay_classmethod_is_the_hook(app: conveyor.App) -> None:
    seen: list[tuple[int, str]] = []

    class Flaky(app.Task):
        def execute(self) -> None:
            raise ValueError("no")

        @classmethod
        def retry_delay(cls, attempt: int, error: BaseException) -> float | str | None:
            seen.append((attempt, type(error).__name__))
            return "archive" if attempt == 2 else 0.0

    class WithJob(app.Task):
        def execute(self) -> None: ...

        @classmethod
        def retry_delay(cls, attempt: int, error: BaseException, job: Any) -> str:
            return f"{attempt} {job}"

    with app.testing("inline"):
        job = Flaky.enqueue()
        record = job.refresh()
    assert (record.state, record.attempt, record.reason) == (
        JobState.DEAD,
        2,
        "archived by retry_delay hook",
    )
    assert seen == [(1, "ValueError"), (2, "ValueError")]
    hook = WithJob.task.options.retry_delay
    assert hook is not None and hook(3, ValueError(), "j") == "3 j"


def test_a_base_without_execute_shares_options_and_is_not_registered(
    app: conveyor.App,
) -> None:
    class Critical(app.Task, queue="critical", max_attempts=9):
        pass

    class Rebuild(Critical, priority=5):
        def execute(self) -> None: ...

    assert [name for name in app.tasks if name.endswith("Critical")] == []
    options = Rebuild.task.options
    assert (options.queue, options.max_attempts, options.priority) == ("critical", 9, 5)
    with pytest.raises(TypeError, match="abstract task base"):
        Critical.task  # noqa: B018 - the descriptor raises
    with pytest.raises(TypeError, match="abstract task base"):
        Critical.enqueue()


def test_the_generic_base_takes_the_app_as_a_keyword(app: conveyor.App) -> None:
    class Ping(ClassTask, app=app, queue="pings"):
        def execute(self) -> str:
            return "pong"

    assert app.tasks[Ping.task.name].options.queue == "pings"
    with pytest.raises(ConfigurationError, match="has no app"):

        class Orphan(ClassTask):
            def execute(self) -> None: ...


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"execute": staticmethod(lambda: None)}, "must be a plain method"),
        ({"execute": lambda: None}, "must take self first"),
        (
            {"execute": lambda self: None, "retry_delay": staticmethod(lambda a, e: None)},
            "must be a classmethod",
        ),
        (
            {"execute": lambda self: None, "retry_delay": classmethod(lambda cls: None)},
            r"\(cls, attempt, error\)",
        ),
    ],
)
def test_definitions_that_cannot_run_are_refused(
    app: conveyor.App, body: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        type("Broken", (app.Task,), body)


def test_bad_options_are_refused_when_the_class_is_defined(app: conveyor.App) -> None:
    with pytest.raises(conveyor.options.OptionValueError, match="max_attempts"):

        class Zero(app.Task, max_attempts=0):
            def execute(self) -> None: ...

    with pytest.raises(TypeError, match="queeu"):

        class Typo(app.Task, queeu="x"):  # type: ignore[call-arg]
            def execute(self) -> None: ...

    with pytest.raises(TypeError, match="retry_delay"):  # it is the classmethod

        class Keyword(app.Task, retry_delay=lambda a, e, j: None):  # type: ignore[call-arg]
            def execute(self) -> None: ...

    with pytest.raises(ConfigurationError, match="must take no arguments"):

        class Needy(app.Task):
            def __init__(self, db: object) -> None:
                self.db = db

            def execute(self) -> None: ...


def test_two_classes_cannot_share_a_name(app: conveyor.App) -> None:
    class First(app.Task, name="shared"):
        def execute(self) -> None: ...

    with pytest.raises(ConfigurationError, match="already registered"):

        class Second(app.Task, name="shared"):
            def execute(self) -> None: ...


def test_a_class_can_be_scheduled_periodically(app: conveyor.App) -> None:
    @app.periodic(every=60, args=[3])
    class Tick(app.Task):
        def execute(self, n: int) -> int:
            return n

    [schedule] = app.schedules.values()
    assert schedule.task is Tick.task
    assert isinstance(Tick, type)  # the decorator gives the class back
    with pytest.raises(ConfigurationError, match="periodic"):
        app.periodic(every=60, args=["x", "y"])(Tick)
