"""Tasks with conveyor's job options in ``@task(...)`` (Django >= 6.1 passes them to
the backend's task class): imported only where Django is 6.1 or later."""

import datetime
import time

from django.tasks import TaskContext, task

from conveyor import Backoff


@task(max_attempts=3, retry=Backoff(base=0, jitter=0), takes_context=True)
def flaky(context: TaskContext) -> int:
    """Fails its first two attempts, succeeds on the third."""
    if context.attempt < 3:
        raise ConnectionError(f"attempt {context.attempt} failed")
    return context.attempt


@task(max_attempts=1)
def once() -> None:
    raise ValueError("no second attempt")


@task(timeout=0.5, max_attempts=1)
def slow() -> None:
    for _ in range(300):  # short sleeps: the timeout lands between two of them
        time.sleep(0.1)


@task(unique_key=lambda account_id: account_id)
def sync_account(account_id: int) -> int:
    return account_id


@task(expires=datetime.timedelta(seconds=0.2))
def short_lived() -> None:
    return None
