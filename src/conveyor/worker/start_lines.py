"""The worker's start lines: its settings, its tasks, and warnings about its queues.

Logged once by the event log (eventlog.py) when the worker is ready, to the logger
``conveyor.worker``: the URL (password hidden), queues with weights, pool, concurrency,
the app's tasks with their queues (or what to do when it has none), and a WARNING for
each queue the tasks declare that this worker does not consume, for each consumed queue
no task declares (a typo), and for each queue holding waiting jobs nobody consumes.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(queue="mail")
    ... def send() -> None: ...
    >>> default_queue_specs(app)
    ['mail', 'default']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from conveyor.states import JobState
from conveyor.worker.console import EVENT_FIELDS

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.worker import Worker


worker_log = logging.getLogger("conveyor.worker")


def declared_queues(app: App) -> dict[str, list[str]]:
    """Queue name -> names of the app's tasks that declare it, in registration order.

    Example:
        >>> import conveyor
        >>> app = conveyor.App("sqlite:///:memory:")
        >>> @app.task(queue="mail")
        ... def send() -> None: ...
        >>> {queue: len(names) for queue, names in declared_queues(app).items()}
        {'mail': 1}
    """
    queues: dict[str, list[str]] = {}
    for name, task in app.tasks.items():
        queues.setdefault(task.options.queue, []).append(name)
    return queues


def default_queue_specs(app: App) -> list[str]:
    """What a worker given no ``--queue`` consumes: every queue the app's tasks declare,
    plus ``default``, weight 1 each."""
    names = list(declared_queues(app))
    return names if "default" in names else [*names, "default"]


#: The module ``manage.py conveyor_worker`` names its app by (it imports no task module
#: of its own: Django's autodiscovery imports each installed app's ``tasks``).
DJANGO_WORKER_APP = "conveyor.contrib.django.worker_app"


def no_tasks_hint(app_spec: str | None) -> str:
    """What a worker whose app registers no task says after ``tasks: none``: every job
    it claims would end dead as an unknown task, and the fix, for the app it was given.

    >>> hint = no_tasks_hint("proj.worker:app")
    >>> hint.split(": ", 1)[1]
    'import the module that defines them from proj.worker, the module of proj.worker:app \
(e.g. import proj.tasks there), or name it: --include proj.tasks'
    """
    if not app_spec:
        return (
            "the app registers no task, so every job this worker claims ends dead (unknown "
            "task): import the modules that define them before the worker starts, or name "
            "them: App(include=[...])"
        )
    module = app_spec.partition(":")[0]
    if module == DJANGO_WORKER_APP:  # manage.py conveyor_worker: tasks are autodiscovered
        return (
            "no @task found in the tasks.py of any INSTALLED_APPS app, so every job this "
            "worker claims ends dead (unknown task): define them there, or import the "
            "module that defines them from one"
        )
    package = module.rpartition(".")[0]
    example = f"{package}.tasks" if package else "tasks"
    return (
        f"{app_spec} registers no task, so every job this worker claims ends dead (unknown "
        f"task): import the module that defines them from {module}, the module of "
        f"{app_spec} (e.g. import {example} there), or name it: --include {example}"
    )


def log_started(worker: Worker, queues_defaulted: bool) -> None:
    """The start lines: the worker's settings, its tasks, and a WARNING for each queue
    mix-up (see the module docstring)."""
    app, sel = worker.app, worker.selection
    # "ready: queues=" starts the line as it always did (tools wait for it: bench/).
    weights = ",".join(f"{name}:{weight}" for name, weight in sel.weights)
    worker_log.info(
        "worker %s ready: queues=%s pool=%s concurrency=%d prefetch=%s url=%s",
        worker.id,
        weights,
        worker.pool,
        worker.concurrency,
        worker.prefetch,
        app.backend.url,
        extra={
            EVENT_FIELDS: {
                "event": "worker.started",
                "worker_id": worker.id,
                "queues": dict(sel.weights),
                "pool": worker.pool,
                "concurrency": worker.concurrency,
                "prefetch": worker.prefetch,
                "url": app.backend.url,
            }
        },
    )
    declared = declared_queues(app)
    if queues_defaulted:
        worker_log.info(
            "no --queue given: consuming every queue the app's tasks declare, plus default",
            extra={EVENT_FIELDS: {"event": "worker.queues_defaulted"}},
        )
    tasks = {name: task.options.queue for name, task in app.tasks.items()}
    if tasks:
        worker_log.info(
            "tasks: %s",
            ", ".join(f"{name} ({queue})" for name, queue in tasks.items()),
            extra={EVENT_FIELDS: {"event": "worker.tasks", "tasks": tasks}},
        )
    else:
        worker_log.warning(
            "tasks: none: %s",
            no_tasks_hint(worker.app_spec),
            extra={EVENT_FIELDS: {"event": "worker.tasks", "tasks": tasks}},
        )
    consumed = set(sel.names)
    warn_queues(app, declared, consumed, sel.names)
    warn_waiting_elsewhere(app, consumed | set(declared))


def warn_queues(
    app: App,
    declared: dict[str, list[str]],
    consumed: set[str],
    names: Sequence[str],
) -> None:
    """Warn about declared queues this worker does not consume, and consumed queues
    no task declares (a typo?)."""
    for queue, tasks in declared.items():
        if queue not in consumed:
            worker_log.warning(
                "queue %r is declared by task(s) %s but this worker does not consume "
                "it: its jobs wait for another worker (add --queue %s)",
                queue,
                ", ".join(tasks),
                queue,
                extra={
                    EVENT_FIELDS: {
                        "event": "queue.not_consumed",
                        "queue": queue,
                        "tasks": tasks,
                    }
                },
            )
    used = _queues_in_use(app)  # jobs sent there (with_options(queue=)): no typo
    undeclared = [
        queue
        for queue in names
        if queue not in declared and queue != "default" and queue not in used
    ]
    # A queue per tenant means thousands of names no task declares: a line each would
    # bury the start lines, so past a handful they are summed up in one line.
    if len(undeclared) > _WARN_EACH_UP_TO:
        worker_log.warning(
            "%d consumed queues are declared by no task and hold no job (e.g. %s)",
            len(undeclared),
            ", ".join(repr(q) for q in undeclared[:_WARN_EACH_UP_TO]),
            extra={EVENT_FIELDS: {"event": "queue.undeclared", "count": len(undeclared)}},
        )
        return
    for queue in undeclared:
        worker_log.warning(
            "queue %r is consumed but no task of the app declares it (a typo? declared: %s)",
            queue,
            ", ".join(declared) or "none",
            extra={EVENT_FIELDS: {"event": "queue.undeclared", "queue": queue}},
        )


# How many per-queue warnings a worker's start prints before it sums them up in one line.
_WARN_EACH_UP_TO = 5


def warn_waiting_elsewhere(app: App, known: set[str]) -> None:
    """Warn about queues that hold jobs waiting now that no task declares and this
    worker does not consume (``with_options(queue="urgent")``): nobody may ever run
    them. One read of the store's queue counts, once, at start."""
    try:
        stats = app.backend.queue_stats()
    except Exception as exc:  # a courtesy check: never a reason not to start
        worker_log.debug("could not read queue counts at start: %s", exc)
        return
    for stat in stats:
        waiting = sum(stat.counts.get(str(st), 0) for st in (JobState.QUEUED, JobState.SCHEDULED))
        if stat.queue in known or not waiting:
            continue
        worker_log.warning(
            "queue %r holds %d waiting job(s) but this worker does not consume it (add --queue %s)",
            stat.queue,
            waiting,
            stat.queue,
            extra={
                EVENT_FIELDS: {
                    "event": "queue.not_consumed",
                    "queue": stat.queue,
                    "waiting": waiting,
                }
            },
        )


def _queues_in_use(app: App) -> set[str]:
    """The queues that hold jobs in the store now (empty when it cannot be read: the
    start-up warnings are a courtesy, never a reason not to start)."""
    try:
        stats = app.backend.queue_stats()
    except Exception as exc:
        worker_log.debug("could not read queue counts at start: %s", exc)
        return set()
    return {stat.queue for stat in stats if any(stat.counts.values())}
