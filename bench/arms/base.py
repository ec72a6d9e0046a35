"""The small protocol every arm implements.

Producer side (runs in a fresh producer process per measurement): ``open`` (connections,
outside every timed window), ``enqueue_one``, ``enqueue_batch``, ``round_trip``.
Worker side: ``worker_cmd`` (a fresh worker process per measurement, started by the
harness with ``subprocess.Popen``). Store side: ``store_init_cmd``, for a system whose
documented set-up creates its store before any producer or worker opens it (qler). Completion is detected by the harness from the
measurement's marker file (written by :mod:`bench.jobs`, read by :mod:`bench.marker`),
never by an arm.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence

#: (job index, enqueue/scheduled wall time, kind)
Item = tuple[int, float, str]

SCENARIOS = ("E1", "E2", "W1", "W2", "W3", "W4", "W5", "W6")


@dataclasses.dataclass(frozen=True)
class Variant:
    """One arm configuration: a system plus the exact worker options used."""

    name: str  # e.g. "celery-solo"
    family: str  # module under bench.arms, e.g. "celery_arm"
    storage: str  # "redis" or "sqlite"
    pool: str  # the system's own word for its pool: solo, prefork, threads, ...
    concurrency: int
    config: str  # printed with results: exactly what was run
    w4: bool = False  # used for the W4 concurrency matrix (concurrency is varied)
    unsupported: tuple[tuple[str, str], ...] = ()  # (scenario, reason)
    #: what a committed job survives, printed with the fairness checklist; empty: the
    #: storage's default statement (:func:`durability`)
    durability: str = ""

    def reason_unsupported(self, scenario: str) -> str | None:
        return dict(self.unsupported).get(scenario)


#: what a job survives on each storage as the suite runs it, unless a variant says more
_DURABILITY = {
    "sqlite": "SQLite WAL file, synchronous as read back below (NORMAL: survives a process "
    "crash, not a power cut; FULL: every commit fsynced)",
    "redis": "the suite's redis-server, no RDB and no AOF: nothing fsynced; survives a "
    "worker crash, not a Redis restart",
    "postgres": "logged PostgreSQL tables: as durable as the cluster's fsync and "
    "synchronous_commit, read back above",
}


def durability(variant: Variant) -> str:
    """What a committed job of ``variant`` survives (printed in the fairness checklist).

    >>> durability(Variant("x", "x", "redis", "solo", 1, "")).startswith("the suite's redis")
    True
    """
    return variant.durability or _DURABILITY.get(variant.storage, "")


def same_enqueue_as(twin: str) -> tuple[tuple[str, str], ...]:
    """``unsupported`` for a variant that differs from ``twin`` only in worker options: its
    E1/E2 would time the same client code again (a Celery pool, a conveyor ``-c`` are
    worker flags), so the full run measures enqueue once, on the twin.

    >>> same_enqueue_as("celery-prefork2")[0]
    ('E1', 'enqueue is the same code as celery-prefork2 (a worker option differs): measured there')
    """
    reason = f"enqueue is the same code as {twin} (a worker option differs): measured there"
    return (("E1", reason), ("E2", reason))


class Arm:
    """Base class; one subclass per system (one module per system)."""

    variant: Variant

    def __init__(self, variant: Variant) -> None:
        self.variant = variant

    # -- availability ----------------------------------------------------------------------
    @classmethod
    def unavailable(cls, variant: Variant) -> str | None:
        """``None`` when the system can run here, else the reason it cannot."""
        return None

    @classmethod
    def gaps(cls, variant: Variant) -> dict[str, str]:
        """Scenarios this arm cannot do *here and now* (beyond ``variant.unsupported``)."""
        return {}

    # -- producer side ---------------------------------------------------------------------
    def open(self) -> None:
        """Open connections / files; called before any timed window, for every arm alike."""

    def enqueue_one(self, item: Item) -> object:
        raise NotImplementedError

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        raise NotImplementedError

    def enqueue_spread(self, items: Sequence[Item], queues: Sequence[str]) -> None:
        """Enqueue ``items`` round robin over ``queues`` (job i to ``queues[i % len]``):
        W7, one worker consuming many queues. Only systems that W7 measures have it."""
        raise NotImplementedError

    def round_trip(self, item: Item, timeout: float) -> None:
        """Enqueue one job and block until its result is back through the system's API."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections."""

    #: Seconds the harness gives the worker after SIGTERM (once the measurement is over)
    #: before SIGKILL. Only wall time of the run depends on it.
    stop_grace: float = 10.0

    def in_process_cmd(self, store: Mapping[str, str]) -> list[str] | None:
        """W5 in-process: a command that, in one fresh process, imports the system, opens
        the empty store ``store`` describes (a measurement's environment), enqueues one job, runs it with an in-process worker and prints
        ``done <wall time>`` when the job body ran. ``None``: not measured for this arm."""
        return None

    # -- worker side -----------------------------------------------------------------------
    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        """The worker command. ``verbose`` (W5 only) turns on the INFO log that carries the
        ready line; elsewhere per-job log lines are off for every arm that writes them."""
        raise NotImplementedError

    #: a substring of the worker's log output that says "ready to take jobs"
    ready_marker: str = ""

    # -- store side ------------------------------------------------------------------------
    def store_init_cmd(self, env: Mapping[str, str]) -> list[str] | None:
        """The system's documented "create the store" command, run by the harness once per
        fresh store (``env`` is the measurement's), before the producer or the worker
        opens it, outside every timed window. ``None`` (most arms): each process creates
        what it needs when it connects."""
        return None


def bin_path(name: str) -> str:
    """A console script of the running interpreter's environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)
