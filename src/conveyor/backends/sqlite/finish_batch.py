"""The successes of a finish batch written with two statements, not two per job.

``executemany`` still runs one ``UPDATE`` per row; here the whole batch travels as one
JSON array that ``json_each`` joins to the jobs by primary key: one ``UPDATE ... FROM``
(each row fenced by its own token, ``RETURNING`` naming the rows that moved) and one
``INSERT ... SELECT`` of their attempt rows. Python builds one list per job instead of
two dicts, and SQLite steps two statements per batch (bench/HOTPATH.md).

Example:
    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE jobs (id, token, state, result, finished_at, worker_id, lease_until)")
    >>> _ = conn.execute("CREATE TABLE attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error, PRIMARY KEY (job_id, token))")
    >>> _ = conn.execute("INSERT INTO jobs VALUES ('a', 1, 'running', NULL, NULL, 'w', 9.0)")
    >>> p = JobFinishParams("a", 1, FinishKind.SUCCEEDED, "w", 1, "5", started_at=1.0)
    >>> q = JobFinishParams("b", 1, FinishKind.SUCCEEDED, "w", 1, None, started_at=1.0)
    >>> finish_succeeded(conn, [p, q], 2.0)
    (['a'], ['b'])
    >>> conn.execute("SELECT state, result, finished_at FROM jobs").fetchall()
    [('succeeded', '5', 2.0)]
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from conveyor.backends.params import JobFinishParams
from conveyor.backends.sqlite.connection import load_query
from conveyor.states import FinishKind

__all__ = ["batchable", "finish_succeeded"]

_UPDATE = load_query("job_finish_succeeded_many")
_ATTEMPTS = load_query("attempt_insert_succeeded_many")
_encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


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


def finish_succeeded(
    conn: sqlite3.Connection, params: Sequence[JobFinishParams], now: float
) -> tuple[list[str], list[str]]:
    """End successful attempts, each fenced by its token; inside the caller's
    transaction. Returns (ids that moved, in order; ids refused: not running under
    that token)."""
    batch = [
        [p.id, p.token, p.result, p.finished_at or now, p.attempt, p.worker_id, p.started_at]
        for p in params
    ]
    text = _encode(batch)
    moved = {r[0] for r in conn.execute(_UPDATE, {"batch": text}).fetchall()}
    if len(moved) != len(batch):
        batch = [b for b in batch if b[0] in moved]
        text = _encode(batch)
    if batch:
        conn.execute(_ATTEMPTS, {"batch": text})
    return [p.id for p in params if p.id in moved], [p.id for p in params if p.id not in moved]
