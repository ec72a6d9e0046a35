"""Operations on the PostgreSQL backend: the shared engine's
(:mod:`conveyor.backends.sql.ops`) bound to this store -- a read is one statement in
autocommit (``_once``: one round trip), a write one transaction on the pool (``_tx``)
that wakes listening workers with ``pg_notify`` when jobs became ready, the server's
clock. Statements that read nothing back until they are committed (a durable step's
checkpoint, ``_ops_sent``) go in one pipeline: one round trip where ``_tx`` makes three
(BEGIN, the statement, COMMIT).

Listing pages in byte order of ids (``id COLLATE "C"``, the dialect's ``id_order``):
ids sort by creation time as bytes, whatever collation the database was created with.
``jobs.id`` is declared ``COLLATE "C"`` (schema.sql), so the primary key's index gives
that order and bounds an ``--after`` page; the explicit collation keeps the order right
on a hand-made schema.

``backup`` is left to the engine's own tool: feature ``backup`` is not declared, and
the method says to use ``pg_dump`` (docs/postgres.md#operations-on-postgres).

Example (needs a server; the test suite starts one)::

    backend.queue_pause(QueuePauseParams("mail"))
    [(q.queue, q.paused) for q in backend.queue_list()]     # [('mail', True)]
    backend.job_count(JobCountParams(JobFilter(states=(JobState.DEAD,))))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from conveyor.backends.postgres.dialect import POSTGRES, Cursors
from conveyor.backends.postgres.sql import NOW
from conveyor.backends.sql.dialect import Executor
from conveyor.backends.sql.ops import SqlOperations
from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    import psycopg

    Cursor = psycopg.Cursor[tuple[object, ...]]

#: Byte order of ids, the order they were created in (the dialect's ``id_order``).
ID_ORDER = POSTGRES.id_order
_PG_DUMP = (
    "backup is only available on the SQLite backend, not postgres; back PostgreSQL up "
    "with its own tools: pg_dump --schema={schema} (or the base backups and replicas "
    "you already run)"
)


class PostgresOperations(SqlOperations):
    """Operations methods of :class:`~conveyor.backends.postgres.backend.PostgresBackend`
    (the ``Operations`` protocol); they share its pool and ``_tx()``."""

    _dialect = POSTGRES
    schema: str
    _tx: Callable[[], AbstractContextManager[Cursor]]
    _pipelined: Callable[[], AbstractContextManager[psycopg.Connection[tuple[object, ...]]]]
    _once: Callable[..., list[tuple[object, ...]]]
    _notify: Callable[[Cursor], None]

    def _ops_rows(
        self, sql: str, args: Sequence[object] | Mapping[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        return self._once(sql, args)

    def _ops_tx(self) -> AbstractContextManager[Executor]:
        return self._tx()

    @contextmanager
    def _ops_sent(self) -> Iterator[Executor]:
        """The statements in one pipeline, a cursor each: one round trip, committed by
        the Sync that ends it (which also brings their row counts back)."""
        with self._pipelined() as conn:
            yield Cursors(conn)

    def _ops_wake(self, ex: Executor) -> None:
        self._notify(ex)  # type: ignore[arg-type]  # ex is this store's cursor

    def _ops_now(self) -> float:
        return float(str(self._once(f"SELECT {NOW}")[0][0]))  # one round trip

    def backup(self, path: str) -> None:
        """Not this backend's job (feature ``backup`` is not declared): raises
        ConfigurationError naming ``pg_dump``."""
        raise ConfigurationError(_PG_DUMP.format(schema=self.schema))
