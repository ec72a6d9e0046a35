"""``conveyor check`` on the memory store: the SQL audit's kinds
(``sqlite/queries/integrity_check.sql``) that a store of Python objects can hold. Rows
are only ever written through the API here, so each kind is a bug of the store itself.

Example:
    >>> from conveyor.backends.memory.store import MemoryStore
    >>> audit(MemoryStore(), stale_before=0.0)
    []
"""

from __future__ import annotations

from conveyor.backends.base import STEP_WAITING, IntegrityProblem
from conveyor.backends.memory.store import MemoryStore
from conveyor.rules import is_sequence_blocked
from conveyor.states import ACTIVE_STATES, FINISHED_STATES, JobState


def audit(store: MemoryStore, stale_before: float) -> list[IntegrityProblem]:
    """Every problem found, jobs first (the caller holds the lock). Over 60 lines: one
    check per kind of problem, in one pass over the rows, as the SQL stores' checklist."""
    found: list[IntegrityProblem] = []

    def problem(kind: str, job_id: str | None, detail: str) -> None:
        found.append(IntegrityProblem(kind, job_id, detail))

    for row in store.jobs.values():
        state = row.state
        if state is JobState.RUNNING:
            if row.worker_id is None or row.token == 0:
                problem("running_without_claim", row.id, "running with no worker or no token")
            else:
                worker = store.workers.get(row.worker_id)
                if worker is None or worker.heartbeat_at < stale_before:
                    why = "not registered" if worker is None else "silent since its last heartbeat"
                    problem(
                        "claim_without_live_worker",
                        row.id,
                        f"claimed by {row.worker_id}, which is {why}",
                    )
        elif row.worker_id is not None:
            problem(
                "not_running_with_worker",
                row.id,
                f"{state.value} job still names worker {row.worker_id}",
            )
        if state in (JobState.QUEUED, JobState.SCHEDULED) and row.finished_at is not None:
            problem("active_with_finished_at", row.id, f"{state.value} job has finished_at set")
        if state in FINISHED_STATES and row.finished_at is None:
            problem("finished_without_finished_at", row.id, f"{state.value} job has no finished_at")
        if row.attempt > row.max_attempts:
            problem(
                "attempts_over_max",
                row.id,
                f"attempt {row.attempt} > max_attempts {row.max_attempts}",
            )
        if state is JobState.QUEUED and row.queue == "":
            problem(
                "queued_without_queue", row.id, "queued in queue '', which no worker can consume"
            )
        if state is JobState.WAITING:
            if row.waiting_on < 0:
                problem(
                    "waiting_on_negative",
                    row.id,
                    f"waiting on {row.waiting_on} parents, below zero",
                )
            parents = [store.jobs.get(p) for p in store.parents.get(row.id, ())]
            parked = any(s.state == STEP_WAITING for s in store.steps.get(row.id, {}).values())
            held = is_sequence_blocked(row.reason)  # a blocked sequence waits on purpose
            if not (parked or held) and not any(
                p is not None and p.state in ACTIVE_STATES for p in parents
            ):
                problem(
                    "waiting_without_parent",
                    row.id,
                    "waiting, but no parent of it can still finish: it never runs",
                )
    for job_id, attempts in store.attempts.items():
        if job_id not in store.jobs:
            for token in attempts:
                problem("orphan_attempt", job_id, f"attempt row (token {token}) of a missing job")
    for job_id, logs in store.logs.items():
        if job_id not in store.jobs and logs:
            problem("orphan_log", job_id, f"{len(logs)} log record(s) of a missing job")
    return found
