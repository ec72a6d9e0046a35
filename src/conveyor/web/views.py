"""Request handlers: read the backend (in a thread), render a page, or act and redirect.

Backend calls are blocking (SQLite, redis-py), so each handler runs them through
``run_in_threadpool`` and the event loop stays free for other requests. Actions answer
with 303 redirects (post/redirect/get), so a reload never repeats them.

Example (what every action looks like)::

    async def job_action(request):
        state = dashboard(request)
        await run_in_threadpool(apply_action, state.backend, "retry", [job_id])
        return RedirectResponse(f"/jobs/{job_id}?flash=retried", status_code=303)

``flash`` is never shown as given: it is a code of :data:`FLASH` (or a bulk result, an
action and two counts), and the page shows the server's own text for it; anything else
shows nothing, so a crafted link cannot put words on the dashboard.
"""

from __future__ import annotations

import dataclasses
import re
import time
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from conveyor.backends.base import (
    OPERATOR_COUNT_CAP,
    OPERATOR_EXACT_UP_TO,
    ActionLogListParams,
    ActionLogRecord,
    JobFilter,
    QueueStatsParams,
)
from conveyor.backends.records import by_backlog
from conveyor.redaction import redacted
from conveyor.schedules import ACTIONS as SCHEDULE_ACTIONS
from conveyor.schedules import schedule_views, steer
from conveyor.secrets import mask_payload, secret_where_error
from conveyor.web import pages
from conveyor.web.action_log_page import PAGE, action_log_page, dashboard_entry, keep
from conveyor.web.assets import CSS, JS
from conveyor.web.bulk_count import count_confirmed, matching_count
from conveyor.web.durations_section import durations_section
from conveyor.web.html import esc, layout
from conveyor.web.limits_page import FLASH as LIMITS_FLASH
from conveyor.web.query import (
    ACTION_STATES,
    JobQuery,
    Sort,
    action_states,
    apply_action,
    job_logs,
    job_steps,
    matching_ids,
    set_paused,
)
from conveyor.web.queues_page import QUEUE_CHOICES, queues_page, stats_and_paused
from conveyor.web.schedules_page import DONE as SCHEDULE_DONE
from conveyor.web.schedules_page import FLASH as SCHEDULE_FLASH
from conveyor.web.schedules_page import schedules_page
from conveyor.web.security import LOCAL, form_fields
from conveyor.web.sorting import page_in_order
from conveyor.web.state import DashboardState
from conveyor.web.tokens import DashboardToken

MAX_PAGE = 500

#: Flash codes an action redirects with, and the text each shows (nothing else is shown).
FLASH = {
    "retried": "Job retried.",
    "cancelled": "Job cancelled.",
    "deleted": "Job deleted.",
    "not-retried": "The job was not retried (its state changed?).",
    "not-cancelled": "The job was not cancelled (its state changed?).",
    "not-deleted": "The job was not deleted (its state changed?).",
    "paused": "Queue paused.",
    "resumed": "Queue resumed.",
    **SCHEDULE_FLASH,
    **LIMITS_FLASH,
}
#: A bulk result: ``retry-3-of-5`` shows "Retry: 3 of 5 matching jobs changed."
_BULK_FLASH = re.compile(r"(retry|cancel|delete)-(\d{1,9})-of-(\d{1,9})")


def flash_text(code: str | None) -> str | None:
    """The text for a flash code; None for a missing or unknown one (never the code).

    Example:
        >>> flash_text("retried"), flash_text("delete-2-of-3"), flash_text("<b>hi</b>")
        ('Job retried.', 'Delete: 2 of 3 matching jobs changed.', None)
    """
    if not code:
        return None
    if code in FLASH:
        return FLASH[code]
    bulk = _BULK_FLASH.fullmatch(code)
    if bulk is None:
        return None
    action, done, total = bulk.groups()
    return f"{pages.ACTION_LABELS[action]}: {int(done)} of {int(total)} matching jobs changed."


def dashboard(request: Request) -> DashboardState:
    state: DashboardState = request.app.state.dashboard
    return state


def _render(
    request: Request,
    title: str,
    body: str,
    *,
    active: str,
    refresh: bool = False,
    status_code: int = 200,
) -> HTMLResponse:
    flash = flash_text(request.query_params.get("flash"))
    user = request.state.user
    page = layout(
        title,
        body,
        active=active,
        store=redacted(dashboard(request).backend.url),
        refresh=refresh,
        flash=flash,
        user=None if user is LOCAL else f"{user.name} ({user.role})",
    )
    return HTMLResponse(page, status_code=status_code)


def _csrf(request: Request) -> str:
    csrf: str = request.state.csrf
    return csrf


#: for the handlers of other modules (limits_views.py)
render, csrf_of = _render, _csrf


async def overview(request: Request) -> Response:
    state = dashboard(request)
    backend = state.backend
    stats, paused = await run_in_threadpool(stats_and_paused, backend)
    workers = await run_in_threadpool(backend.worker_list)
    now = time.time()
    history = await run_in_threadpool(state.history.read, backend, now)
    found, jobs = await run_in_threadpool(state.durations.read, backend, now)
    body = pages.overview_page(
        stats,
        history,
        workers=len(workers),
        paused=paused,
        csrf=_csrf(request),
        durations=durations_section(found, jobs),
    )
    return _render(request, "Overview", body, active="/", refresh=True)


async def queues(request: Request) -> Response:
    """``GET /queues[?page=N]``: every queue, a page at a time, largest backlog first."""
    state = dashboard(request)
    stats, paused = await run_in_threadpool(stats_and_paused, state.backend)
    history = await run_in_threadpool(state.history.read, state.backend, time.time())
    page = _int(request.query_params.get("page"), 1, 1, 10**9)
    body = queues_page(stats, history, page=page, paused=paused, csrf=_csrf(request))
    return _render(request, "Queues", body, active="/queues", refresh=True)


async def jobs(request: Request) -> Response:
    state = dashboard(request)
    params = request.query_params
    query = JobQuery.from_params(params)
    sort = Sort.from_params(params)
    after = params.get("after") or None  # creation order, or an indexed sort's cursor
    offset = 0 if sort.by_id else _int(params.get("offset"), 0, 0, 10**9)
    limit = _int(params.get("limit"), state.page_size, 1, MAX_PAGE)
    # a where on a secret argument is refused (its stored value is ciphertext)
    refused = await run_in_threadpool(
        secret_where_error,
        state.backend,
        JobFilter(queue=query.queue, task=query.task, where=query.conditions()),
    )
    if refused:
        query = dataclasses.replace(query, where=None)
    found = await run_in_threadpool(
        page_in_order, state.backend, query, sort, after_id=after, offset=offset, limit=limit
    )
    # only names, by backlog: the capped counts order them well enough
    capped = QueueStatsParams(cap=OPERATOR_COUNT_CAP, exact_up_to=OPERATOR_EXACT_UP_TO)
    stats = await run_in_threadpool(state.backend.queue_stats, capped)
    body = pages.jobs_page(
        query,
        found,
        sort=sort,
        # the largest backlogs: a select of 10,000 queues would be most of the page
        queues=[s.queue for s in by_backlog(stats)[:QUEUE_CHOICES]],
        paged=bool(after or offset),
        limit=limit,
        actions=_may_act(request),
    )
    if refused:
        body = f'<p class="error">where ignored: {esc(refused)}</p>{body}'
    return _render(request, "Jobs", body, active="/jobs")


async def job_detail(request: Request) -> Response:
    backend = dashboard(request).backend
    job_id = request.path_params["job_id"]
    found = await run_in_threadpool(backend.job_get_many, [job_id])
    if not found:
        return _not_found(request, job_id)
    attempts = await run_in_threadpool(backend.job_attempts, job_id)
    logs = await run_in_threadpool(job_logs, backend, job_id)
    steps = await run_in_threadpool(job_steps, backend, job_id)
    body = pages.job_page(found[0], attempts, logs, _csrf(request), steps)
    return _render(request, f"Job {job_id}", body, active="/jobs")


#: What a job id may look like to be echoed on the "not found" page (ULIDs, and the
#: ids users give); anything else from the address bar is not shown.
_SHOWN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


async def job_payload(request: Request) -> Response:
    """The whole stored payload of one job, as a download (the job page and the jobs
    list show a bounded part of it). Bytes that were not UTF-8 go back as they were."""
    backend = dashboard(request).backend
    job_id = request.path_params["job_id"]
    found = await run_in_threadpool(backend.job_get_many, [job_id])
    if not found:
        return _not_found(request, job_id)
    payload = found[0].payload
    if not _may_act(request):
        # A viewer never gets a secret argument, not even sealed (mask_payload: •••).
        payload = mask_payload(payload) or ""
    body = payload.encode("utf-8", "surrogateescape")
    return Response(
        body,
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{payload_filename(job_id)}"'},
    )


def payload_filename(job_id: str) -> str:
    """A download name for a job's payload that no header can be injected through.

    >>> payload_filename('01J"; x=é')
    'payload-01J___x__.json'
    """
    return (
        "payload-"
        + "".join(c if (c.isascii() and c.isalnum()) or c in "-_." else "_" for c in job_id)
        + ".json"
    )


def _not_found(request: Request, job_id: str) -> Response:
    shown = f" <code>{esc(job_id)}</code>" if _SHOWN_ID.fullmatch(job_id) else ""
    return _render(
        request,
        "Not found",
        f'<h1>No such job{shown}</h1><p><a href="/jobs">Back to jobs</a></p>',
        active="/jobs",
        status_code=404,
    )


async def job_action(request: Request) -> Response:
    """Act on one job, if the action applies to its state (the page offers only those;
    this refuses the rest, so a stale page or a hand-made POST changes nothing)."""
    backend = dashboard(request).backend
    job_id, action = request.path_params["job_id"], request.path_params["action"]
    if action not in ACTION_STATES:
        return PlainTextResponse("unknown action", status_code=404)
    found = await run_in_threadpool(backend.job_get_many, [job_id])
    if not found:
        return _not_found(request, job_id)
    job = found[0]
    verb = {"retry": "retried", "cancel": "cancelled", "delete": "deleted"}[action]  # FLASH codes
    page = f"/jobs/{quote(job_id, safe='')}"
    if job.state not in ACTION_STATES[action]:
        message = f"Job {job_id} is {job.state.value}: {action} does not apply, nothing done."
        body = (
            f'<h1>{esc(message)}</h1><p><a class="btn" href="{esc(page)}">Back to the job</a></p>'
        )
        return _render(request, "Not applicable", body, active="/jobs", status_code=409)
    done = await run_in_threadpool(apply_action, backend, action, [job_id])
    entry = dashboard_entry(request, action, count=done, job_ids=[job_id], detail="by id")
    await run_in_threadpool(keep, backend, entry)
    flash = verb if done else f"not-{verb}"
    target = "/jobs" if action == "delete" and done else page
    return RedirectResponse(f"{target}?{urlencode({'flash': flash})}", status_code=303)


async def bulk_confirm(request: Request) -> Response:
    backend = dashboard(request).backend
    if not _may_act(request):
        # The confirmation is the first step of an action: a viewer is told at once.
        return PlainTextResponse(
            f"403: {request.state.user.name} has a viewer token, which only reads; actions "
            "need an operator token",
            status_code=403,
        )
    action = request.query_params.get("action", "")
    if action not in ACTION_STATES:
        return PlainTextResponse("unknown action", status_code=404)
    query = JobQuery.from_params(request.query_params)
    if not action_states(action, query):
        body = pages.not_applicable_page(action, query)
        return _render(request, "Not applicable", body, active="/jobs", status_code=409)
    count, at_least = await run_in_threadpool(matching_count, backend, query, action)
    body = pages.confirm_page(action, query, count, _csrf(request), at_least=at_least)
    return _render(request, "Confirm", body, active="/jobs")


async def bulk_action(request: Request) -> Response:
    """Act on every job matching the submitted filters (in the states the action applies
    to), if the count is still the one the user confirmed; otherwise show the
    confirmation again with the new count."""
    backend = dashboard(request).backend
    fields = await form_fields(request)
    action = fields.get("action", "")
    if action not in ACTION_STATES:
        return PlainTextResponse("unknown action", status_code=404)
    query = JobQuery.from_params(fields)
    if not action_states(action, query):
        body = pages.not_applicable_page(action, query)
        return _render(request, "Not applicable", body, active="/jobs", status_code=409)
    ids = await run_in_threadpool(matching_ids, backend, query, action)
    if not count_confirmed(fields.get("expected"), len(ids)):
        body = (
            "<p>The number of matching jobs changed since you confirmed.</p>"
            + pages.confirm_page(action, query, len(ids), _csrf(request))
        )
        return _render(request, "Confirm", body, active="/jobs", status_code=409)
    done = await run_in_threadpool(apply_action, backend, action, ids)
    described = " ".join(f"{k}={v}" for k, v in query.to_params().items()) or "all jobs"
    entry = dashboard_entry(
        request,
        action,
        count=done,
        job_ids=ids,
        detail=f"{described}; {done} of {len(ids)} changed",
    )
    await run_in_threadpool(keep, backend, entry)
    flash = f"{action}-{done}-of-{len(ids)}"
    return RedirectResponse(
        f"/jobs?{urlencode({**query.to_params(), 'flash': flash})}", status_code=303
    )


async def queue_action(request: Request) -> Response:
    backend = dashboard(request).backend
    queue, action = request.path_params["queue"], request.path_params["action"]
    if action not in ("pause", "resume"):
        return PlainTextResponse("unknown action", status_code=404)
    await run_in_threadpool(set_paused, backend, queue, action == "pause")
    entry = dashboard_entry(request, f"queue_{action}", count=0, detail=f"queue {queue}")
    await run_in_threadpool(keep, backend, entry)
    flash = "paused" if action == "pause" else "resumed"
    return RedirectResponse(f"/?{urlencode({'flash': flash})}", status_code=303)


async def audit(request: Request) -> Response:
    """``GET /audit[?before=ID]``: one page of the operator actions log."""
    backend = dashboard(request).backend
    kept = "action_log" in backend.features
    entries: list[ActionLogRecord] = []
    if kept:
        params = ActionLogListParams(PAGE, request.query_params.get("before") or None)
        entries = await run_in_threadpool(backend.action_log_list, params)
    next_before = entries[-1].id if len(entries) == PAGE else None
    body = action_log_page(entries, next_before=next_before, kept=kept, store=backend.name)
    return _render(request, "Audit", body, active="/audit")


async def schedules(request: Request) -> Response:
    """``GET /schedules``: every periodic schedule, with actions for an operator."""
    found = await run_in_threadpool(schedule_views, dashboard(request).backend)
    body = schedules_page(found, csrf=_csrf(request), now=time.time())
    return _render(request, "Schedules", body, active="/schedules", refresh=True)


async def schedule_action(request: Request) -> Response:
    """``POST /schedules/{pause|resume|run}`` with the schedule's ``name`` as a field
    (a viewer never gets here: the middleware refuses its POSTs)."""
    backend = dashboard(request).backend
    action = request.path_params["action"]
    if action not in SCHEDULE_ACTIONS:
        return PlainTextResponse("unknown action", status_code=404)
    name = (await form_fields(request)).get("name", "")
    found = "periodic" in backend.features and await run_in_threadpool(steer, backend, name, action)
    if found:
        entry = dashboard_entry(
            request, SCHEDULE_ACTIONS[action], count=0, detail=f"schedule {name}"
        )
        await run_in_threadpool(keep, backend, entry)
    flash = SCHEDULE_DONE[action] if found else "schedule-unknown"
    return RedirectResponse(f"/schedules?{urlencode({'flash': flash})}", status_code=303)


def _may_act(request: Request) -> bool:
    """The request's token may act (an operator, or no token on loopback)."""
    user: DashboardToken = request.state.user
    return user.may_act


async def workers(request: Request) -> Response:
    state = dashboard(request)
    found = await run_in_threadpool(state.backend.worker_list)
    body = pages.workers_page(found, now=time.time(), ttl=state.conveyor_app.settings.heartbeat_ttl)
    return _render(request, "Workers", body, active="/workers", refresh=True)


async def stylesheet(request: Request) -> Response:
    return Response(CSS, media_type="text/css", headers={"Cache-Control": "max-age=300"})


async def script(request: Request) -> Response:
    return Response(JS, media_type="text/javascript", headers={"Cache-Control": "max-age=300"})


def _int(text: str | None, default: int, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(text))) if text else default
    except ValueError:
        return default
