"""The PostgreSQL backend: jobs in the database the application already runs.

One psycopg 3 connection pool per backend object (``self._pool``; see connection.py
for its settings); every method is one transaction through ``with self._tx() as cur:``.
Claims are ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n)
RETURNING`` over the partial index of ready jobs, so concurrent workers never wait on
each other's rows; every transition out of ``running`` is fenced by the claim token.
Wake-ups travel by LISTEN/NOTIFY. docs/postgres.md has the schema and the locks held.

Example (needs a server; the test suite starts one)::

    backend = PostgresBackend("postgresql://app@db/main?schema=conveyor")
    backend.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    backend.job_get_many(["j1"])[0].state    # JobState.QUEUED
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from conveyor.backends import decoding
from conveyor.backends.base import (
    JobInsertBatchParams,
    JobInsertParams,
    JobRecord,
)
from conveyor.backends.postgres import sql
from conveyor.backends.postgres.connection import open_pool
from conveyor.backends.postgres.ops import PostgresOperations
from conveyor.backends.postgres.url import parse_postgres_url

if TYPE_CHECKING:
    import psycopg

#: The channel every insert or release notifies (payload: the schema, so one database
#: may hold several conveyor schemas; listeners ignore the others').
CHANNEL = "conveyor"

# -- FEATURES: what this backend implements (names: conveyor.backends.protocols.FEATURES).
FEATURES: frozenset[str] = frozenset({"filters", "purge", "queues", "logs", "integrity"})


class PostgresBackend(PostgresOperations):
    """Backend on a PostgreSQL schema. Internal: use ``conveyor.App("postgresql://...")``."""

    name = "postgres"
    features = FEATURES

    def __init__(self, url: str) -> None:
        self.target = parse_postgres_url(url)
        self.url = self.target.safe_url
        self.schema = self.target.schema
        self._pool = open_pool(self.target)

    # -- plumbing ------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[tuple[object, ...]]]:
        """One transaction on a pooled connection: committed when the block ends,
        rolled back when it raises."""
        with self._pool.connection() as conn, conn.cursor() as cur:
            yield cur

    def _notify(self, cur: psycopg.Cursor[tuple[object, ...]]) -> None:
        """Wake listening workers when this transaction commits (a rollback sends
        nothing; PostgreSQL delivers one notification per transaction however many)."""
        cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.schema))

    def close(self) -> None:
        self._pool.close()

    # -- jobs ----------------------------------------------------------------------------

    def job_get_many(self, ids: Sequence[str]) -> list[JobRecord]:
        if not ids:
            return []
        with self._tx() as cur:
            cur.execute(f"SELECT {sql.JOB_COLUMNS} FROM jobs WHERE id = ANY(%s)", (list(ids),))
            found = {r.id: r for r in map(decoding.job_record, cur.fetchall())}
        return [found[i] for i in ids if i in found]

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        if isinstance(params, JobInsertBatchParams):
            self._insert_batch(params)
            return params.ids
        if not params:
            return []
        with self._tx() as cur:
            self._insert_plain(cur, params)
            self._notify(cur)
        return [p.id for p in params]

    def _insert_batch(self, params: JobInsertBatchParams) -> None:
        with self._tx() as cur:
            cur.execute(
                sql.JOB_INSERT_BATCH,
                {
                    "task": params.task,
                    "queue": params.queue,
                    "run_at": params.run_at,
                    "priority": params.priority,
                    "max_attempts": params.max_attempts,
                    "timeout": params.timeout,
                    "lease": params.lease,
                    "ids": list(params.ids),
                    "payloads": list(params.payloads),
                },
            )
            self._notify(cur)

    @staticmethod
    def _insert_plain(
        cur: psycopg.Cursor[tuple[object, ...]], params: Sequence[JobInsertParams]
    ) -> None:
        cur.execute(
            sql.JOB_INSERT,
            (
                [p.id for p in params],
                [p.task for p in params],
                [p.queue for p in params],
                [p.priority for p in params],
                [p.payload for p in params],
                [p.max_attempts for p in params],
                [p.run_at for p in params],
                [p.timeout for p in params],
                [p.lease for p in params],
            ),
        )
