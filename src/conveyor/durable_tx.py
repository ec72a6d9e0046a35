"""Transactional steps (``@app.step(transaction=True)``) on SQLite and PostgreSQL: the
step's own writes and its checkpoint commit in one transaction, so the step takes
effect exactly once (docs/durable.md#exactly-once-steps).

Each run of such a step opens a connection to the store (``transaction_connection``,
the one ``current_job().transaction()`` gives a task). Inside the step,
``current_job().transaction()`` yields that connection without committing, and jobs
the step enqueues go through it too. When the step returns, its checkpoint is written
through the same connection, fenced by the claim token (``job_step_save_through``),
and the one transaction commits. A step that raises, or a worker that dies before the
commit, leaves nothing: neither the writes nor the checkpoint, so the replay runs the
step again on a clean slate. A refused fence (the job was taken from this attempt)
rolls everything back.

Example::

    @app.step(transaction=True)
    def debit(account: int, cents: int) -> int:
        with conveyor.current_job().transaction() as conn:
            conn.execute("UPDATE accounts SET cents = cents - ? WHERE id = ?",
                         (cents, account))
        return cents
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import JobStepSaveParams, JobStepSaveThroughParams
from conveyor.errors import ConfigurationError
from conveyor.transactions import transaction

if TYPE_CHECKING:
    from conveyor.backends.base import Backend
    from conveyor.context import JobContext

#: The stores whose task connection can carry a step's checkpoint.
FEATURE = "transactional_completion"


@contextlib.contextmanager
def step_transaction(backend: Backend, ctx: JobContext, step: str) -> Iterator[Any]:
    """The connection of one run of a transactional step (see the module docstring):
    ``ctx.transaction()`` yields it while the block runs; rolled back on an exception,
    closed (so rolled back unless committed) when the block ends."""
    if FEATURE not in backend.features:
        raise ConfigurationError(
            f"step {step}: transaction=True commits a step's writes with its checkpoint "
            f"on SQLite and PostgreSQL; the {backend.name} store cannot"
        )
    with backend.transaction_connection() as opened:
        conn: Any = opened  # sqlite3 or psycopg: both have commit() and rollback()
        ctx._step_conn = conn
        try:
            with transaction(conn):  # the step's enqueues: in its transaction too
                yield conn
        except BaseException:
            with contextlib.suppress(Exception):  # the cause is what the job must see
                conn.rollback()
            raise
        finally:
            ctx._step_conn = None


def commit_checkpoint(backend: Backend, conn: Any, save: JobStepSaveParams) -> bool:
    """Write the checkpoint through ``conn`` and commit the step's transaction; False
    (everything rolled back) when the fence refused it."""
    if not backend.job_step_save_through(JobStepSaveThroughParams(conn, save)):
        conn.rollback()
        return False
    conn.commit()
    return True
