"""The enqueue floors as arms: what the raw client does for the same rows, measured in
E1 and E2 beside every system, in the same run and the same rotation, so an enqueue
figure is read as a ratio to its floor (issue 16; definitions in :mod:`bench.floors`).

* ``floor-sqlite``: E1 is ``BEGIN IMMEDIATE`` + one ``INSERT`` of a conveyor job row +
  ``COMMIT`` per job, raw :mod:`sqlite3`; E2 is one transaction with one
  ``executemany`` of every row. Same file layout, schema, indexes and PRAGMAs as the
  conveyor-sqlite arms (conveyor creates the schema in ``open``, untimed).
* ``floor-redis``: E1 is one bare redis-py round trip (``PING``) per job; E2 is one
  pipeline of ``HSET`` (the job's fields) + ``ZADD`` (its queue) per job.

Each row is built inside the timed window (id, JSON payload), as every system builds its
own. Not a job system: W1-W5 do not apply.

Example::

    python -m bench run --suite E1,E2 --arms floor-sqlite,conveyor-sqlite-default
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from bench import floors
from bench.arms.base import Arm, Item, Variant, env

_NOT_A_WORKER = "a floor (the raw client), not a job system"
_ONLY_ENQUEUE = tuple((s, _NOT_A_WORKER) for s in ("W1", "W2", "W3", "W4", "W5"))


class FloorArm(Arm):
    def __init__(self, variant: Variant) -> None:
        super().__init__(variant)
        self.conn: sqlite3.Connection | None = None
        self.client: Any = None
        self.prefix = os.urandom(4).hex()
        self.sql = ""

    def open(self) -> None:
        if self.variant.storage == "sqlite":
            self.conn = floors._open(env("BENCH_SQLITE_PATH"))
            self.sql = floors._insert_sql()
        else:
            import redis

            self.client = redis.Redis.from_url(env("BENCH_REDIS_URL"), decode_responses=True)
            self.client.ping()

    def _row(self, item: Item) -> tuple[Any, ...]:
        i, t0, kind = item
        payload = json.dumps({"args": [i, t0, kind], "kwargs": {}}, separators=(",", ":"))
        return floors.row(f"{self.prefix}{i:012d}", payload, time.time())

    def enqueue_one(self, item: Item) -> object:
        if self.conn is not None:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute(self.sql, self._row(item))
            self.conn.execute("COMMIT")
        else:
            self.client.ping()
        return None

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        if self.conn is not None:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(self.sql, [self._row(it) for it in items])
            self.conn.execute("COMMIT")
            return
        pipe = self.client.pipeline(transaction=False)
        for item in items:
            floors.queue_job(pipe, f"floor:{self.prefix}", self._row(item))
        pipe.execute()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.client is not None:
            self.client.close()


ARM = FloorArm
VARIANTS = [
    Variant(
        "floor-sqlite",
        "floor_arm",
        "sqlite",
        "-",
        0,
        "raw sqlite3: E1 BEGIN IMMEDIATE + INSERT + COMMIT per job, E2 one executemany in one "
        "transaction; conveyor's jobs table, WAL, synchronous=NORMAL",
        unsupported=_ONLY_ENQUEUE,
    ),
    Variant(
        "floor-redis",
        "floor_arm",
        "redis",
        "-",
        0,
        "raw redis-py: E1 one PING per job, E2 one pipeline of HSET + ZADD per job",
        unsupported=_ONLY_ENQUEUE,
    ),
]
