"""The Flow protocol: flow control beyond the insert (workflow edges, progress, periodic
schedules and their operators' steering, a sequence's release, limits changed while
running, priority aging). Part of the seam; :mod:`conveyor.backends.protocols` composes
it into ``Backend`` and re-exports it (kept apart so that module stays small).

Example::

    backend.sequence_release_many(SequenceReleaseParams([job_id]))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from conveyor.backends.flow_params import (
    JobAgeParams,
    LimitOverrideParams,
    SequencePruneParams,
    SequenceReleaseParams,
)
from conveyor.backends.params import (
    JobDependenciesParams,
    JobProgressParams,
    PeriodicFireParams,
    PeriodicPauseParams,
    PeriodicResumeParams,
    PeriodicRunParams,
)
from conveyor.backends.records import Dependency, LimitRecord, PeriodicRecord


class Flow(Protocol):
    """Flow control beyond the insert: workflow edges, progress, periodic schedules."""

    def job_age_many(self, params: JobAgeParams) -> int:
        """Priority aging (feature ``aging``): how many jobs gained a priority."""
        ...

    def job_dependencies_many(self, params: JobDependenciesParams) -> list[Dependency]:
        """The parents of each job in ``ids`` (workflows)."""
        ...

    def job_progress_many(self, params: Sequence[JobProgressParams]) -> list[str]:
        """Store progress of running jobs; returns ids refused (not running under token)."""
        ...

    def limit_list(self) -> list[LimitRecord]:
        """Every declared limit key, by key, with its override and running jobs."""
        ...

    def limit_override(self, params: LimitOverrideParams) -> None:
        """Set or remove an operator's values for one limit key (feature ``limits``);
        every claim after it obeys them."""
        ...

    def periodic_fire(self, params: PeriodicFireParams) -> list[float]:
        """Enqueue the slots nobody fired yet, in one transaction; returns those fired."""
        ...

    def periodic_list(self) -> list[PeriodicRecord]: ...

    def periodic_pause(self, params: PeriodicPauseParams) -> bool:
        """Pause a schedule the store knows (a worker fired or planned it); False if it
        knows none of that name. Idempotent."""
        ...

    def periodic_resume(self, params: PeriodicResumeParams) -> bool:
        """Resume a paused schedule: its next slot fires; the skipped ones do not."""
        ...

    def periodic_run_request(self, params: PeriodicRunParams) -> bool:
        """Ask for one run now (a worker's scheduler enqueues it once, see
        ``PeriodicFireParams.run``); False if the store knows no schedule of that name."""
        ...

    def sequence_release_many(self, params: SequenceReleaseParams) -> list[str]:
        """Held jobs of blocked sequences go on (feature ``sequences``); the ids released."""
        ...

    def sequence_prune(self, params: SequencePruneParams) -> int:
        """Forget sequence keys with no active job (feature ``sequences``; the pruner
        calls it); how many keys went. A key whose last job changed meanwhile stays."""
        ...
