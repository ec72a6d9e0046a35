"""SQLite's :class:`~conveyor.backends.sql.dialect.Dialect`: ``?`` placeholders, lists
as ``IN (...)`` in chunks under the variable limit, no row locks (every write holds
the database's write lock from ``BEGIN IMMEDIATE``), ``INSERT OR IGNORE``, this
process's clock; claims by ``UPDATE ... RETURNING``, a batch of successes as one JSON
parameter (``queries/finish.sql``).

Example:
    >>> SQLITE.insert_ignore("job_deps (parent_id, child_id) VALUES (?, ?)")
    'INSERT OR IGNORE INTO job_deps (parent_id, child_id) VALUES (?, ?)'
"""

from __future__ import annotations

import time

from conveyor.backends.sql.dialect import Dialect, Executor, named_queries
from conveyor.backends.sql.integrity import integrity_sql
from conveyor.backends.sqlite import rows
from conveyor.backends.sqlite.connection import load_query


def _clock(_: Executor) -> float:
    return time.time()


#: The audit's spellings (``sql/integrity_check.sql``). SQLite's columns hold any type
#: whatever they are declared as, so a row written around the API may hold text where a
#: number belongs (or a BLOB for text): those are checked by ``typeof`` and shown with
#: ``quote`` (which says what the value is); +inf (9e999) is the never-reached time.
#: Workers are judged by this process's clock (``:stale_before``, computed by the caller).
INTEGRITY = {
    "quote": "quote",
    "stale_before": ":stale_before",
    "queue_unusable": "(typeof(queue) != 'text' OR queue = '')",
    "waiting_on_text": "quote(waiting_on)",
    "run_at_text": "quote(run_at)",
    # text or a BLOB sorts after every number, and +inf is never reached: never promoted.
    "run_at_never": "(typeof(run_at) NOT IN ('integer', 'real') OR run_at >= 9e999)",
    "lease_text": "quote(lease_until)",
    # text or NULL never expires
    "lease_never": "typeof(lease_until) NOT IN ('integer', 'real')",
}

SQLITE = Dialect(
    name="sqlite",
    param="?",
    lock="",
    array=False,
    chunk=500,  # rows.chunks' size: well under SQLITE_MAX_VARIABLE_NUMBER everywhere
    ignore=("INSERT OR IGNORE", ""),
    clock=_clock,
    queries={
        "job_insert_flow": load_query("job_insert_flow"),
        "integrity_check": integrity_sql(INTEGRITY),
        **named_queries(load_query("claim")),
        **named_queries(load_query("finish")),
    },
    claimed=rows.claimed_job,
    claim_rows=rows.claim_rows,
    finish_batch="json",
)
