"""The operator actions log on SQLite: one ``action_log`` table (``schema_006.sql``).

A mixin of :class:`~conveyor.backends.sqlite.backend.SQLiteBackend` (feature
``action_log``), apart from the job engine: it needs only the backend's ``_write`` and
``_read``; the statements are the SQL stores' shared ones (``sql/action_log.py``).
Every entry is kept (operator actions are rare; no purge of old entries yet).

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> from conveyor.backends.base import ActionLogListParams, action_log_entry
    >>> b = SQLiteBackend("sqlite:///:memory:")
    >>> b.action_log_insert(action_log_entry("ada", "cli", "retry", count=2, job_ids=["j1", "j2"]))
    '1'
    >>> [(r.actor, r.action, r.job_ids) for r in b.action_log_list(ActionLogListParams())]
    [('ada', 'retry', ('j1', 'j2'))]
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from conveyor.backends.base import ActionLogInsertParams, ActionLogListParams, ActionLogRecord
from conveyor.backends.sql.action_log import (
    action_record,
    before_bound,
    insert_args,
    insert_sql,
    list_sql,
)

_INSERT = insert_sql("?")
_LIST = list_sql("?")


class SQLiteActionLog:
    """``action_log_insert`` and ``action_log_list`` on the backend's connection."""

    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[tuple[object, ...]]]

    def action_log_insert(self, params: ActionLogInsertParams) -> str:
        with self._write() as conn:
            return str(conn.execute(_INSERT, insert_args(params)).fetchone()[0])

    def action_log_list(self, params: ActionLogListParams) -> list[ActionLogRecord]:
        before = before_bound(params.before_id)
        if before is None or params.limit <= 0:
            return []
        return [action_record(r) for r in self._read(_LIST, (before, params.limit))]
