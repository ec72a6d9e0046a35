"""What one dashboard instance holds: its conveyor app, secrets, throughput and
durations caches.

Stored on ``starlette_app.state.dashboard`` by :func:`conveyor.web.create_app`; two
dashboards in one process share nothing (no module globals).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator

from conveyor.app import App
from conveyor.backends.base import Backend
from conveyor.web.durations_section import RecentDurations
from conveyor.web.security import Guard
from conveyor.web.throughput import ThroughputHistory


@dataclasses.dataclass
class DashboardState:
    conveyor_app: App
    guard: Guard
    history: ThroughputHistory
    owns_app: bool  # opened from a URL by create_app, so closed on shutdown
    page_size: int
    # re-read off the request path after the first (durations_section.py)
    durations: RecentDurations = dataclasses.field(
        default_factory=lambda: RecentDurations(background=True)
    )

    @property
    def backend(self) -> Backend:
        return self.conveyor_app.backend

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self.owns_app:
                self.conveyor_app.close()
