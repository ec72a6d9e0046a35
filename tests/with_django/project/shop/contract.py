"""The tasks of Django's own task-framework tests (Django 6.1's ``tests/tasks/tasks.py``)
and of django-tasks' database backend, on the "default" backend (two attempts, the retry
due at once): the shared contract's cases run against conveyor with them."""

import sys

from django.tasks import TaskContext, task


@task()
def noop_task(*args: object, **kwargs: object) -> None:
    return None


@task()
async def noop_task_async(*args: object, **kwargs: object) -> None:
    return None


@task()
def calculate_meaning_of_life() -> int:
    return 42


@task()
def failing_task_value_error() -> None:
    raise ValueError("This Task failed due to ValueError")


@task()
def failing_task_system_exit() -> None:
    raise SystemExit("This Task failed due to SystemExit")


@task()
def failing_task_keyboard_interrupt() -> None:
    raise KeyboardInterrupt("This Task failed due to KeyboardInterrupt")


@task()
def complex_exception() -> None:
    raise ValueError(ValueError("This task failed"))


@task()
def complex_return_value() -> object:
    # Return something which isn't JSON serializable nor picklable.
    return lambda: True


@task()
def set_return_value() -> object:
    return {1, 2}


@task()
def nan_return_value() -> float:
    return float("nan")


@task()
def normalized_return_value() -> object:
    """Django's JSON rules: a tuple is a list, bytes are text, a nested mapping too."""
    return (1, b"two", {"three": (3,)})


@task()
def exit_task() -> None:
    sys.exit(1)


@task(takes_context=True)
def get_task_id(context: TaskContext) -> str:
    return context.task_result.id


@task(takes_context=True)
def test_context(context: TaskContext, attempt: int) -> None:
    assert isinstance(context, TaskContext)
    assert context.attempt == attempt


@task()
def echo(*args: object, **kwargs: object) -> dict[str, object]:
    return {"args": list(args), "kwargs": kwargs}
