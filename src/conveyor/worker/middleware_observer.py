"""The worker-side middleware hooks, fed by the worker's observer calls.

One observer on every worker (next to the event log) turns the internal events into the
public hooks of ``conveyor/middleware.py``: a claim into ``on_start``, a decided finish
into ``on_finish`` then ``on_retry`` or ``on_dead``, a rescue into ``on_rescue``. It reads
the app's middleware lists at each call, so middleware added after the worker was built
(``WorkerMetrics``) is called too; with none registered a call is one truthiness test.

Example::

    worker.observers  # [EventLog(...), MiddlewareObserver(app)]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from conveyor.backends.base import ClaimedJob, JobFinishParams, RescueResult
from conveyor.context import context_of
from conveyor.middleware import Attempt, RescuedJob
from conveyor.states import FinishKind
from conveyor.worker.observers import BaseObserver
from conveyor.worker.outcome import RemoteError

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.outcome import Outcome


class MiddlewareObserver(BaseObserver):
    """Calls the app's middlewares' worker-side hooks."""

    def __init__(self, app: App) -> None:
        self.middleware = app.middleware

    def on_claimed(self, jobs: Sequence[ClaimedJob]) -> None:
        mw = self.middleware
        if mw.start:
            for job in jobs:
                mw.call(mw.start, context_of(job))

    def on_finished(
        self, job: ClaimedJob, params: JobFinishParams, outcome: Outcome | None = None
    ) -> None:
        mw = self.middleware
        if not (mw.finish or mw.retry or mw.dead):
            return
        ctx = context_of(job)
        error = _error_of(params, outcome)
        if mw.finish:
            attempt = Attempt(
                str(params.kind), params.started_at, params.finished_at, error, params.reason
            )
            mw.call(mw.finish, ctx, attempt)
        if params.kind is FinishKind.RETRY and mw.retry:
            mw.call(mw.retry, ctx, error or RemoteError("Error", params.reason or ""))
        elif params.kind is FinishKind.DEAD and mw.dead:
            mw.call(mw.dead, ctx, error)

    def on_rescued(self, results: Sequence[RescueResult]) -> None:
        mw = self.middleware
        if mw.rescue:
            for r in results:
                mw.call(mw.rescue, RescuedJob(r.job_id, r.worker_id, str(r.state)))


def _error_of(params: JobFinishParams, outcome: Outcome | None) -> BaseException | None:
    """The attempt's exception: the pool's own where it has one, else rebuilt from the
    stored error JSON (type name and message)."""
    if outcome is not None and outcome.error is not None:
        return outcome.error
    if params.error is None:
        return None
    try:
        data = json.loads(params.error)
        return RemoteError(str(data.get("type", "Error")), str(data.get("message", "")))
    except (ValueError, AttributeError):
        return RemoteError("Error", params.error)
