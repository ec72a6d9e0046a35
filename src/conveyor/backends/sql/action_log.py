"""The operator actions log's statements and row shape, shared by the SQL stores.

Every SQL store keeps the log in one ``action_log`` table of the same columns (SQLite
``schema_006.sql``, PostgreSQL ``schema_002.sql``); only the placeholder differs, so
the statements are written once here with ``{p}`` for it, and each store's
``action_log.py`` mixin runs them on its own connection.

Example:
    >>> insert_sql("?").count("?"), list_sql("%s").endswith("LIMIT %s")
    (8, True)
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from conveyor.backends.base import ActionLogInsertParams, ActionLogRecord

COLUMNS = "id, at, actor, source, action, count, job_ids, detail, host"
_INSERTED = "at, actor, source, action, count, job_ids, detail, host"


def insert_sql(p: str) -> str:
    """One entry in, its id back (``RETURNING``: SQLite 3.35+ and PostgreSQL)."""
    marks = ", ".join([p] * 8)
    return f"INSERT INTO action_log ({_INSERTED}) VALUES ({marks}) RETURNING id"


def list_sql(p: str) -> str:
    """Entries older than an id, newest first, at most a limit."""
    return f"SELECT {COLUMNS} FROM action_log WHERE id < {p} ORDER BY id DESC LIMIT {p}"


def insert_args(params: ActionLogInsertParams) -> tuple[object, ...]:
    return (
        params.at,
        params.actor,
        params.source,
        params.action,
        params.count,
        json.dumps(list(params.job_ids)),
        params.detail,
        params.host,
    )


def before_bound(before_id: str | None) -> int | None:
    """The integer bound of ``before_id`` (None: an id no SQL store makes, so nothing
    is older).

    >>> before_bound(None) > 2**62, before_bound("12"), before_bound("x")
    (True, 12, None)
    """
    if before_id is None:
        return 2**63 - 1
    return int(before_id) if before_id.isdigit() and len(before_id) < 19 else None


def action_record(row: Sequence[object]) -> ActionLogRecord:
    """An entry from a row of :data:`COLUMNS`."""
    ids = json.loads(str(row[6]) or "[]")
    return ActionLogRecord(
        id=str(row[0]),
        at=float(str(row[1])),
        actor=str(row[2]),
        source=str(row[3]),
        action=str(row[4]),
        count=int(str(row[5])),
        job_ids=tuple(str(i) for i in ids),
        detail=str(row[7]),
        host=str(row[8]),
    )
