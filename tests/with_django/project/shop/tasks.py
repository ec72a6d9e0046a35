"""The project's Django tasks: plain functions under @task, nothing conveyor-specific."""

from django.contrib.auth.models import User
from django.tasks import TaskContext, task


class MailBounced(Exception):
    pass


@task(queue_name="mail")
def send_welcome(user_id: int) -> str:
    # Reads the row the view created: the job exists only once that row is committed.
    user = User.objects.get(pk=user_id)
    if user.username.startswith("bounce"):
        raise MailBounced(f"no mailbox for {user.username}")
    return f"welcome {user.username}"


@task(takes_context=True)
def attempt_number(context: TaskContext, label: str) -> dict[str, object]:
    return {"label": label, "attempt": context.attempt}


@task(backend="direct")
async def add(a: int, b: int) -> int:
    return a + b


@task(backend="together")
def greet(user_id: int, database: str) -> str:
    """Enqueued inside the view's transaction (its store is Django's own database)."""
    return f"hello {User.objects.using(database).get(pk=user_id).username}"
