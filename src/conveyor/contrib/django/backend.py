"""``ConveyorBackend``: Django's task backend API (``django.tasks``) on a conveyor App.

The backend owns one :class:`conveyor.App` built from its ``OPTIONS``: ``url`` (the
store), ``enqueue`` (when the job is written, below), ``database`` (the Django database
alias whose transaction decides, default ``"default"``), and any other ``App()`` option
(``max_attempts``, ``timeout``, ``retention``...), which become the app's defaults.

``enqueue`` checks and encodes the call at once (a bad argument raises in the view) and
hands back a ``READY`` ``TaskResult`` whose id is the job's id. The job is written:

- ``"on_commit"`` (the default, any store): by ``transaction.on_commit``, so a
  rolled-back transaction enqueues nothing and a worker never sees a job before the
  rows it refers to are committed; a crash between the commit and the write loses it;
- ``"in_transaction"`` (the store is Django's own database: the same SQLite file, or
  the same PostgreSQL database on psycopg 3): through Django's connection inside its
  transaction (``conveyor.transaction``), so the rows and the job commit or roll back
  together, with no window between them; a wrong pairing is a ``ConfigurationError``
  (``manage.py check`` reports what the settings alone show, ``conveyor.E002``);
- ``"immediately"``: at once, through conveyor's own connection, whatever the
  transaction does.

Outside a transaction (autocommit) all three write at once; ``"on_commit"`` then needs
no Django database connection at all (none is opened: ``SimpleTestCase`` and a request
that never queries its database enqueue to any store).

``OPTIONS["periodic"]``: jobs to enqueue on a schedule, run by the workers'
scheduler (:mod:`conveyor.contrib.django.periodic`).

The backend's ``task_class`` takes conveyor's job options in ``@task(...)`` (Django >=
6.1; :mod:`conveyor.contrib.django.task`).

Example::

    TASKS = {"default": {
        "BACKEND": "conveyor.contrib.django.ConveyorBackend",
        "OPTIONS": {"url": "sqlite:///jobs.db", "max_attempts": 3},
    }}
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import TYPE_CHECKING, Any, cast

from django.core import checks
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.tasks import Task as DjangoTask
from django.tasks import TaskResult, TaskResultStatus, task_backends
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.exceptions import InvalidTask, InvalidTaskBackend, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued

import conveyor
from conveyor.app import App, check_url
from conveyor.backends.base import JobInsertBatchParams
from conveyor.contrib.django import db, periodic
from conveyor.contrib.django.registry import TaskRegistry
from conveyor.contrib.django.results import (
    enqueued_at,
    plain_arguments,
    plain_result,
    task_result,
)
from conveyor.contrib.django.task import ConveyorDjangoTask, check_options
from conveyor.errors import ConfigurationError, ConveyorError
from conveyor.task import Enqueuer, Plan
from conveyor.task import Task as ConveyorTask

if TYPE_CHECKING:
    from conveyor.backends.postgres.backend import PostgresBackend

#: OPTIONS the backend itself reads; every other key is an App() option.
_OWN_OPTIONS = {"url", "enqueue", "database", "periodic"}
#: OPTIONS["enqueue"]: when the job is written (see the module docstring)
ENQUEUE_MODES = ("on_commit", "in_transaction", "immediately")


class ConveyorBackend(BaseTaskBackend):  # type: ignore[misc]  # Django is untyped (Any)
    """Runs Django tasks as conveyor jobs. See the module docstring for ``OPTIONS``."""

    supports_defer = True  # run_after -> the job's run_at
    supports_async_task = True  # an async def task is a conveyor async task
    supports_get_result = True  # any process reads the job from the store
    supports_priority = True  # same direction as conveyor's: higher runs first
    task_class = ConveyorDjangoTask  # @task(max_attempts=..., ...) on Django >= 6.1

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        options = dict(self.options)
        if "enqueue_on_commit" in options:  # the option's first spelling
            raise ConfigurationError(
                f"TASKS[{alias!r}]['OPTIONS']: enqueue_on_commit is now "
                '"enqueue": "on_commit" (True) or "immediately" (False)'
            )
        self.enqueue_mode: str = options.get("enqueue", "on_commit")
        if self.enqueue_mode not in ENQUEUE_MODES:
            raise ConfigurationError(
                f"TASKS[{alias!r}]['OPTIONS']['enqueue'] is {self.enqueue_mode!r}: "
                f"one of {', '.join(map(repr, ENQUEUE_MODES))}"
            )
        self.database: str = options.get("database") or DEFAULT_DB_ALIAS
        #: OPTIONS["periodic"], checked (their tasks are imported by the worker)
        self.periodic = periodic.parse(alias, options.get("periodic"))
        #: the conveyor App the jobs go through (``app.testing("capture")`` in tests)
        self.app, self.registry = _shared_app(alias, options)
        if self.enqueue_mode == "in_transaction":
            # Open the store now (Django builds backends when the task modules are
            # imported, before any request): a new SQLite store creates its schema
            # under the file's write lock, which a view's atomic() would be holding at
            # the first enqueue. A store that cannot open raises at that enqueue, and
            # `manage.py check` reports it (E001), rather than failing the import here.
            with contextlib.suppress(ConveyorError):
                self.app.backend  # noqa: B018 - opens it

    # -- Django's backend API ------------------------------------------------------------

    def validate_task(self, task: DjangoTask) -> None:
        """Django's checks, then register the task on the app (Django validates every
        task it builds, at ``@task`` and ``using()``): a conveyor option it refuses
        (``@task(max_attempts=0)``) is Django's ``InvalidTask``."""
        super().validate_task(task)
        try:
            check_options(task, self.app.task_defaults)
            self.registry.register(task)
        except (ConfigurationError, TypeError) as exc:
            raise InvalidTask(f"{task.module_path}: {exc}") from exc

    def enqueue(
        self, task: DjangoTask, args: tuple[Any, ...] | list[Any], kwargs: dict[str, Any]
    ) -> TaskResult:
        self.validate_task(task)
        enqueuer = self._enqueuer(task)
        # Checked and encoded now (a TypeError or EncodeError raises here, in the
        # caller); written on commit. Through the same plan as every enqueue, so
        # conveyor's testing modes see these jobs too.
        plan = enqueuer._plan([(tuple(args), dict(kwargs))], None)
        job_id = _ids(plan)[0]
        result = TaskResult(
            task=task,
            id=job_id,
            status=TaskResultStatus.READY,
            enqueued_at=enqueued_at(job_id),  # as get_result() reads it: the id's time
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )

        def write() -> None:
            written = enqueuer._write(plan)
            if written and written[0].id != result.id:  # a unique job kept: its own id
                object.__setattr__(result, "id", written[0].id)
                object.__setattr__(result, "enqueued_at", enqueued_at(written[0].id))
            task_enqueued.send(type(self), task_result=result)

        if self.enqueue_mode == "on_commit":
            # Outside atomic() there is nothing to wait for: write now. Asking
            # transaction.on_commit would open a connection (it checks autocommit), and
            # SimpleTestCase refuses any.
            if connections[self.database].in_atomic_block:
                transaction.on_commit(write, using=self.database)
            else:
                write()
        elif self.enqueue_mode == "in_transaction":
            wrapper = connections[self.database]
            with conveyor.transaction(wrapper):
                self._require_same_database(wrapper)
                write()
        else:
            write()
        return result

    def get_result(self, result_id: str) -> TaskResult:
        found = self.app.backend.job_get_many([result_id])
        if not found:
            raise TaskResultDoesNotExist(result_id)
        record = found[0]
        conveyor_task = self.registry.get(record.task)
        django_task = self.registry.django_task(record.task)
        if conveyor_task is None or django_task is None:
            raise TaskResultDoesNotExist(
                f"{result_id}: its task {record.task!r} is not a Django task of backend "
                f"{self.alias!r} importable here"
            )
        # The stored JSON, as enqueue() returned it and Django's backends give it back
        # (the worker decodes arguments by the function's type hints; this does not).
        args, kwargs = plain_arguments(record.payload)
        value = plain_result(record.result)
        attempts = self.app.backend.job_attempts(result_id)
        return task_result(django_task, self.alias, record, attempts, args, kwargs, value)

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """``manage.py check``: a store URL conveyor cannot open is an error at start-up."""
        try:
            check_url(self.app.url)
        except ConfigurationError as exc:
            return [checks.Error(str(exc), obj=f"TASKS[{self.alias!r}]", id="conveyor.E001")]
        if self.enqueue_mode == "in_transaction":
            why = db.static_mismatch(connections[self.database], self.app.url)
            if why is not None:
                error = db.refuse(self.alias, self.database, why)
                return [checks.Error(str(error), obj=f"TASKS[{self.alias!r}]", id="conveyor.E002")]
        try:
            periodic.check(self)
        except ConfigurationError as exc:
            return [checks.Error(str(exc), obj=f"TASKS[{self.alias!r}]", id="conveyor.E003")]
        return []

    # -- helpers -------------------------------------------------------------------------

    def _require_same_database(self, wrapper: Any) -> None:
        """Refuse a Django database that is not the store's: the jobs would land where
        no worker of this app looks, or nowhere. From the settings first; on PostgreSQL
        then the servers are asked once per Django connection (the store's answer once
        per process), since two URLs can name one database and one URL two."""
        why = db.static_mismatch(wrapper, self.app.url)
        if why is not None:
            raise db.refuse(self.alias, self.database, why)
        if wrapper.vendor != "postgresql":
            return  # SQLite: the insert itself checks the file (PRAGMA database_list)
        driver = db.driver_connection(wrapper)
        found = _CHECKED.get(driver)
        if found is None:
            found = _CHECKED[driver] = db.identity_of(driver)
        store = _store_identity(self.app)
        if found != store:  # the server may have restarted since the store was asked
            store = _store_identity(self.app, fresh=True)
        if found != store:
            raise db.refuse(
                self.alias,
                self.database,
                f"it is {_named(found)}, the store {_named(store)}",
            )

    def conveyor_task(self, task: DjangoTask) -> ConveyorTask[Any, Any]:
        """The conveyor task that runs ``task`` (its name is ``task.module_path``)."""
        return self.registry.register(task)

    def _enqueuer(self, task: DjangoTask) -> Enqueuer[Any, Any]:
        """The conveyor task with this Django task's queue, priority and run_after."""
        run_after = task.run_after
        return self.registry.register(task).with_options(
            queue=task.queue_name,
            priority=task.priority,
            # naive (USE_TZ = False) is local time, as Django means it
            at=None if run_after is None else run_after.timestamp(),
        )


#: alias -> (the OPTIONS it was built from, its App). Django makes one backend instance
#: per thread (``task_backends`` is thread-local); they share one App, so a testing mode
#: opened in the test's thread sees enqueues from any thread (``sync_to_async`` runs async
#: views' enqueues in another), and a process opens one store per alias, not per thread.
_APPS: dict[str, tuple[dict[str, Any], App, TaskRegistry]] = {}
_APPS_LOCK = threading.Lock()


def _shared_app(alias: str, options: dict[str, Any]) -> tuple[App, TaskRegistry]:
    """The App of ``TASKS[alias]`` with these OPTIONS; a new one when they changed
    (``override_settings(TASKS=...)`` in a test)."""
    with _APPS_LOCK:
        known = _APPS.get(alias)
        if known is not None and known[0] == options:
            return known[1], known[2]
        app_options = {k: v for k, v in options.items() if k not in _OWN_OPTIONS}
        try:
            app = App(options.get("url"), **app_options)
        except TypeError as exc:  # an unknown option: name the setting, not App()
            raise ConfigurationError(f"TASKS[{alias!r}]['OPTIONS']: {exc}") from None
        registry = app.tasks = TaskRegistry(app, alias)
        _APPS[alias] = (options, app, registry)
        return app, registry


#: Django's PostgreSQL driver connections -> the database each is on (asked once per
#: connection; weak: Django closes and replaces them)
_CHECKED: weakref.WeakKeyDictionary[object, tuple[object, ...]] = weakref.WeakKeyDictionary()
#: the App's PostgreSQL store -> its database's identity (asked once per process)
_IDENTITIES: weakref.WeakKeyDictionary[App, tuple[object, ...]] = weakref.WeakKeyDictionary()


def _store_identity(app: App, *, fresh: bool = False) -> tuple[object, ...]:
    found = None if fresh else _IDENTITIES.get(app)
    if found is None:
        store = cast("PostgresBackend", app.backend)  # the caller checked the vendor
        found = _IDENTITIES[app] = db.postgres_identity(store.target.conninfo)
    return found


def _named(identity: tuple[object, ...]) -> str:
    return f"the database {identity[0]!r} of the server started at {identity[1]}"


def _ids(plan: Plan) -> list[str]:
    if isinstance(plan, JobInsertBatchParams):
        return list(plan.ids)
    return [p.id for p in plan]


def backend_for(alias: str = "default") -> ConveyorBackend:
    """The ``TASKS[alias]`` backend; ConfigurationError when there is none or it is not a
    ConveyorBackend."""
    try:
        backend = task_backends[alias]
    except InvalidTaskBackend as exc:
        raise ConfigurationError(f"no TASKS backend {alias!r} ({exc})") from None
    if not isinstance(backend, ConveyorBackend):
        raise ConfigurationError(
            f"TASKS[{alias!r}] is {type(backend).__name__}, not "
            "conveyor.contrib.django.ConveyorBackend"
        )
    return backend


def conveyor_app(alias: str = "default") -> App:
    """The conveyor App behind ``TASKS[alias]``: for ``app.testing("capture")`` in tests,
    ``app.job(result.id)``, the dashboard.

    Example::

        with conveyor_app().testing("capture") as captured:
            client.post("/signup/", {"email": "a@example.com"})
    """
    return backend_for(alias).app


def conveyor_task(task: DjangoTask) -> ConveyorTask[Any, Any]:
    """The conveyor task that runs a Django task, e.g. for
    ``captured.assert_enqueued(conveyor_task(send_welcome), user_id)``."""
    if not isinstance(task, DjangoTask):
        raise InvalidTask(f"{task!r} is not a django.tasks.Task (decorate it with @task)")
    return backend_for(task.backend).conveyor_task(task)
