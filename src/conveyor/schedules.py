"""What an operator sees of the periodic schedules and how they steer them, shared by
``conveyor schedules`` and the dashboard's ``/schedules``.

A schedule is known to the store once a worker fired or planned it (``periodic_list``);
each view adds the state of its last job (one ``job_get_many`` for all). The actions
(pause, resume, run now) are stored, so every worker obeys them at its next scheduler
tick (:mod:`conveyor.worker.services.scheduler`): a paused schedule's slots are skipped
(and not caught up after a resume), and a run now is enqueued once by one worker.

Example:
    >>> from conveyor.backends.memory.backend import MemoryBackend
    >>> from conveyor.backends.base import PeriodicFireParams
    >>> b = MemoryBackend("memory://")
    >>> _ = b.periodic_fire(PeriodicFireParams("nightly", "every 60s", [], 60.0))
    >>> steer(b, "nightly", "pause"), [(v.name, v.paused) for v in schedule_views(b)]
    (True, [('nightly', True)])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conveyor.backends.base import (
    Backend,
    PeriodicPauseParams,
    PeriodicResumeParams,
    PeriodicRunParams,
)

#: The actions on one schedule, and the action log's name of each.
ACTIONS = {"pause": "schedule_pause", "resume": "schedule_resume", "run": "schedule_run"}


@dataclass(frozen=True)
class ScheduleView:
    """One schedule as the CLI and the dashboard show it (times: epoch seconds)."""

    name: str
    spec: str
    paused: bool
    #: the next slot a worker planned (None: not planned); paused: it will be skipped
    next_slot: float | None
    last_fired_at: float | None
    last_job_id: str | None
    #: the last job's state (None: no job yet, or deleted since)
    last_job_state: str | None
    #: a "run now" asked and not yet enqueued by a worker
    run_requested_at: float | None

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "spec": self.spec,
            "paused": self.paused,
            "next_fire": self.next_slot,
            "last_fired_at": self.last_fired_at,
            "last_job_id": self.last_job_id,
            "last_job_state": self.last_job_state,
            "run_requested_at": self.run_requested_at,
        }


def schedule_views(backend: Backend) -> list[ScheduleView]:
    """Every schedule the store knows, by name (empty without feature ``periodic``)."""
    if "periodic" not in backend.features:
        return []
    records = backend.periodic_list()
    ids = [r.last_job_id for r in records if r.last_job_id]
    states = {j.id: j.state.value for j in backend.job_get_many(ids)} if ids else {}
    return [
        ScheduleView(
            r.name,
            r.spec,
            r.paused,
            r.next_slot,
            r.last_fired_at,
            r.last_job_id,
            states.get(r.last_job_id) if r.last_job_id else None,
            r.run_requested_at,
        )
        for r in records
    ]


def steer(backend: Backend, name: str, action: str) -> bool:
    """Apply ``action`` (a key of :data:`ACTIONS`) to schedule ``name``; False if the
    store knows no schedule of that name (nothing is written then)."""
    if action == "pause":
        return backend.periodic_pause(PeriodicPauseParams(name))
    if action == "resume":
        return backend.periodic_resume(PeriodicResumeParams(name))
    if action == "run":
        return backend.periodic_run_request(PeriodicRunParams(name))
    raise ValueError(f"unknown schedule action {action!r}; expected one of {sorted(ACTIONS)}")


def unknown_schedule(name: str, views: Sequence[ScheduleView]) -> str:
    """The one-line refusal for a name the store does not know.

    >>> unknown_schedule("nigthly", [])
    "no schedule named 'nigthly' (none known yet: a worker records each at its start)"
    """
    known = ", ".join(v.name for v in views)
    listed = (
        f"; known: {known}" if known else " (none known yet: a worker records each at its start)"
    )
    return f"no schedule named {name!r}{listed}"
