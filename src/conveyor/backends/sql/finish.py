"""Finishing attempts on any SQL store: each finish fenced by its claim token, its
attempt row written (or, for a row that goes, its history deleted), and dependants moved
(:func:`conveyor.backends.sql.flow.settle`), all in the caller's transaction.

What each finish kind writes comes from its :data:`conveyor.rules.FINISH` rule and is
spelled once here (:func:`finish_sets`); how a batch travels is the store's
(:attr:`Dialect.finish_batch`):

- ``"rows"``: one fenced statement per finish, the attempt rows in one ``executemany``
  (any store, MariaDB's);
- ``"json"``: the same, except that a batch of successes only (each job once) is one
  ``UPDATE ... FROM`` over one JSON parameter and one ``INSERT ... SELECT`` of its attempt
  rows (SQLite's ``job_finish_succeeded_many`` / ``attempt_insert_succeeded_many``);
- ``"arrays"``: one statement per finish kind, its rows as array parameters, writing the
  attempt rows in the same statement (PostgreSQL's ``job_finish_many_<kind>``, built
  from :func:`finish_sets` by the store); sent first, read in :meth:`Finish.result`,
  so that it shares a round trip with what is sent after it (pipeline mode).

Example::

    sent = Finish(SQLITE, conn, finishes, time.time())
    refused, wake = sent.result(conn)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from conveyor.backends.base import JobFinishParams
from conveyor.backends.sql import flow
from conveyor.backends.sql.dialect import Dialect, Executor, Result
from conveyor.rules import FINISH
from conveyor.states import FinishKind, JobState

#: The values of a finish a statement may take, in the order :func:`finish_sets` uses.
FIELDS = ("result", "error", "reason", "finished_at", "run_at")
ATTEMPT_INSERT = (
    "attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_FENCE = "id = ? AND token = ? AND state = 'running'"
_encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


def finish_sets(kind: FinishKind, value: Callable[[str], str]) -> tuple[str, list[str]]:
    """The ``SET`` list that applies ``FINISH[kind]`` to a running row, and the finish
    fields it takes in order; ``value(field)`` spells a field's value (``?`` for one row,
    ``f.result`` for an array's element). None for a kind whose row goes (DELETE).

    >>> finish_sets(FinishKind.SNOOZE, lambda f: "?")
    ("state = 'scheduled', worker_id = NULL, lease_until = NULL, run_at = ?, attempt = jobs.attempt - 1", ['run_at'])
    """
    rule = FINISH[kind]
    assert rule.state is not None, "a finish whose row goes is a DELETE"
    sets = [f"state = '{rule.state.value}'", "worker_id = NULL", "lease_until = NULL"]
    fields: list[str] = []
    if rule.state is JobState.SUCCEEDED:
        fields.append("result")
    elif kind is not FinishKind.SNOOZE:  # a snooze is not an error: the last one stays
        fields += ["error", "reason"]
    fields.append("finished_at" if rule.state.is_finished else "run_at")
    sets += [f"{field} = {value(field)}" for field in fields]
    if rule.gives_back_attempt:
        sets.append("attempt = jobs.attempt - 1")
    return ", ".join(sets), fields


def _row_statement(kind: FinishKind) -> tuple[str, list[str]]:
    if FINISH[kind].state is None:  # the row goes (its history with it, below)
        return f"DELETE FROM jobs WHERE {_FENCE}", []
    sets, fields = finish_sets(kind, lambda _: "?")
    return f"UPDATE jobs SET {sets} WHERE {_FENCE}", fields


#: Per finish kind: whether the job ends, what its end means to its dependants.
_ENDS = {kind: FINISH[kind].ends_job for kind in FinishKind}
_SUCCEEDS = {kind: FINISH[kind].state is JobState.SUCCEEDED for kind in FinishKind}
_PARENT_FAILED = {kind: FINISH[kind].parent_failed for kind in FinishKind}
#: One fenced statement per finish kind, with ``?`` placeholders, and its fields.
ROW_STATEMENTS = {kind: _row_statement(kind) for kind in FinishKind}


def batchable(params: Sequence[JobFinishParams]) -> bool:
    """True when the batch is successes only, each job once (a job twice in one batch
    takes the per-row path, where its second finish is refused as before)."""
    if len(params) < 2:
        return False
    ids = set()
    for p in params:
        if p.kind is not FinishKind.SUCCEEDED:
            return False
        ids.add(p.id)
    return len(ids) == len(params)


class Finish:
    """A batch of finishes in two steps: creating it writes them (``"arrays"``: sends
    one statement per kind, read later); :meth:`result` reads what is left and moves
    dependants, in the same transaction. ``alone`` (``"arrays"`` only): jobs that have
    dependants are left running, counted in ``unapplied`` with the refused ones, so that
    the statements may commit before they are read (one round trip). ``now``: the
    caller's clock, None where the store's statements read the server's."""

    def __init__(
        self,
        d: Dialect,
        ex: Executor,
        params: Sequence[JobFinishParams],
        now: float | None,
        alone: bool = False,
    ) -> None:
        self.d, self.params = d, params
        #: The ids whose job ended here, for the waiters; set by result().
        self.ended: list[str] = []
        #: Indexes into ``params`` of the finishes not applied, set by result().
        self.unapplied: list[int] = []
        self._sent: list[Result] = []
        #: Written already (not "arrays"): the indexes applied, and the clock used.
        self._applied: tuple[list[int], float] | None = None
        #: The batch is successes only, each job once (SQLite's JSON batch).
        self._successes = False
        if d.finish_batch == "arrays":
            for kind, numbered in _by_kind(params).items():
                name = f"job_finish_many_{kind.value}" + ("_alone" if alone else "")
                self._sent.append(ex.execute(d.queries[name], _arrays(numbered)))
            return
        now = d.clock(ex) if now is None else now
        self._successes = d.finish_batch == "json" and batchable(params)
        if self._successes:
            applied = _succeeded_json(d, ex, params, now)
        else:
            applied = _rows(d, ex, params, now)
        self._applied = (applied, now)

    def result(self, ex: Executor) -> tuple[list[str], bool]:
        """(refused ids, whether anything became ready or scheduled: wake workers)."""
        params = self.params
        if self._applied is None:
            applied, clocks = self._answers()
            parents = list(clocks)
            now = max(clocks.values(), default=0.0)
        else:  # every job applied may have dependants: settle reads their edges
            applied, now = self._applied
            parents = applied
        if len(applied) == len(params):
            self.unapplied = []
        else:
            seen = set(applied)
            self.unapplied = [n for n in range(len(params)) if n not in seen]
        if self._successes:
            self.ended = ended = [params[n].id for n in applied]
            wake = flow.settle(self.d, ex, ended, {}, now) > 0 if ended else False
        else:
            self.ended = ended = [params[n].id for n in applied if _ENDS[params[n].kind]]
            wake = len(ended) < len(applied)  # a retry or snooze made a job scheduled
            if parents:
                wake = _settle(self.d, ex, params, parents, now) > 0 or wake
        return [params[n].id for n in self.unapplied], wake

    def _answers(self) -> tuple[list[int], dict[int, float]]:
        """The sent statements' answers: the indexes applied, in order, and the store's
        clock for each that has dependants."""
        applied: list[int] = []
        parents: dict[int, float] = {}
        for sent in self._sent:
            for n, _finished, now, has_dependants in sent.fetchall():
                applied.append(int(n))
                if has_dependants:
                    parents[int(n)] = float(now)
        applied.sort()
        return applied, parents


def _settle(
    d: Dialect, ex: Executor, params: Sequence[JobFinishParams], parents: Iterable[int], now: float
) -> int:
    """Dependants move in the same commit as their parent's finish (``parents``: the
    indexes of finishes whose job may have dependants)."""
    succeeded = [params[n].id for n in parents if _SUCCEEDS[params[n].kind]]
    failed = {
        params[n].id: why for n in parents if (why := _PARENT_FAILED[params[n].kind]) is not None
    }
    if not succeeded and not failed:
        return 0
    return flow.settle(d, ex, succeeded, failed, now)


def _rows(d: Dialect, ex: Executor, params: Sequence[JobFinishParams], now: float) -> list[int]:
    """One fenced statement per finish, then the attempt rows; the indexes applied."""
    applied: list[int] = []
    attempts: list[tuple[Any, ...]] = []
    for n, p in enumerate(params):
        sql, fields = ROW_STATEMENTS[p.kind]
        values = {
            "result": p.result,
            "error": p.error,
            "reason": p.reason,
            "finished_at": p.finished_at or now,
            "run_at": p.run_at or now,
        }
        args = [values[f] for f in fields]
        if ex.execute(d.sql(sql), (*args, p.id, p.token)).rowcount != 1:
            continue
        applied.append(n)
        outcome = FINISH[p.kind].attempt_outcome
        if outcome is None:  # the row went: its history goes with it
            ex.execute(d.sql("DELETE FROM attempts WHERE job_id = ?"), (p.id,))
            for table in ("job_logs", "job_steps", "job_events"):
                ex.execute(d.sql(f"DELETE FROM {table} WHERE job_id = ?"), (p.id,))
            continue
        finished = p.finished_at or now
        attempts.append(
            (p.id, p.token, p.attempt, p.worker_id, p.started_at, finished, outcome, p.error)
        )
    if attempts:
        ex.executemany(d.sql(d.insert_ignore(ATTEMPT_INSERT)), attempts)
    return applied


def _succeeded_json(
    d: Dialect, ex: Executor, params: Sequence[JobFinishParams], now: float
) -> list[int]:
    """A batch of successes as one JSON array: one fenced ``UPDATE`` naming the rows it
    moved, one ``INSERT ... SELECT`` of their attempt rows; the indexes applied."""
    batch = [
        [p.id, p.token, p.result, p.finished_at or now, p.attempt, p.worker_id, p.started_at]
        for p in params
    ]
    text = _encode(batch)
    sent = ex.execute(d.queries["job_finish_succeeded_many"], {"batch": text})
    moved = {r[0] for r in sent.fetchall()}
    if len(moved) != len(batch):
        batch = [b for b in batch if b[0] in moved]
        text = _encode(batch)
    if batch:
        ex.execute(d.queries["attempt_insert_succeeded_many"], {"batch": text})
    return [n for n, p in enumerate(params) if p.id in moved]


def _by_kind(
    params: Sequence[JobFinishParams],
) -> dict[FinishKind, list[tuple[int, JobFinishParams]]]:
    by_kind: dict[FinishKind, list[tuple[int, JobFinishParams]]] = {}
    for n, p in enumerate(params):
        by_kind.setdefault(p.kind, []).append((n, p))
    return by_kind


def _floats(values: list[float | None]) -> list[float | None]:
    """Times as floats: an array takes one element type, and a time may be an int
    (``run_at=now + 5`` from a hook)."""
    if all(type(v) is float or v is None for v in values):
        return values
    return [None if v is None else float(v) for v in values]


def _arrays(numbered: Sequence[tuple[int, JobFinishParams]]) -> dict[str, Any]:
    """One kind's finishes as one array per column (``"arrays"``)."""
    batch = [p for _, p in numbered]
    return {
        "n": [n for n, _ in numbered],
        "id": [p.id for p in batch],
        "token": [p.token for p in batch],
        "result": [p.result for p in batch],
        "error": [p.error for p in batch],
        "reason": [p.reason for p in batch],
        "run_at": _floats([p.run_at for p in batch]),
        "finished_at": _floats([p.finished_at for p in batch]),
        "attempt": [p.attempt for p in batch],
        "worker_id": [p.worker_id for p in batch],
        "started_at": _floats([p.started_at for p in batch]),
    }
