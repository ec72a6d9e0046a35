"""What one dashboard instance holds: its conveyor app, secrets and throughput samples.

Stored on ``starlette_app.state.dashboard`` by :func:`conveyor.web.create_app`; two
dashboards in one process share nothing (no module globals).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator

from conveyor.app import App
from conveyor.backends.base import Backend
from conveyor.web.sampler import Sample, SampleRing
from conveyor.web.security import Guard

log = logging.getLogger("conveyor.web")


@dataclasses.dataclass
class DashboardState:
    conveyor_app: App
    guard: Guard
    ring: SampleRing
    owns_app: bool  # opened from a URL by create_app, so closed on shutdown
    sample_interval: float
    page_size: int

    @property
    def backend(self) -> Backend:
        return self.conveyor_app.backend

    def sample(self) -> None:
        self.ring.add(Sample.from_stats(time.time(), self.backend.queue_stats()))

    async def sample_forever(self) -> None:
        """Sample every ``sample_interval`` seconds until cancelled; errors are logged
        and sampling goes on (a locked or restarting store must not kill the loop)."""
        while True:
            try:
                await asyncio.to_thread(self.sample)
            except Exception:
                log.exception("dashboard: sampling queue stats failed")
            await asyncio.sleep(self.sample_interval)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self.sample_forever(), name="conveyor-dashboard-sampler")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if self.owns_app:
                self.conveyor_app.close()
