"""The task the "timed" backend's settings run on a schedule (``OPTIONS["periodic"]``):
nothing imports this module but the worker, by the path in the settings."""

from django.tasks import task


@task(backend="timed")
def beat(source: str) -> str:
    return f"beat from {source}"
