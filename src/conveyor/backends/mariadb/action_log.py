"""The operator actions log on MariaDB: one ``action_log`` table (``schema.sql``).

A mixin of :class:`~conveyor.backends.mariadb.backend.MariaDBBackend` (feature
``action_log``), apart from the job engine: each call is one short transaction on the
thread's connection. The statements are the SQL stores' shared ones
(``sql/action_log.py``) but for the insert's id: MariaDB has no ``INSERT ... RETURNING``
before 10.5 and PyMySQL hands the AUTO_INCREMENT id back as ``lastrowid`` anyway.

Example (needs a server; the test suite starts one)::

    backend.action_log_insert(action_log_entry("ada", "cli", "retry", count=1))  # '1'
    backend.action_log_list(ActionLogListParams(limit=10))
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from conveyor.backends.base import ActionLogInsertParams, ActionLogListParams, ActionLogRecord
from conveyor.backends.sql.action_log import action_record, before_bound, insert_args, list_sql
from conveyor.backends.sql.dialect import Executor

_INSERT = (
    "INSERT INTO action_log (at, actor, source, action, count, job_ids, detail, host) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
_LIST = list_sql("%s")


class MariaDBActionLog:
    """``action_log_insert`` and ``action_log_list`` on the backend's connections."""

    _tx: Callable[[], AbstractContextManager[Executor]]

    def action_log_insert(self, params: ActionLogInsertParams) -> str:
        with self._tx() as ex:
            ex.execute(_INSERT, insert_args(params))
            return str(ex.execute("SELECT LAST_INSERT_ID()").fetchone()[0])

    def action_log_list(self, params: ActionLogListParams) -> list[ActionLogRecord]:
        before = before_bound(params.before_id)
        if before is None or params.limit <= 0:
            return []
        with self._tx() as ex:
            return [action_record(r) for r in ex.execute(_LIST, (before, params.limit)).fetchall()]
