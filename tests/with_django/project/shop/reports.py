"""A task outside any ``tasks`` module: the worker imports it by its module path when
its first job arrives (nothing lists this module)."""

from django.contrib.auth.models import User
from django.tasks import task


@task
def count_users() -> int:
    return User.objects.count()


@task
def process_id() -> int:
    import os

    return os.getpid()
