"""The Operations protocol on any SQL store, less ``backup`` (each store's own tool):
the mixins of :mod:`~conveyor.backends.sql.ops_read`, ``ops_bulk``, ``logs`` and
``imports`` together, with ``steps`` (the Durable protocol). A store's backend inherits
:class:`SqlOperations` and fills in
the hooks of :class:`~conveyor.backends.sql.store.SqlStore`.

Example:
    >>> sorted(m for m in vars(SqlBulkOps) if m.startswith("job_"))[:2]
    ['job_cancel_many', 'job_clear_results']
"""

from __future__ import annotations

from conveyor.backends.sql.imports import SqlImports
from conveyor.backends.sql.logs import SqlLogs
from conveyor.backends.sql.ops_bulk import SqlBulkOps
from conveyor.backends.sql.ops_read import SqlReads
from conveyor.backends.sql.steps import SqlSteps

__all__ = ["SqlBulkOps", "SqlOperations"]


class SqlOperations(SqlReads, SqlBulkOps, SqlLogs, SqlImports, SqlSteps):
    """Every Operations method but ``backup``, and the Durable protocol (durable jobs:
    ``sql/steps.py``), written once for the SQL stores."""
