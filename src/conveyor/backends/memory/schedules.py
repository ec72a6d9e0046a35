"""Steering periodic schedules on the memory store: pause, resume, "run now".

A mixin of :class:`~conveyor.backends.memory.backend.MemoryBackend` (feature
``periodic``): flags on the store's ``Schedule`` entries, obeyed by its
``periodic_fire`` under the same lock (see :mod:`conveyor.backends.sql.schedules`, the
SQL stores' twin).

Example:
    >>> from conveyor.backends.memory.backend import MemoryBackend
    >>> from conveyor.backends.base import PeriodicFireParams, PeriodicPauseParams
    >>> b = MemoryBackend("memory://")
    >>> b.periodic_pause(PeriodicPauseParams("nightly"))  # no worker planned it yet
    False
    >>> _ = b.periodic_fire(PeriodicFireParams("nightly", "every 60s", [], 60.0))
    >>> b.periodic_pause(PeriodicPauseParams("nightly")), b.periodic_list()[0].paused
    (True, True)
"""

from __future__ import annotations

import time

from conveyor.backends.base import PeriodicPauseParams, PeriodicResumeParams, PeriodicRunParams
from conveyor.backends.memory.store import MemoryStore


class MemorySchedules:
    """``periodic_pause``, ``periodic_resume`` and ``periodic_run_request``."""

    store: MemoryStore

    def periodic_pause(self, params: PeriodicPauseParams) -> bool:
        return self._schedule_set_paused(params.name, True)

    def periodic_resume(self, params: PeriodicResumeParams) -> bool:
        return self._schedule_set_paused(params.name, False)

    def periodic_run_request(self, params: PeriodicRunParams) -> bool:
        with self.store.lock:
            schedule = self.store.schedules.get(params.name)
            if schedule is None:
                return False
            if schedule.run_requested_at is None:  # a second request is the same run
                schedule.run_requested_at = time.time()
            return True

    def _schedule_set_paused(self, name: str, paused: bool) -> bool:
        with self.store.lock:
            schedule = self.store.schedules.get(name)
            if schedule is not None:
                schedule.paused = paused
            return schedule is not None
