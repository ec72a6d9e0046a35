"""The Operations protocol on any SQL store, less ``backup`` (each store's own tool):
the mixins of :mod:`~conveyor.backends.sql.ops_read`, ``ops_bulk``, ``logs`` and
``imports`` together, with ``steps`` (the Durable protocol). A store's backend inherits
:class:`SqlOperations` and fills in
the hooks of :class:`~conveyor.backends.sql.store.SqlStore`.

Example:
    >>> sorted(m for m in vars(SqlBulkOps) if m.startswith("job_"))[:2]
    ['job_age_many', 'job_cancel_many']
"""

from __future__ import annotations

from conveyor.backends.search_scan import ScanSearch
from conveyor.backends.sql.imports import SqlImports
from conveyor.backends.sql.limits_ops import SqlLimitOps
from conveyor.backends.sql.logs import SqlLogs
from conveyor.backends.sql.ops_bulk import SqlBulkOps
from conveyor.backends.sql.ops_read import SqlReads
from conveyor.backends.sql.schedules import SqlSchedules
from conveyor.backends.sql.steps import SqlSteps

__all__ = ["SqlBulkOps", "SqlOperations"]


class SqlOperations(
    SqlReads, SqlBulkOps, SqlLogs, SqlImports, SqlSchedules, ScanSearch, SqlSteps, SqlLimitOps
):
    """Every Operations method but ``backup``, written once for the SQL stores (and the
    schedules' pause, resume and "run now", :mod:`~conveyor.backends.sql.schedules`;
    ``job_search`` by a bounded scan, which SQLite replaces by its FTS5 index; the Durable
    protocol of durable jobs, :mod:`~conveyor.backends.sql.steps`; the Flow protocol's
    operator methods: a sequence's release, limits changed live)."""
