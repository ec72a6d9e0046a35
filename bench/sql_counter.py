"""Store statements and commits, counted the same way for every arm of the durable-steps
benchmark (conveyor's and DBOS Transact's, each in its own process and venv). Standard
library only (psycopg imported lazily): DBOS's venv imports it too.

- **SQLite**: :func:`count_sqlite` wraps ``sqlite3.connect`` so every connection the
  process opens afterwards (the arm's own, SQLAlchemy's pool's) reports each statement
  it runs to a trace callback. A *commit* is a transaction that wrote: a ``COMMIT`` after
  a write, or a write outside any transaction (autocommit). Read-only transactions are
  statements, not commits.
- **PostgreSQL**: :func:`pg_snapshot` reads the database's ``xact_commit`` (every
  transaction, read-only ones included), the ``pg_stat_statements`` calls of that
  database (the cluster preloads it, :data:`PG_SETTINGS`), the cluster's WAL flushes
  (``pg_stat_wal.wal_sync``: the fsyncs the arm's commits waited on) and the WAL position; the
  commits that wrote are the ``COMMIT`` records between two positions
  (:func:`wal_commits`, ``pg_waldump``), the same definition as on SQLite.

Example::

    counter = count_sqlite()
    ...  # the measured work
    counter.statements, counter.commits
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import threading
from typing import Any

#: What the benchmark's PostgreSQL cluster adds to :data:`bench.postgres_cluster.DURABLE_SETTINGS`
#: (PostgreSQL's defaults: fsync and synchronous_commit on): statement counts.
PG_SETTINGS = {"max_connections": "300", "shared_preload_libraries": "'pg_stat_statements'"}

#: A statement that writes: DML anywhere in it (``WITH ... UPDATE``, ``INSERT ... SELECT``)
#: or DDL at its head.
_WRITE = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE)\b|^\s*(CREATE|DROP|ALTER)\b", re.I)


class SqliteCounter:
    """Statements and writing commits of every sqlite3 connection opened after
    :func:`count_sqlite`; ``reset()`` starts the measured window."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statements = 0
        self.commits = 0

    def reset(self) -> None:
        with self.lock:
            self.statements = self.commits = 0

    def watch(self, conn: sqlite3.Connection) -> None:
        dirty = [False]  # this connection's open transaction has written

        def trace(sql: str) -> None:
            head = sql.lstrip()[:8].upper()
            wrote = bool(_WRITE.search(sql))
            with self.lock:
                self.statements += 1
                if head.startswith(("COMMIT", "END")):
                    self.commits += dirty[0]
                    dirty[0] = False
                elif head.startswith("ROLLBACK"):
                    dirty[0] = False
                elif wrote:
                    if conn.in_transaction:
                        dirty[0] = True
                    else:
                        self.commits += 1

        conn.set_trace_callback(trace)


def count_sqlite(pragmas: tuple[str, ...] = ()) -> SqliteCounter:
    """Count every later sqlite3 connection's statements (see the module docstring);
    ``pragmas`` are run on each first (a peer run with conveyor's PRAGMAs), uncounted."""
    counter = SqliteCounter()
    connect = sqlite3.connect

    def counted(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        for pragma in pragmas:
            conn.execute(f"PRAGMA {pragma}").fetchall()
        counter.watch(conn)
        return conn

    # SQLAlchemy's pysqlite dialect calls sqlite3.dbapi2.connect: both names.
    sqlite3.connect = sqlite3.dbapi2.connect = counted  # type: ignore[assignment]
    return counter


def pg_snapshot(url: str) -> dict[str, Any]:
    """This database's transaction and statement counters and the WAL position now."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit, pg_current_wal_lsn()::text,"
            " (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s"
            "   WHERE s.dbid = d.datid)"
            " FROM pg_stat_database d WHERE datname = current_database()"
        ).fetchone()
        # The cluster's WAL flushes (PostgreSQL 14-17; 18 moved them to pg_stat_io):
        # one arm runs at a time, so their delta is that arm's fsyncs.
        wal = conn.execute(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'pg_stat_wal'::regclass "
            "AND attname = 'wal_sync'"
        ).fetchone()
        syncs = (
            conn.execute("SELECT wal_sync FROM pg_stat_wal").fetchone() if wal and wal[0] else None
        )
    assert row is not None
    return {"xact_commit": int(row[0]), "lsn": str(row[1]), "statements": int(row[2]),
            "wal_sync": None if syncs is None else int(syncs[0])}  # fmt: skip


def pg_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Counters between two :func:`pg_snapshot` s (the LSNs kept for :func:`wal_commits`)."""
    return {
        "xact_commit": after["xact_commit"] - before["xact_commit"],
        "statements": after["statements"] - before["statements"],
        "wal_sync": None
        if before.get("wal_sync") is None or after.get("wal_sync") is None
        else after["wal_sync"] - before["wal_sync"],
        "lsn": (before["lsn"], after["lsn"]),
    }


def wal_commits(pg_waldump: str, wal_dir: str, start: str, end: str, as_user: str | None) -> int:
    """``COMMIT`` records (transactions that wrote) in the WAL between two positions."""
    command = [pg_waldump, "-p", wal_dir, "-s", start, "-e", end, "-r", "Transaction"]
    if as_user:
        command = ["runuser", "-u", as_user, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    return sum(1 for line in done.stdout.splitlines() if "desc: COMMIT" in line)
