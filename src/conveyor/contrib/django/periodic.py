"""Periodic Django tasks declared in settings: the backend's ``OPTIONS["periodic"]``.

One entry per schedule, named (the name ``conveyor status`` shows), like Celery's
``beat_schedule``::

    "OPTIONS": {
        "url": "sqlite:///jobs.db",
        "periodic": {
            "nightly-report": {"task": "shop.tasks.send_report", "cron": "0 3 * * *"},
            "heartbeat": {"task": "shop.tasks.beat", "every": 60, "args": ["web"]},
        },
    }

Keys: ``task`` (the dotted path of a Django task of this backend), exactly one of
``cron`` (five fields) or ``every`` (seconds or a ``timedelta``), and optionally
``args``/``kwargs`` (JSON), ``tz`` (a cron's time zone, default ``settings.TIME_ZONE``)
and ``catch_up`` (``"latest"``, ``"all"`` or ``"none"``: see conveyor's periodic jobs).

Every ``manage.py conveyor_worker`` of the backend runs the scheduler (each slot is
enqueued once however many workers run); the tasks are imported when the worker starts
(:mod:`~conveyor.contrib.django.worker_app`). ``manage.py check`` imports them too and
reports an entry that cannot work (``conveyor.E003``).

Example:
    >>> parse("default", {"beat": {"task": "shop.tasks.beat", "every": 60}})
    {'beat': {'task': 'shop.tasks.beat', 'every': 60}}
    >>> parse("default", {"beat": {"task": "shop.tasks.beat", "evry": 60}})
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: TASKS['default']['OPTIONS']['periodic']['beat']: unknown key 'evry' (known: args, catch_up, cron, every, kwargs, task, tz)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.contrib.django.backend import ConveyorBackend
    from conveyor.contrib.django.registry import TaskRegistry

_KEYS = frozenset({"task", "cron", "every", "tz", "catch_up", "args", "kwargs"})


def parse(alias: str, value: object) -> dict[str, dict[str, Any]]:
    """The entries of ``OPTIONS["periodic"]``, their shape checked (not their tasks: the
    backend is built while task modules import, before they can be)."""
    if value is None:
        return {}
    where = f"TASKS[{alias!r}]['OPTIONS']['periodic']"
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{where} must be a dict of name -> schedule")
    entries: dict[str, dict[str, Any]] = {}
    for name, entry in value.items():
        here = f"{where}[{name!r}]"
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"{where}: a schedule's name must be non-empty text")
        if not isinstance(entry, Mapping):
            raise ConfigurationError(f"{here} must be a dict with 'task' and 'cron' or 'every'")
        unknown = sorted(set(entry) - _KEYS)
        if unknown:
            raise ConfigurationError(
                f"{here}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})"
            )
        if not isinstance(entry.get("task"), str):
            raise ConfigurationError(f"{here}: 'task' must be a Django task's dotted path")
        entries[name] = dict(entry)
    return entries


def install(backend: ConveyorBackend) -> None:
    """Register the backend's schedules on its App (the worker's: its scheduler runs
    them); a schedule already there is left as it is (the App is built once a process)."""
    _install(backend.app, backend.registry, backend.alias, backend.periodic)


def check(backend: ConveyorBackend) -> None:
    """ConfigurationError for an entry that cannot work (a path that is not a Django task
    of this backend, a bad cron or time zone, arguments the task does not take): the
    schedules registered on a scratch App, the backend's own left alone."""
    if not backend.periodic:
        return
    from conveyor.app import App
    from conveyor.contrib.django.registry import TaskRegistry

    scratch = App("sqlite:///:memory:")
    _install(scratch, TaskRegistry(scratch, backend.alias), backend.alias, backend.periodic)


def _install(
    app: App, registry: TaskRegistry, alias: str, entries: Mapping[str, Mapping[str, Any]]
) -> None:
    from django.conf import settings
    from django.tasks import Task as DjangoTask
    from django.utils.module_loading import import_string

    for name, entry in entries.items():
        if name in app.schedules:
            continue
        here = f"TASKS[{alias!r}]['OPTIONS']['periodic'][{name!r}]"
        path = entry["task"]
        try:
            target = import_string(path)
        except ImportError as exc:
            raise ConfigurationError(f"{here}: cannot import {path!r} ({exc})") from None
        if not isinstance(target, DjangoTask) or target.backend != alias:
            raise ConfigurationError(f"{here}: {path!r} is not a Django task of backend {alias!r}")
        try:
            decorate = app.periodic(
                cron=entry.get("cron"),
                every=entry.get("every"),
                tz=entry.get("tz") or settings.TIME_ZONE or "UTC",
                catch_up=entry.get("catch_up", "latest"),
                name=name,
                args=entry.get("args", ()),
                kwargs=entry.get("kwargs"),
            )
            decorate(registry.register(target))
        except ConfigurationError as exc:
            raise ConfigurationError(f"{here}: {exc}") from None
