"""Django tasks as conveyor tasks: one conveyor task per Django task, named by its
module path (``shop.tasks.send_receipt``).

A Django task is a module-level function wrapped by ``@django.tasks.task``; the object at
its module path is the ``django.tasks.Task``. The producer registers it on the backend's
:class:`~conveyor.App` when Django builds the task (``validate_task``); a worker finds a
name it has not seen by importing that module path (as Django's own pickling of tasks
does, ``Task.__reduce__``), so any task module works without listing it anywhere.

Example::

    registry = TaskRegistry(app, "default")
    conveyor_task = registry.register(send_receipt)   # send_receipt: a django Task
    conveyor_task.name                                  # 'shop.tasks.send_receipt'
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.tasks import Task as DjangoTask
from django.utils.module_loading import import_string

from conveyor.contrib.django.running import final_hook, runner
from conveyor.contrib.django.task import options_of
from conveyor.task import Task

if TYPE_CHECKING:
    from conveyor.app import App


log = logging.getLogger("conveyor.contrib.django")


class TaskRegistry(dict[str, Task[Any, Any]]):
    """``app.tasks`` of a Django backend's App: a dict of conveyor tasks that, asked for a
    name it lacks (``get`` and ``in``, which is how the worker and job handles look
    tasks up), imports the name as a module path and registers the Django task there.

    Only a Django task configured for this backend's alias is registered: a job naming
    anything else stays unknown and ends dead with "unknown task", as in any worker.
    """

    def __init__(self, app: App, alias: str) -> None:
        super().__init__()
        self._app = app
        self._alias = alias
        #: names being registered now: App.task looks the name up first (a duplicate
        #: check), which must not import and register it again
        self._registering: set[str] = set()
        # One import-and-register at a time: pool threads look names up concurrently,
        # and one must not find another's name half registered. Reentrant: App.task
        # looks the name up while registering it.
        self._lock = threading.RLock()

    def register(self, django_task: DjangoTask) -> Task[Any, Any]:
        """The conveyor task that runs ``django_task`` (registered on first use)."""
        name = django_task.module_path
        found = super().get(name)
        if found is not None and _django_task_of(found) is django_task.func:
            return found
        # Its queue and priority as decorated: the worker's default queues come from
        # them; each enqueue passes the Django task's own (``using()``) explicitly. Its
        # conveyor options (``@task(max_attempts=...)``) over the backend's defaults; the
        # retry hook ends a result that is not JSON at once (running.final_hook).
        options = options_of(django_task)
        user_hook = options.pop("retry_delay", None) or self._app.task_defaults.get("retry_delay")
        register = self._app.task(
            name=name,
            queue=django_task.queue_name,
            priority=django_task.priority,
            retry_delay=final_hook(user_hook),
            **options,
        )
        with self._lock:
            self._registering.add(name)
            try:
                registered: Task[Any, Any] = register(runner(django_task))
            finally:
                self._registering.discard(name)
        return registered

    def get(self, name: str, default: Any = None) -> Any:
        found = super().get(name)
        if found is None:
            with self._lock:
                found = super().get(name)
                if found is None and name not in self._registering:
                    found = self._import(name)
        return default if found is None else found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def django_task(self, name: str) -> DjangoTask | None:
        """The Django task registered (or importable) under ``name``."""
        found = self.get(name)
        made_of: DjangoTask | None = getattr(getattr(found, "fn", None), "django_task", None)
        return made_of

    def _import(self, name: str) -> Task[Any, Any] | None:
        if "." not in name:
            return None
        try:
            target = import_string(name)
        except ImportError:
            return None
        except Exception:  # the module's own code failed: say so, the job is unknown here
            log.warning("importing task %r failed", name, exc_info=True)
            return None
        if not isinstance(target, DjangoTask) or target.backend != self._alias:
            return None
        return self.register(target)


def _django_task_of(task: Task[Any, Any]) -> Callable[..., Any] | None:
    made_of: DjangoTask | None = getattr(task.fn, "django_task", None)
    return None if made_of is None else made_of.func
