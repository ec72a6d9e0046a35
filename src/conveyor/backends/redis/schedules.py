"""Steering periodic schedules on Redis: pause, resume, "run now".

A mixin of :class:`~conveyor.backends.redis.backend.RedisBackend` (feature
``periodic``): one script, ``periodic_control.lua``, sets the flags on the schedule's
hash; ``periodic_fire.lua`` obeys them inside its own script, so every worker's next
fire sees a pause and a "run now" is enqueued once (the SQL stores' twin is
:mod:`conveyor.backends.sql.schedules`).

Example (needs a server; the test suite starts one)::

    backend.periodic_pause(PeriodicPauseParams("nightly"))  # True: paused
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from redis.commands.core import Script

from conveyor.backends.base import PeriodicPauseParams, PeriodicResumeParams, PeriodicRunParams
from conveyor.backends.redis.scripts import load_source

if TYPE_CHECKING:
    from conveyor.backends.redis.connection import Unavailable
    from conveyor.backends.redis.keys import Keys


class RedisSchedules:
    """``periodic_pause``, ``periodic_resume`` and ``periodic_run_request``."""

    if TYPE_CHECKING:
        keys: Keys
        _client: Any
        _guard: Unavailable

    @functools.cached_property
    def _periodic_control(self) -> Script:
        return Script(self._client, load_source("periodic_control"))

    def periodic_pause(self, params: PeriodicPauseParams) -> bool:
        return self._control(params.name, "pause")

    def periodic_resume(self, params: PeriodicResumeParams) -> bool:
        return self._control(params.name, "resume")

    def periodic_run_request(self, params: PeriodicRunParams) -> bool:
        return self._control(params.name, "run")

    def _control(self, name: str, action: str) -> bool:
        with self._guard:
            found = self._periodic_control([self.keys.base], [name, action])
        return int(found) == 1
