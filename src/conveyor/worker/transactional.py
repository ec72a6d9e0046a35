"""Transactional completion: ``current_job().transaction()`` inside a task.

The block gets a new connection to the store (``backend.transaction_connection()``:
SQLite, the store's file; PostgreSQL, the server's default ``search_path``, as the
application's own connections). When the block ends without an exception, the job's
success is written through that connection, fenced by the attempt's claim token
(``job_finish_many_through``), and the one transaction commits: the task's writes and
"succeeded" together or not at all. Then:

- an exception in the block rolls everything back and fails the attempt as usual
  (retried per the task's policy);
- the fence refuses (the job was rescued or cancelled from under this attempt): the
  writes are rolled back and :class:`ClaimLost` fails the attempt (its finish is then
  refused too: nothing of the stale attempt lands);
- the commit fails: the attempt fails and is retried. If the connection died *during*
  COMMIT the server may have committed anyway; the retry's finish is then refused by
  the same fence (the job is already ``succeeded``), so nothing runs twice from here;
- the worker writes no finish of its own for a job whose block committed (its result
  is ``None``, stored as JSON ``null``: what the task produced is in the rows it wrote);
- jobs enqueued inside the block are written through the same connection
  (``conveyor.transaction(conn)`` is active there): they exist only if it commits.

Thread and asyncio pools only (the connection lives in the worker's process); in a
process or interpreter pool, or outside a worker, ``transaction()`` says so.

Example::

    @app.task
    def charge(order_id: int) -> None:
        with conveyor.current_job().transaction() as conn:
            conn.execute("UPDATE orders SET paid = 1 WHERE id = ?", (order_id,))
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import ClaimedJob, JobFinishParams, JobFinishThroughParams
from conveyor.errors import ConfigurationError, ConveyorError
from conveyor.states import FinishKind
from conveyor.transactions import transaction

if TYPE_CHECKING:
    from conveyor.backends.base import Backend
    from conveyor.context import JobContext

FEATURE = "transactional_completion"


class ClaimLost(ConveyorError):
    """The attempt no longer holds its job (rescued or cancelled meanwhile): the writes
    of its ``transaction()`` block were rolled back."""


@contextlib.contextmanager
def transact(backend: Backend, job: ClaimedJob, worker_id: str, ctx: JobContext) -> Iterator[Any]:
    """The block of ``current_job().transaction()`` for ``job`` (see the module doc)."""
    if FEATURE not in backend.features:
        raise ConfigurationError(
            "current_job().transaction() needs a SQL store (sqlite:// or postgresql://): "
            f"the {backend.name} backend cannot commit your writes with the job's success"
        )
    with backend.transaction_connection() as opened:
        conn: Any = opened  # sqlite3 or psycopg: both have commit() and rollback()
        try:
            # Jobs the block enqueues go through the same transaction: they exist only
            # if it commits (and on SQLite they could not take the file's write lock,
            # which this connection holds, anyway).
            with transaction(conn):
                yield conn
        except BaseException:
            _rollback(conn)
            raise
        success = JobFinishParams(
            id=job.id,
            token=job.token,
            kind=FinishKind.SUCCEEDED,
            # JSON null: job.result() is None (NULL would read as "not stored")
            result="null",
            worker_id=worker_id,
            attempt=job.attempt,
            started_at=job.claimed_at,
            finished_at=time.time(),
        )
        try:
            refused = backend.job_finish_many_through(JobFinishThroughParams(conn, [success]))
            if refused:
                raise ClaimLost(
                    f"job {job.id} is no longer held by this attempt (rescued or cancelled): "
                    "the writes of its transaction() block were rolled back"
                )
            conn.commit()
        except BaseException:
            _rollback(conn)
            raise
        ctx.finished_by_transaction = success


def _rollback(conn: Any) -> None:
    # Best effort: the cause is what the task must see; closing ends it anyway.
    with contextlib.suppress(Exception):
        conn.rollback()
