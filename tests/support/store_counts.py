"""Count the work a backend asks of its store: SQLite statements and write transactions
(the connection's own trace callback), Redis round trips (a counting redis-py
connection class), PostgreSQL statements and transactions (the server's own
pg_stat_statements, for the backend's database only). Nothing is replaced but the
instruments: the real store answers.

Example (in a test)::

    counts = StoreCounts.attach(app.backend)
    Worker(app, burst=True).run()
    counts.detach()
    print(counts.per_job(10_000))   # {'transactions': 0.1, 'statements': 0.9}
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import redis

from conveyor.backends.base import Backend


class _CountingConnection(redis.Connection):
    """A redis-py connection that counts each send: a command or a whole pipeline is one
    write of packed bytes, answered by one read, so sends are round trips."""

    counter: StoreCounts | None = None

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if self.counter is not None:
            self.counter.add("round_trips")
        super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]


def _without_comments(sql: str) -> str:
    """The statement after its leading "--" comment lines and blanks."""
    text = sql.lstrip()
    while text.startswith("--"):
        text = text.partition("\n")[2].lstrip()
    return text


@dataclass
class StoreCounts:
    """Counters of one backend's store work since :meth:`attach`."""

    backend: Backend
    counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _restore: Any = None

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] = self.counts.get(name, 0) + n

    @classmethod
    def attach(cls, backend: Backend) -> StoreCounts:
        """Start counting on ``backend`` (``sqlite`` or ``redis``)."""
        counter = cls(backend)
        if backend.name == "sqlite":
            conn = backend.connection  # type: ignore[attr-defined]
            conn.set_trace_callback(counter._on_statement)
            counter._restore = lambda: conn.set_trace_callback(None)
        elif backend.name == "redis":
            client = backend.client  # type: ignore[attr-defined]
            old = client.connection_pool
            connection_class = type("Counting", (_CountingConnection,), {"counter": counter})
            # A fresh pool of the same settings whose connections count; the old one is
            # put back (and this one closed) on detach.
            client.connection_pool = redis.ConnectionPool(
                connection_class=connection_class, **old.connection_kwargs
            )

            def restore() -> None:
                client.connection_pool.disconnect()
                client.connection_pool = old

            counter._restore = restore
        elif backend.name == "postgres":
            counter._restore = _PostgresStatements(counter, backend.target.conninfo).read  # type: ignore[attr-defined]
        else:  # pragma: no cover - a new backend needs its own instrument here
            raise NotImplementedError(f"no store counter for backend {backend.name!r}")
        return counter

    def detach(self) -> None:
        if self._restore is not None:
            self._restore()
            self._restore = None

    def _on_statement(self, sql: str) -> None:
        # Statements run by triggers are reported as "-- TRIGGER name": part of the
        # statement that fired them, not a statement of their own. Only that prefix: the
        # packaged queries (backends/sqlite/queries/*.sql) begin with "--" comments too,
        # and are statements.
        if sql.startswith("-- TRIGGER "):
            self.add("trigger_statements")
            return
        self.add("statements")
        head = _without_comments(sql)[:16].upper()
        if head.startswith("BEGIN"):
            self.add("transactions")
        elif head.startswith("COMMIT"):
            self.add("commits")

    def per_job(self, jobs: int) -> dict[str, float]:
        with self._lock:
            return {name: n / jobs for name, n in sorted(self.counts.items())}


class _PostgresStatements:
    """The server's count of what every session sent to one database, from
    ``pg_stat_statements`` (the cluster must preload it): exact, updated as each
    statement ends, and blind to nothing the backend sends, whichever connection,
    pipeline or thread sent it. Read through the cluster's ``postgres`` database, so the
    counter's own statements are not counted.

    ``statements``: every top-level statement, BEGIN and COMMIT included (as SQLite's
    counter does); ``transactions``: the BEGINs (psycopg opens each transaction with
    one; a statement in autocommit, the listener's LISTEN, is a statement only)."""

    def __init__(self, counter: StoreCounts, conninfo: str) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        self.counter = counter
        database = conninfo_to_dict(conninfo).get("dbname")
        self.conn = psycopg.connect(make_conninfo(conninfo, dbname="postgres"), autocommit=True)
        self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        row = self.conn.execute(
            "SELECT oid FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        assert row is not None, f"no database {database!r}"
        self.dboid = int(row[0])
        self.conn.execute("SELECT pg_stat_statements_reset(0, %s::oid, 0)", (self.dboid,))

    def read(self) -> None:
        row = self.conn.execute(
            "SELECT coalesce(sum(calls), 0), "
            "coalesce(sum(calls) FILTER (WHERE upper(btrim(query)) LIKE 'BEGIN%%'), 0) "
            "FROM pg_stat_statements WHERE dbid = %s::oid",
            (self.dboid,),
        ).fetchone()
        assert row is not None
        self.counter.add("statements", int(row[0]))
        self.counter.add("transactions", int(row[1]))
        self.conn.close()
