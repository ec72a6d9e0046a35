"""The jobs admin: conveyor's jobs in Django's admin site, read from conveyor's store.

With ``django.contrib.admin`` and ``conveyor.contrib.django`` in ``INSTALLED_APPS``, the
admin index gets a "Conveyor" section with "Jobs": a list of the jobs of one
``ConveyorBackend`` store (SQLite, Redis or PostgreSQL, whichever ``TASKS`` names),
newest first, filtered by state, queue and task, paged; a page per job (arguments,
result or error, every attempt with its traceback, logs); and two actions, retry (dead
and cancelled jobs) and cancel (jobs not finished yet), on the list's selected jobs and
on a job's page. With several ``ConveyorBackend`` entries in ``TASKS`` a "backend"
filter picks the store.

Why an unmanaged model (:class:`conveyor.contrib.django.models.Job`) and a ModelAdmin
whose views read the store, rather than a custom view added to ``AdminSite.get_urls``:
Django's admin is organised around registered models. Registering one gives, with no
admin-site subclass for the project to install: the row on the admin index and the app
index (``get_model_perms``), the admin URL names (``admin:conveyor_job_changelist``,
``admin:conveyor_job_change``) and breadcrumbs, staff-only access and CSRF protection
(``AdminSite.admin_view`` wraps every view), and Django's own permissions, created at
``migrate`` and granted in the admin like any model's: ``conveyor.view_job`` to see jobs
(``has_view_permission``) and ``conveyor.change_job`` to retry and cancel them
(``has_change_permission``; the actions declare ``permissions=["change"]`` and Django's
action machinery drops them for a user without it, and the views refuse a POST from such
a user with 403). The model has no table and is never queried: the changelist and change
views are replaced, since the jobs are not rows of Django's database (their store may be
Redis) and a queryset cannot reach them. Adding and deleting are off.

An action's third argument is therefore not a QuerySet but a :class:`Selected` (the
store and the selected ids). Example, a project's own action::

    from conveyor.contrib.django.admin import JobAdmin

    @admin.action(description="Log the selected ids", permissions=["view"])
    def log_ids(modeladmin, request, selected):
        logger.info("jobs %s", selected.ids)

    JobAdmin.actions = (*JobAdmin.actions, log_ids)
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.http import urlencode
from django.utils.module_loading import import_string

from conveyor import rowtext
from conveyor.backends.base import Backend, JobRecord
from conveyor.contrib.django import admin_views as store
from conveyor.contrib.django.backend import ConveyorBackend, backend_for
from conveyor.contrib.django.models import Job
from conveyor.errors import ConveyorError
from conveyor.redaction import redacted
from conveyor.secrets import mask_payload
from conveyor.states import JobState

#: Characters of a job's arguments shown in the list (the job page shows them whole).
ARGS_PREVIEW = 80


@dataclasses.dataclass(frozen=True, slots=True)
class Selected:
    """What an action of :class:`JobAdmin` acts on: the ids chosen in one store."""

    alias: str  # the TASKS entry whose store holds them
    backend: Backend
    ids: list[str]


def conveyor_aliases() -> list[str]:
    """The ``TASKS`` entries that are a ``ConveyorBackend`` (each is a store to browse)."""
    found = []
    for alias, conf in getattr(settings, "TASKS", {}).items():
        try:
            cls = import_string(str(conf.get("BACKEND", "")))
        except ImportError:
            continue
        if isinstance(cls, type) and issubclass(cls, ConveyorBackend):
            found.append(alias)
    return found


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):  # type: ignore[misc]  # Django is untyped (Any)
    """Conveyor's jobs in the admin (see the module docstring)."""

    actions = ("retry_jobs", "cancel_jobs")
    list_per_page = 50
    list_template = "conveyor/admin/job_list.html"
    detail_template = "conveyor/admin/job_detail.html"

    # -- permissions: view (conveyor.view_job) and act (conveyor.change_job) -------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # jobs are enqueued by code, not typed in

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # retention and `conveyor purge` remove jobs

    # -- actions ---------------------------------------------------------------------------

    @admin.action(description="Retry selected jobs (dead, cancelled)", permissions=["change"])  # type: ignore[untyped-decorator]
    def retry_jobs(self, request: HttpRequest, selected: Selected) -> None:
        done = store.retry(selected.backend, selected.ids)
        self._report(request, selected, done, "Retried", "retry")

    @admin.action(description="Cancel selected jobs (not finished yet)", permissions=["change"])  # type: ignore[untyped-decorator]
    def cancel_jobs(self, request: HttpRequest, selected: Selected) -> None:
        done = store.cancel(selected.backend, selected.ids)
        self._report(request, selected, done, "Cancelled", "cancel")

    def _report(
        self, request: HttpRequest, selected: Selected, done: list[str], verb: str, action: str
    ) -> None:
        for job_id in done:  # the admin's history ("Recent actions") records each job
            self.log_change(request, Job(id=job_id), f"{verb} (store {selected.alias!r})")
        text = f"{verb} {len(done)} of {len(selected.ids)} selected job(s)."
        if len(done) < len(selected.ids):
            states = ", ".join(sorted(s.value for s in store.ACTION_STATES[action]))
            text += f" {action.capitalize()} applies to {states} jobs only."
        self.message_user(request, text, messages.SUCCESS if done else messages.WARNING)

    def _offered(self, request: HttpRequest) -> dict[str, tuple[Any, str]]:
        """This admin's actions the user may run: name -> (function, description).
        Django's ``get_actions`` filters them by their ``permissions``; actions added
        site-wide (``AdminSite.add_action``) expect a QuerySet and are left out."""
        offered = {}
        for name, action in self.get_actions(request).items():
            if isinstance(action, tuple):  # Django 6.0: (function, name, description)
                func, _, description = action
            else:  # Django >= 6.1: an Action
                func, description = action.func, action.description
            if name in self._own_actions():
                offered[name] = (func, str(description))
        return offered

    def _own_actions(self) -> set[str]:
        return {a if isinstance(a, str) else a.__name__ for a in self.actions or ()}

    # -- URLs: the list and one job's page (no add, delete or history) ---------------------

    def get_urls(self) -> list[Any]:
        name = f"{self.opts.app_label}_{self.opts.model_name}"  # conveyor_job
        view = self.admin_site.admin_view  # staff only, CSRF-protected, never cached
        return [
            path("", view(self.changelist_view), name=f"{name}_changelist"),
            path("<path:object_id>/change/", view(self.change_view), name=f"{name}_change"),
        ]

    # -- the list ----------------------------------------------------------------------------

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        alias, aliases = self._alias(request)
        app = backend_for(alias).app
        if request.method == "POST":
            return self._run_action(request, alias, app.backend)
        query = store.JobsQuery.from_params(request.GET)
        after = request.GET.get("after") or None
        offered = self._offered(request)
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "title": "Jobs",
            "subtitle": None,
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "alias": alias,
            "store": redacted(app.url),
            "query": query,
            "actions": [(name, description) for name, (_, description) in offered.items()],
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "rows": [],
            "error": None,
        }
        base = {**query.to_params(), **self._alias_param(alias, aliases)}
        try:
            backend = app.backend  # opened at the first request
            page = store.job_page(backend, query, after_id=after, limit=self.list_per_page)
            total = store.job_count(backend, query)
            queues = {s.queue for s in backend.queue_stats()}
        except (ConveyorError, OSError) as exc:  # the store is unusable: say so, in the page
            context["error"] = f"The store {context['store']} cannot be read: {exc}"
            return TemplateResponse(request, self.list_template, context)
        context.update(
            rows=[self._row(job, alias, aliases) for job in page.jobs],
            total=total,
            filters=self._filters(query, base, alias, aliases, queues),
            has_active_filters=bool(query.to_params()),
            clear_all_url=_link(self._alias_param(alias, aliases)),
            hidden_params=[(k, v) for k, v in base.items() if k != "task"],
            next_url=_link({**base, "after": page.next_after}) if page.next_after else None,
            first_url=_link(base) if after else None,
            **(extra_context or {}),
        )
        return TemplateResponse(request, self.list_template, context)

    def _run_action(self, request: HttpRequest, alias: str, backend: Backend) -> HttpResponse:
        name = request.POST.get("action", "")
        offered = self._offered(request)
        if name not in offered:
            if name in self._own_actions():  # one of ours, withheld: no change permission
                raise PermissionDenied
            self.message_user(request, "No action selected.", messages.WARNING)
            return HttpResponseRedirect(request.get_full_path())
        ids = list(dict.fromkeys(request.POST.getlist(ACTION_CHECKBOX_NAME)))
        if not ids:
            self.message_user(
                request,
                "Items must be selected in order to perform actions on them. "
                "No items have been changed.",
                messages.WARNING,
            )
            return HttpResponseRedirect(request.get_full_path())
        func = offered[name][0]
        response = func(self, request, Selected(alias, backend, ids))
        if isinstance(response, HttpResponse):
            return response
        return HttpResponseRedirect(request.get_full_path())

    def _row(self, job: JobRecord, alias: str, aliases: list[str]) -> dict[str, Any]:
        return {
            "id": job.id,
            "url": self._job_url(job.id, alias, aliases),
            "task": job.task,
            "task_url": _link({"task": job.task, **self._alias_param(alias, aliases)}),
            "queue": job.queue,
            "state": job.state.value if job.stored_state is None else f"{job.stored_state}?",
            "attempt": job.attempt,
            "max_attempts": job.max_attempts,
            "created": store.when(job.created_at),
            "finished": store.when(job.finished_at),
            "args": rowtext.preview(mask_payload(job.payload), ARGS_PREVIEW),
        }

    def _filters(
        self,
        query: store.JobsQuery,
        base: dict[str, str],
        alias: str,
        aliases: list[str],
        queues: set[str],
    ) -> list[dict[str, Any]]:
        """The sidebar's filters, as Django's ``admin/filter.html`` lays them out."""

        def choices(key: str, current: str | None, values: list[str]) -> list[dict[str, Any]]:
            rest = {k: v for k, v in base.items() if k != key}
            return [
                {"display": "All", "query_string": _link(rest), "selected": current is None}
            ] + [
                {
                    "display": v,
                    "query_string": _link({**rest, key: v}),
                    "selected": v == current,
                }
                for v in values
            ]

        found = [
            {
                "title": "state",
                "choices": choices(
                    "state", query.state and query.state.value, [s.value for s in JobState]
                ),
            },
            {
                "title": "queue",
                "choices": choices(
                    "queue", query.queue, sorted(queues | ({query.queue} if query.queue else set()))
                ),
            },
        ]
        if query.task is not None:  # a task is picked from a row or typed in the box
            found.append({"title": "task", "choices": choices("task", query.task, [query.task])})
        if len(aliases) > 1:  # a store per TASKS entry: pick one (the filters start over)
            found.insert(
                0,
                {
                    "title": "backend",
                    "choices": [
                        {
                            "display": a,
                            "query_string": _link({"backend": a}),
                            "selected": a == alias,
                        }
                        for a in aliases
                    ],
                },
            )
        return found

    # -- one job ----------------------------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        alias, aliases = self._alias(request)
        backend = backend_for(alias).app.backend
        job_id = unquote(object_id)
        if request.method == "POST":
            name = request.POST.get("action", "")
            offered = self._offered(request)
            if name not in offered:
                if name in self._own_actions():
                    raise PermissionDenied  # no conveyor.change_job
                self.message_user(request, "No such action.", messages.WARNING)
            else:
                offered[name][0](self, request, Selected(alias, backend, [job_id]))
            return HttpResponseRedirect(request.get_full_path())
        found = backend.job_get_many([job_id])
        if not found:  # as Django's admin does for a missing object
            self.message_user(
                request,
                f"No job with id {job_id!r} in store {alias!r}: never enqueued, or "
                "deleted by retention.",
                messages.WARNING,
            )
            return HttpResponseRedirect(self._list_url(alias, aliases))
        job = found[0]
        offered = self._offered(request)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Job {job.id}",
            "subtitle": None,
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "alias": alias,
            "store": redacted(backend_for(alias).app.url),
            "job": job,
            "fields": _fields(job),
            "arguments": store.arguments(job.payload),
            "payload": rowtext.preview(mask_payload(job.payload), store.SHOW_CHARS),
            "result": store.shown(job.result),
            "error": store.error_of(job.error),
            "attempts": store.attempt_rows(backend.job_attempts(job.id)),
            "logs": store.job_logs(backend, job.id),
            "list_url": self._list_url(alias, aliases),
            "actions": [
                (name, _BUTTONS.get(name, description))
                for name, (_, description) in offered.items()
                if name not in _BUILT_IN or job.state in store.ACTION_STATES[_BUILT_IN[name]]
            ],
            **(extra_context or {}),
        }
        return TemplateResponse(request, self.detail_template, context)

    # -- helpers ----------------------------------------------------------------------------

    def _alias(self, request: HttpRequest) -> tuple[str, list[str]]:
        """The TASKS entry whose store is shown (``?backend=``; default: "default", or
        the first ConveyorBackend) and every ConveyorBackend entry."""
        aliases = conveyor_aliases()
        if not aliases:
            raise Http404("no TASKS entry is a conveyor.contrib.django.ConveyorBackend")
        asked = request.GET.get("backend")
        if asked is None:
            return ("default" if "default" in aliases else aliases[0]), aliases
        if asked not in aliases:
            raise Http404(f"no ConveyorBackend TASKS entry {asked!r}")
        return asked, aliases

    def _alias_param(self, alias: str, aliases: list[str]) -> dict[str, str]:
        default = "default" if "default" in aliases else aliases[0]
        return {} if alias == default else {"backend": alias}

    def _list_url(self, alias: str, aliases: list[str]) -> str:
        url: str = reverse("admin:conveyor_job_changelist", current_app=self.admin_site.name)
        return url + _suffix(self._alias_param(alias, aliases))

    def _job_url(self, job_id: str, alias: str, aliases: list[str]) -> str:
        url: str = reverse(
            "admin:conveyor_job_change", args=[quote(job_id)], current_app=self.admin_site.name
        )
        return url + _suffix(self._alias_param(alias, aliases))


#: The actions whose states the job page knows (a project's own are always offered there).
_BUILT_IN = {"retry_jobs": "retry", "cancel_jobs": "cancel"}
#: Their buttons on a job's page (a project's own action shows its description).
_BUTTONS = {"retry_jobs": "Retry", "cancel_jobs": "Cancel"}


def _link(params: dict[str, Any]) -> str:
    """``?a=1&b=2`` (``?`` alone for no parameters: the unfiltered page)."""
    return "?" + str(urlencode({k: v for k, v in params.items() if v is not None}))


def _suffix(params: dict[str, Any]) -> str:
    """``?a=1`` for a URL that needs parameters, nothing for one that does not."""
    return _link(params) if params else ""


def _fields(job: JobRecord) -> list[tuple[str, Any, bool]]:
    """The job's record as (label, value, is a time) rows of its page."""
    state = job.state.value if job.stored_state is None else f"{job.stored_state} (unknown)"
    rows: list[tuple[str, Any]] = [
        ("Task", job.task),
        ("Queue", job.queue),
        ("State", state),
        ("Reason", job.reason),
        ("Attempt", f"{job.attempt} of {job.max_attempts}"),
        ("Priority", job.priority),
        ("Created", store.when(job.created_at)),
        ("Runs at", store.when(job.run_at)),
        ("Started", store.when(job.started_at)),
        ("Finished", store.when(job.finished_at)),
        ("Worker", job.worker_id),
        ("Cancel requested", "yes" if job.cancel_requested else None),
        (
            "Progress",
            None if job.progress is None else f"{job.progress:.0%} {job.progress_message or ''}",
        ),
        ("Unique key", job.unique_key),
        ("Expires", store.when(job.expires_at)),
        ("Timeout", None if job.timeout is None else f"{job.timeout:g}s"),
    ]
    rows += [("Problem", p) for p in job.problems]
    return [
        (label, value, isinstance(value, datetime.datetime))
        for label, value in rows
        if value not in (None, "")
    ]
