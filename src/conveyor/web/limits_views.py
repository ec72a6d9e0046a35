"""Request handlers of the ``/limits`` page (:mod:`conveyor.web.limits_page`): read
the store in a thread, render; act (set / reset an override, release a held job),
keep the action in the operator actions log, and redirect (post/redirect/get). A
viewer never reaches the actions: the middleware refuses its POSTs.

Example::

    Route("/limits", limits), Route("/limits/{action}", limit_action, methods=["POST"])
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from conveyor.backends.base import (
    Backend,
    JobListParams,
    JobRecord,
    LimitOverrideParams,
    LimitRecord,
    SequenceReleaseParams,
)
from conveyor.errors import ConfigurationError
from conveyor.limits import parse_rate
from conveyor.rules import is_sequence_blocked
from conveyor.states import JobState
from conveyor.web.action_log_page import dashboard_entry, keep
from conveyor.web.limits_page import limits_page
from conveyor.web.security import form_fields
from conveyor.web.views import csrf_of, dashboard, render

#: waiting jobs read for the blocked sequences (the page shows the held ones among them)
HELD_PAGE = 500


def held_jobs(backend: Backend) -> list[JobRecord]:
    """Jobs held behind a failed job of a blocking sequence (first page of waiting)."""
    if "sequences" not in backend.features:
        return []
    page = backend.job_list(JobListParams(state=JobState.WAITING, limit=HELD_PAGE))
    return [j for j in page if is_sequence_blocked(j.reason)]


def _read(backend: Backend) -> tuple[list[LimitRecord], list[JobRecord]]:
    limits = backend.limit_list() if "limits" in backend.features else []
    return limits, held_jobs(backend)


async def limits(request: Request) -> Response:
    """``GET /limits``: the limit keys and the blocked sequences."""
    found, held = await run_in_threadpool(_read, dashboard(request).backend)
    body = limits_page(found, held, csrf=csrf_of(request))
    return render(request, "Limits", body, active="/limits", refresh=True)


def _values(fields: dict[str, str]) -> tuple[int | None, int | None, float | None] | None:
    """The override a set form asks for; None if it gives nothing valid."""
    concurrency, rate = fields.get("concurrency", "").strip(), fields.get("rate", "").strip()
    if not concurrency and not rate:
        return None
    try:
        c = int(concurrency) if concurrency else None
        count, period = parse_rate(rate) if rate else (None, None)
    except (ValueError, ConfigurationError):
        return None
    if c is not None and c < 1:
        return None
    return (c, count, period)


def _act(backend: Backend, action: str, fields: dict[str, str]) -> tuple[str, str, int]:
    """Apply one action; (flash code, action log's name and detail, count)."""
    if action == "release":
        job_id = fields.get("id", "")
        done = backend.sequence_release_many(SequenceReleaseParams([job_id]))
        return ("released" if done else "not-released"), f"by id {job_id}", len(done)
    key = fields.get("key", "")
    if key not in {r.key for r in backend.limit_list()}:
        return "limit-unknown", "", 0
    values = None if action == "reset" else _values(fields)
    if action == "set" and values is None:
        return "limit-invalid", "", 0
    backend.limit_override(LimitOverrideParams(key, values))
    return f"limit-{action}", f"limit {key}: {values}", 0


async def limit_action(request: Request) -> Response:
    """``POST /limits/{set|reset|release}``: the key (or job id) as a form field."""
    backend = dashboard(request).backend
    action = request.path_params["action"]
    if action not in ("set", "reset", "release"):
        return PlainTextResponse("unknown action", status_code=404)
    fields = await form_fields(request)
    flash, detail, count = await run_in_threadpool(_act, backend, action, fields)
    if detail:  # kept as the CLI keeps its own (limit_set, limit_reset, release)
        name = "release" if action == "release" else f"limit_{action}"
        ids = [fields.get("id", "")] if action == "release" and count else []
        entry = dashboard_entry(request, name, count=count, job_ids=ids, detail=detail)
        await run_in_threadpool(keep, backend, entry)
    return RedirectResponse(f"/limits?{urlencode({'flash': flash})}", status_code=303)
