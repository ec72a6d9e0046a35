"""A task of the "together_pg" backend, which exists only when the tests started a
PostgreSQL (DJANGO_PG_URL): imported by the view and the tests only then, and by the
worker by its module path when its first job arrives."""

from django.contrib.auth.models import User
from django.tasks import task


@task(backend="together_pg")
def greet_pg(user_id: int, database: str) -> str:
    """``shop.tasks.greet`` on the "pg" database: enqueued in its transaction."""
    return f"hello {User.objects.using(database).get(pk=user_id).username}"
