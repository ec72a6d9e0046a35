"""What a SQL store hands the engine's operations: its dialect, and four hooks.

The operations (:mod:`~conveyor.backends.sql.ops_read`, ``ops_bulk``, ``logs``,
``imports``; together :class:`~conveyor.backends.sql.ops.SqlOperations`) are mixins of
a store's backend class. Each is written once against this class: a store subclasses
them and says how it reads one statement, opens a transaction, wakes idle workers and
tells the time. Everything else that differs between stores is the
:class:`~conveyor.backends.sql.dialect.Dialect`'s.

Example (SQLite's glue, ``sqlite/ops.py``)::

    class SQLiteOpsMixin(SqlOperations):
        _dialect = SQLITE

        def _ops_rows(self, sql, args=()):
            return self._read(sql, args)

        def _ops_tx(self):
            return self._write()
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from conveyor.backends.base import IntegrityProblem
from conveyor.backends.sql.dialect import Dialect, Executor


class SqlStore:
    """The hooks a SQL store's backend gives the engine's operations."""

    #: How this store spells the statements.
    _dialect: Dialect

    def _ops_rows(
        self, sql: str, args: Sequence[object] | Mapping[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        """The rows of one read statement (already in the driver's style)."""
        raise NotImplementedError

    def _ops_tx(self) -> AbstractContextManager[Executor]:
        """One write transaction: committed when the block ends, rolled back on error."""
        raise NotImplementedError

    def _ops_sent(self) -> AbstractContextManager[Executor]:
        """One write transaction whose statements read nothing back while it runs: of
        what each ``execute`` answers, only ``rowcount`` is read, once the block has
        committed. A store that can send them all before any answer comes back
        (PostgreSQL's pipeline: one round trip, its closing Sync commits) overrides
        it; by default it is :meth:`_ops_tx`, each count read as its statement runs."""
        return _answered_at_once(self._ops_tx())

    def _search_note_each(self, ex: Executor, job_ids: Sequence[str]) -> None:
        """Jobs whose searched text changed outside the writes the store's triggers see
        (log lines, imports), for its search index filled after the fact: one pending
        row each (a range over imported ids could span months of other jobs). Nothing
        where the store has no such index (SQLite and PostgreSQL override it)."""

    def _ops_wake(self, ex: Executor) -> None:
        """Wake idle workers when ``ex``'s transaction commits (jobs became ready).
        Nothing by default: a store whose commits wake them already."""

    def _ops_now(self) -> float:
        """The store's clock (epoch seconds), for a read outside a transaction."""
        raise NotImplementedError

    def _ops_integrity_extra(self) -> list[IntegrityProblem]:
        """The store's own checks after the shared audit (SQLite: ``quick_check``)."""
        return []


class _Counted:
    """A statement's answer in :meth:`SqlStore._ops_sent`: its row count, read as it ran
    (the store's cursor may be reused by the next statement); no rows to read back."""

    __slots__ = ("rowcount",)

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        raise TypeError("a statement sent in _ops_sent reads nothing back")

    fetchall = fetchone


class _Counting:
    """``ex`` answering row counts (:class:`_Counted`)."""

    __slots__ = ("_ex",)

    def __init__(self, ex: Executor) -> None:
        self._ex = ex

    def execute(self, query: Any, params: Any = ()) -> _Counted:
        return _Counted(self._ex.execute(query, params).rowcount)

    def executemany(self, query: Any, params: Any) -> object:
        return self._ex.executemany(query, params)


@contextmanager
def _answered_at_once(tx: AbstractContextManager[Executor]) -> Iterator[Executor]:
    with tx as ex:
        yield _Counting(ex)
