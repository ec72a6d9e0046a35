"""Durable jobs on any SQL store: step records, events and wait deadlines (the
:class:`~conveyor.backends.protocols.Durable` protocol, feature ``steps``).

Written once for SQLite, PostgreSQL and MariaDB: every statement is the same on each
but for its placeholders (``Dialect.sql``) and the row lock (``Dialect.lock``). The
tables are ``job_steps`` and ``job_events`` (SQLite ``schema_007.sql``, PostgreSQL
``schema_003.sql``, MariaDB ``schema.sql`` version 2).

- A checkpoint is ONE fenced ``INSERT ... SELECT ... FROM jobs WHERE id AND token AND
  running``: one statement per step; a stale attempt writes nothing. Nothing is read
  back before the commit (``_ops_sent``: on PostgreSQL one pipelined round trip). A worker groups
  the checkpoints of its concurrent jobs (``job_step_save_many``): one commit for all
  those that came while the previous one was being written, each still fenced alone.
- A send and a wait meet on the job's row lock: the send locks the row before it stores
  the event and wakes a waiting job; the wait locks it (fenced by the token) before it
  looks for an event and parks. Whichever comes second sees the other's write, so an
  event is never left unread beside a parked job (SQLite: the write lock is global).
- A parked job is ``waiting`` with ``run_at`` = its deadline, attempt given back (as a
  snooze), no worker; :meth:`SqlSteps.job_wake_due` queues those past their deadline.

Example (any SQL store)::

    backend.job_step_save(JobStepSaveParams(StepRecord(job_id, 0, "charge", "succeeded",
                                                       '"r-1"'), token))
    backend.job_step_list(job_id)   # [StepRecord(job_id, 0, "charge", ...)]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager

from conveyor.backends.base import (
    JOIN_PREFIX,
    STEP_SUCCEEDED,
    STEP_TIMED_OUT,
    STEP_WAITING,
    WAIT_PARKED,
    WAIT_RECEIVED,
    WAIT_REFUSED,
    WAIT_TIMED_OUT,
    EventWaitResult,
    JobEventSendParams,
    JobEventWaitParams,
    JobJoinParams,
    JobStepSaveParams,
    JobStepSaveThroughParams,
    StepRecord,
)
from conveyor.backends.sql.dialect import Dialect, Executor, Result
from conveyor.backends.sql.flow import wake_waiting
from conveyor.backends.sql.store import SqlStore
from conveyor.errors import ConfigurationError, JobNotFound
from conveyor.states import JobState

COLUMNS = "job_id, pos, name, state, result, error, attempts, started_at, finished_at"
_VALUES = "?, ?, ?, ?, ?, ?, ?, ?, ?"
_FENCE = "id = ? AND token = ? AND state = 'running'"
#: The checkpoint: written only while the attempt holds its job (and only once per
#: position: a record there already is kept, as a stale twin's must be).
SAVE = f"job_steps ({COLUMNS}) SELECT {_VALUES} FROM jobs WHERE {_FENCE}"
_DELETE = (
    "DELETE FROM job_steps WHERE job_id = ? AND pos = ? "
    f"AND EXISTS (SELECT 1 FROM jobs WHERE {_FENCE})"
)
_PARK = (
    "UPDATE jobs SET state = 'waiting', worker_id = NULL, lease_until = NULL, run_at = ?, "
    f"attempt = jobs.attempt - 1, expires_at = NULL WHERE {_FENCE}"
)
#: A durable job has started once it saved its first step: ``expires=`` (how long a job
#: may wait to start) no longer applies to it, parked, sleeping or rescued.
_STARTED = f"UPDATE jobs SET expires_at = NULL WHERE {_FENCE} AND expires_at IS NOT NULL"


def step_args(s: StepRecord) -> tuple[object, ...]:
    return (
        s.job_id, s.position, s.name, s.state, s.result, s.error, s.attempts,
        s.started_at, s.finished_at,
    )  # fmt: skip


def step_of(row: tuple[object, ...]) -> StepRecord:
    """A record from a row of :data:`COLUMNS`."""
    j, pos, name, state, result, error, attempts, started, finished = row
    return StepRecord(
        str(j), int(str(pos)), str(name), str(state),
        None if result is None else str(result), None if error is None else str(error),
        int(str(attempts)), float(str(started or 0.0)), float(str(finished or 0.0)),
    )  # fmt: skip


def save_in(d: Dialect, ex: Executor, params: JobStepSaveParams) -> bool:
    """The fenced checkpoint on ``ex``, in its transaction (see the module docstring)."""
    return send_save(d, ex, params).rowcount == 1


def send_save(d: Dialect, ex: Executor, params: JobStepSaveParams) -> Result:
    """:func:`save_in` that reads nothing back: the fenced insert's answer, whose
    ``rowcount`` (1: saved) may be read after the transaction (``_ops_sent``)."""
    step = params.step
    if step.position == 0:  # the first step: the job has started (no expiry from now)
        ex.execute(d.sql(_STARTED), (step.job_id, params.token))
    if params.replace:
        return _send_replace(d, ex, step, params.token)
    args = (*step_args(step), step.job_id, params.token)
    return ex.execute(d.sql(d.insert_ignore(SAVE)), args)


def _replace(d: Dialect, ex: Executor, step: StepRecord, token: int) -> bool:
    """Delete then write the record at its position, both fenced by ``token``."""
    return _send_replace(d, ex, step, token).rowcount == 1


def _send_replace(d: Dialect, ex: Executor, step: StepRecord, token: int) -> Result:
    ex.execute(d.sql(_DELETE), (step.job_id, step.position, step.job_id, token))
    return ex.execute(d.sql(d.insert_ignore(SAVE)), (*step_args(step), step.job_id, token))


class SqlSteps(SqlStore):
    """The Durable protocol on any SQL store."""

    def job_step_list(self, job_id: str) -> list[StepRecord]:
        query = f"SELECT {COLUMNS} FROM job_steps WHERE job_id = ? ORDER BY pos"
        return [step_of(r) for r in self._ops_rows(self._dialect.sql(query), (job_id,))]

    def job_event_list(self, job_id: str) -> list[JobEventSendParams]:
        query = self._dialect.sql(
            "SELECT name, payload, sent_at FROM job_events WHERE job_id = ? "
            "AND consumed_at IS NULL ORDER BY id"
        )
        return [
            JobEventSendParams(job_id, str(name), str(payload), float(str(sent_at or 0.0)))
            for name, payload, sent_at in self._ops_rows(query, (job_id,))
        ]

    def job_step_save(self, params: JobStepSaveParams) -> bool:
        with self._ops_sent() as ex:
            sent = send_save(self._dialect, ex, params)
        return sent.rowcount == 1

    def job_step_save_many(self, params: Sequence[JobStepSaveParams]) -> list[bool]:
        d = self._dialect
        # By job id: two groups (or a group and a finish batch) lock rows in one order.
        order = sorted(range(len(params)), key=lambda i: params[i].step.job_id)
        sent: list[Result | None] = [None] * len(params)
        with self._ops_sent() as ex:
            for i in order:
                sent[i] = send_save(d, ex, params[i])
        return [r is not None and r.rowcount == 1 for r in sent]

    def job_step_save_through(self, params: JobStepSaveThroughParams) -> bool:
        with self._steps_through(params.connection) as ex:
            return save_in(self._dialect, ex, params.save)

    def _steps_through(self, connection: object) -> AbstractContextManager[Executor]:
        """An executor on a task's connection, in its transaction (SQLite, PostgreSQL:
        the stores of ``current_job().transaction()``); others refuse."""
        raise ConfigurationError(
            f"the {getattr(self, 'name', 'SQL')} store cannot commit a step's writes with its "
            "checkpoint (@app.step(transaction=True)): SQLite and PostgreSQL can"
        )

    def job_event_send(self, params: JobEventSendParams) -> bool:
        d = self._dialect
        with self._ops_tx() as ex:
            # The row lock first: a concurrent wait either parked already (we wake it)
            # or waits for our commit and then finds the event.
            row = ex.execute(
                d.sql(f"SELECT state FROM jobs WHERE id = ?{d.lock}"), (params.job_id,)
            )
            found = row.fetchone()
            if found is None:
                raise JobNotFound(params.job_id)
            now = d.clock(ex)
            ex.execute(
                d.sql(
                    "INSERT INTO job_events (job_id, name, payload, sent_at) VALUES (?, ?, ?, ?)"
                ),
                (params.job_id, params.name, params.payload, params.sent_at or now),
            )
            if str(found[0]) != "waiting":
                return False
            woken = wake_waiting(d, ex, params.job_id, params.name, now)
            if woken:
                self._ops_wake(ex)
            return woken

    def job_event_wait(self, params: JobEventWaitParams) -> EventWaitResult:
        d, p = self._dialect, params
        with self._ops_tx() as ex:
            held = ex.execute(d.sql(f"SELECT attempt FROM jobs WHERE {_FENCE}{d.lock}"),
                              (p.job_id, p.token)).fetchone()  # fmt: skip
            if held is None:
                return EventWaitResult(WAIT_REFUSED)
            now = d.clock(ex)
            pick = (
                "SELECT id, payload FROM job_events WHERE job_id = ? AND name = ? "
                f"AND consumed_at IS NULL ORDER BY id LIMIT 1{d.lock}"
            )
            event = ex.execute(d.sql(pick), (p.job_id, p.event)).fetchone()
            step = StepRecord(p.job_id, p.position, p.name, STEP_WAITING,
                              json.dumps(p.deadline), None, 1, p.started_at or now, now)  # fmt: skip
            if event is not None:
                ex.execute(d.sql("UPDATE job_events SET consumed_at = ? WHERE id = ?"),
                           (now, event[0]))  # fmt: skip
                payload = str(event[1])
                _replace(d, ex, _as(step, STEP_SUCCEEDED, payload), p.token)
                return EventWaitResult(WAIT_RECEIVED, payload)
            if now >= p.deadline:
                _replace(d, ex, _as(step, STEP_TIMED_OUT, step.result), p.token)
                return EventWaitResult(WAIT_TIMED_OUT)
            _replace(d, ex, step, p.token)
            ex.execute(d.sql(_PARK), (p.deadline, p.job_id, p.token))
            return EventWaitResult(WAIT_PARKED)

    def job_join_mark(self, params: JobJoinParams) -> JobState | None:
        d = self._dialect
        with self._ops_tx() as ex:
            # The joined job's row lock: its finish either came first (we read it ended)
            # or waits for our commit, and then its settle reads the mark.
            row = ex.execute(
                d.sql(f"SELECT state FROM jobs WHERE id = ?{d.lock}"), (params.job_id,)
            ).fetchone()
            if row is None:
                return None
            state = JobState(str(row[0]))
            if not state.is_finished:
                mark = d.insert_ignore("job_deps (parent_id, child_id, position) VALUES (?, ?, ?)")
                ex.execute(d.sql(mark), (params.job_id, JOIN_PREFIX + params.joiner, -1))
            return state

    def job_wake_due(self, limit: int) -> int:
        d = self._dialect
        with self._ops_tx() as ex:
            now = d.clock(ex)
            due = ex.execute(
                d.sql(
                    "SELECT jobs.id FROM jobs JOIN job_steps ON job_steps.job_id = jobs.id "
                    "WHERE job_steps.state = 'waiting' AND jobs.state = 'waiting' "
                    "AND jobs.run_at <= ? ORDER BY jobs.run_at LIMIT ?"
                ),
                (now, limit),
            ).fetchall()
            ids = [str(r[0]) for r in due]
            woken = 0
            for where, args in d.in_list("id", ids):
                woken += ex.execute(
                    d.sql(f"UPDATE jobs SET state = 'queued', run_at = ? WHERE {where} "
                          "AND state = 'waiting' AND run_at <= ?"),
                    (now, *args, now),
                ).rowcount  # fmt: skip
            if woken:
                self._ops_wake(ex)
            return woken


def _as(step: StepRecord, state: str, result: str | None) -> StepRecord:
    return StepRecord(
        step.job_id, step.position, step.name, state, result, None, step.attempts,
        step.started_at, step.finished_at,
    )  # fmt: skip
