"""``create_app``: the dashboard as a Starlette application, one instance per call.

Example:
    >>> import conveyor
    >>> from conveyor.web import create_app
    >>> web = create_app(conveyor.App("sqlite:///:memory:"))
    >>> type(web).__name__
    'Starlette'

Serve it with any ASGI server (``uvicorn.run(web, host="127.0.0.1")``), or use
``conveyor dashboard --url URL``, which also refuses non-loopback binds without a token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from conveyor.app import App
from conveyor.web import limits_views, search_suggest, views
from conveyor.web.security import Guard, SecurityMiddleware
from conveyor.web.state import DashboardState
from conveyor.web.throughput import ThroughputHistory
from conveyor.web.tokens import OPERATOR, DashboardToken


def create_app(
    conveyor_app_or_url: App | str,
    *,
    token: str | None = None,
    tokens: Sequence[DashboardToken] = (),
    page_size: int = 50,
    history_minutes: int = 60,
) -> Starlette:
    """Build a dashboard for an app (or a store URL; then the dashboard owns and closes it).

    ``token``: when set, every request must carry it (see :mod:`conveyor.web.security`);
    an operator named ``token``. ``tokens``: several, each with a name and a role
    (:mod:`conveyor.web.tokens`); give one or the other.
    ``history_minutes``: how far back the throughput chart reads the store (by minute).
    """
    owns = isinstance(conveyor_app_or_url, str)
    conveyor_app = (
        App(conveyor_app_or_url) if isinstance(conveyor_app_or_url, str) else conveyor_app_or_url
    )
    if token is not None and tokens:
        raise ValueError("give token or tokens, not both")
    guard = Guard(tokens or ([DashboardToken("token", OPERATOR, token)] if token else []))
    state = DashboardState(
        conveyor_app=conveyor_app,
        guard=guard,
        history=ThroughputHistory(minutes=history_minutes, background=True),
        owns_app=owns,
        page_size=page_size,
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with state.running():
            yield

    routes = [
        Route("/", views.overview),
        Route("/jobs", views.jobs),
        Route("/jobs/bulk", views.bulk_confirm, methods=["GET"]),
        Route("/jobs/bulk", views.bulk_action, methods=["POST"]),
        Route("/jobs/{job_id}", views.job_detail),
        Route("/jobs/{job_id}/payload", views.job_payload),
        Route("/jobs/{job_id}/{action}", views.job_action, methods=["POST"]),
        Route("/queues", views.queues),
        Route("/queues/{queue}/{action}", views.queue_action, methods=["POST"]),
        Route("/workers", views.workers),
        Route("/schedules", views.schedules),
        Route("/schedules/{action}", views.schedule_action, methods=["POST"]),
        Route("/limits", limits_views.limits),
        Route("/limits/{action}", limits_views.limit_action, methods=["POST"]),
        Route("/audit", views.audit),
        Route("/api/search/suggest", search_suggest.suggest_view),
        Route("/static/dashboard.css", views.stylesheet),
        Route("/static/dashboard.js", views.script),
    ]
    web = Starlette(
        routes=routes, middleware=[Middleware(SecurityMiddleware, guard=guard)], lifespan=lifespan
    )
    web.state.dashboard = state
    return web
