"""The operator actions log on PostgreSQL: one ``action_log`` table (``schema_002.sql``).

A mixin of :class:`~conveyor.backends.postgres.backend.PostgresBackend` (feature
``action_log``), apart from the job engine: each call is one statement through the
backend's ``_once`` (autocommit, one round trip); the statements are the SQL stores'
shared ones (``sql/action_log.py``). Every entry is kept.

Example (needs a server; the test suite starts one)::

    backend.action_log_insert(action_log_entry("ada", "cli", "retry", count=1))  # '1'
    backend.action_log_list(ActionLogListParams(limit=10))
"""

from __future__ import annotations

from collections.abc import Callable

from conveyor.backends.base import ActionLogInsertParams, ActionLogListParams, ActionLogRecord
from conveyor.backends.sql.action_log import (
    action_record,
    before_bound,
    insert_args,
    insert_sql,
    list_sql,
)

_INSERT = insert_sql("%s")
_LIST = list_sql("%s")


class PostgresActionLog:
    """``action_log_insert`` and ``action_log_list`` on the backend's pool."""

    _once: Callable[..., list[tuple[object, ...]]]

    def action_log_insert(self, params: ActionLogInsertParams) -> str:
        return str(self._once(_INSERT, insert_args(params))[0][0])

    def action_log_list(self, params: ActionLogListParams) -> list[ActionLogRecord]:
        before = before_bound(params.before_id)
        if before is None or params.limit <= 0:
            return []
        return [action_record(r) for r in self._once(_LIST, (before, params.limit))]
