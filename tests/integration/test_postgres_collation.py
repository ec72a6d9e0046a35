"""Job ids on PostgreSQL are ``COLLATE "C"``: every column that holds one, so ids sort
as bytes (as on SQLite and Redis) whatever the database's collation, the primary key's
index serves listing order and ``--after`` paging, and joins between id columns compare
in the collation of their indexes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from conveyor.backends.base import JobListParams
from conveyor.backends.postgres.backend import PostgresBackend
from conveyor.backends.postgres.dialect import POSTGRES
from conveyor.backends.postgres.sql import JOB_COLUMNS
from conveyor.backends.sql.filters import job_list_sql
from tests.contract.helpers import insert
from tests.contract.test_id_order import check_id_order
from tests.support.postgres_server import drop_schema, with_schema

#: Every job-id column of the schema (the rule below must find exactly these).
JOB_ID_COLUMNS = {
    ("jobs", "id"),
    ("attempts", "job_id"),
    ("job_logs", "job_id"),
    ("job_deps", "parent_id"),
    ("job_deps", "child_id"),
    ("periodic_schedules", "last_job_id"),
    ("periodic_slots", "job_id"),
    ("job_steps", "job_id"),
    ("job_events", "job_id"),
}


@pytest.fixture
def backend(postgres_url: str) -> Iterator[PostgresBackend]:
    schema = f"t_{uuid.uuid4().hex}"
    found = PostgresBackend(with_schema(postgres_url, schema))
    yield found
    found.close()
    drop_schema(postgres_url, schema)


def test_every_job_id_column_is_collate_c(backend: PostgresBackend) -> None:
    with backend._tx() as cur:
        rows = cur.execute(
            "SELECT table_name, column_name, collation_name FROM information_schema.columns "
            "WHERE table_schema = %s AND data_type = 'text' AND (column_name LIKE '%%job_id' "
            "OR column_name IN ('parent_id', 'child_id') "
            "OR (table_name = 'jobs' AND column_name = 'id'))",
            (backend.schema,),
        ).fetchall()
    assert {(t, c) for t, c, _ in rows} == JOB_ID_COLUMNS
    assert {(t, c): coll for t, c, coll in rows} == dict.fromkeys(JOB_ID_COLUMNS, "C")


def _plan_nodes(plan: dict[str, object]) -> Iterator[dict[str, object]]:
    yield plan
    for child in plan.get("Plans", []):  # type: ignore[attr-defined]
        yield from _plan_nodes(child)


@pytest.mark.parametrize(
    "params",
    [
        JobListParams(limit=50),
        JobListParams(limit=50, after_id="0"),
        JobListParams(limit=50, descending=True),
        JobListParams(limit=50, descending=True, after_id="z"),
    ],
    ids=["first", "after", "newest-first", "newest-first-after"],
)
def test_a_listing_page_reads_the_primary_key_in_order(
    backend: PostgresBackend, params: JobListParams
) -> None:
    # Plans made with the alternatives priced out: a Sort still appears when the index
    # cannot give this order (ids in the database's collation), whatever the table size.
    insert(backend, 20)
    sql, args = job_list_sql(POSTGRES, params, JOB_COLUMNS)
    with backend._tx() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("SET LOCAL enable_sort = off")
        row = cur.execute(f"EXPLAIN (FORMAT JSON) {sql}", args).fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(str(row[0]))
    nodes = list(_plan_nodes(plan[0]["Plan"]))
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Incremental Sort")], nodes
    scans = [n for n in nodes if n.get("Index Name") == "jobs_pkey"]
    assert scans and scans[0]["Node Type"] == "Index Scan", nodes
    if params.after_id is not None:  # the cursor bounds the index scan, no filter
        assert "id" in str(scans[0].get("Index Cond")), nodes


@pytest.fixture
def language_collated_url(postgres_url: str) -> Iterator[str]:
    """A fresh database whose default collation is English (ICU): ``a`` < ``B``,
    punctuation ignored at first, unlike bytes. A server's default is often like this
    (en_US.UTF-8); the test cluster's C.UTF-8 would hide the difference."""
    name = f"t_icu_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' "
            "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
        )
    parts = urlsplit(postgres_url)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_ids_order_as_bytes_on_a_database_with_a_language_collation(
    language_collated_url: str,
) -> None:
    with psycopg.connect(language_collated_url) as conn:
        differs = conn.execute("SELECT 'B' < 'a', 'B' < 'a' COLLATE \"C\"").fetchone()
    assert differs == (False, True)  # the database really sorts otherwise
    backend = PostgresBackend(language_collated_url)
    try:
        check_id_order(backend)
    finally:
        backend.close()
