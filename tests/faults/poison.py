"""Poison pills: one job that breaks its worker among innocent ones (see test_poison.py).

Example::

    result = poison_pill("sqlite:///t/jobs.db", Path("t"), "fault.abort")
    assert result.innocent_dead == [], result.tally.line()
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from conveyor.states import JobState
from tests.faults.fault_tasks import make_app
from tests.faults.harness import Fleet, Tally, all_final, count, wait_until
from tests.faults.scenarios import enqueue, report

# -- poison pills -------------------------------------------------------------------------


@dataclasses.dataclass
class PoisonResult:
    tally: Tally  # of the innocent jobs
    poison_state: str
    poison_reason: str
    #: (pid, status) of workers that exited without being asked to
    exits: list[tuple[int, int]]
    #: innocent jobs that ended dead, with their reason
    innocent_dead: list[str]
    #: statuses of the workers stopped with SIGTERM at the end (None: did not stop)
    final_statuses: list[int | None]
    output: str
    #: every awaited job was final before the timeout
    in_time: bool = True
    #: the poison job's state at the timeout, before the final SIGTERM
    poison_state_at_end: str = ""


def poison_pill(
    url: str,
    directory: Path,
    poison: str,
    *,
    pool: str = "thread",
    innocents: int = 20,
    innocent_seconds: float = 0.3,
    concurrency: int = 4,
    timeout: float = 30.0,
    poison_options: dict[str, object] | None = None,
    poison_args: tuple[object, ...] = (),
    worker_args: Sequence[str] = (),
    poison_ends: bool = True,
) -> PoisonResult:
    """One ``poison`` job enqueued first, then ``innocents`` jobs that take
    ``innocent_seconds`` (so the poison's batch-mates are still in the worker when it
    strikes: claimed with it, often not even started). One worker, restarted by a supervisor whenever it exits. Waits until every job is final
    or ``timeout`` passes (a jammed worker fails the test; it never hangs it); with
    ``poison_ends=False`` (a job no pool can end), only until the innocent ones are."""
    marks = directory / "marks.log"
    [poison_id] = enqueue(url, poison, [poison_args], **(poison_options or {}))
    ids = enqueue(url, "fault.work", [(innocent_seconds,)] * innocents)
    started = time.monotonic()
    with Fleet(url, directory, marks) as fleet:
        fleet.start(
            1, "--pool", pool, "-c", str(concurrency), "--shutdown-timeout", "1", *worker_args
        )
        fleet.supervise()
        awaited = [poison_id, *ids] if poison_ends else ids
        in_time = wait_until(all_final(url, awaited), timeout, poll=0.1)
        fleet.stop_supervisor()
        elapsed = time.monotonic() - started
        app = make_app(url)
        try:
            [before_stop] = app.backend.job_get_many([poison_id])
        finally:
            app.close()
        final_statuses = [w.stop(15) for w in fleet.workers if w.alive()]
        tally = count(f"poison {poison}, {pool} pool", url, ids, marks, started)
        tally.seconds = elapsed
        app = make_app(url)
        try:
            [rec] = app.backend.job_get_many([poison_id])
            innocent_dead = [
                f"{r.id}: {r.reason or r.error}"
                for r in app.backend.job_get_many(ids)
                if r.state is JobState.DEAD
            ]
        finally:
            app.close()
        tally.notes = f"poison={rec.state.value} worker exits={[c for _, c in fleet.exits]}"
        return PoisonResult(
            report(tally),
            rec.state.value,
            str(rec.reason or rec.error or ""),
            fleet.exits,
            innocent_dead,
            final_statuses,
            fleet.output(),
            in_time,
            before_stop.state.value,
        )
