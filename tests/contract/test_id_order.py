"""Job ids order the same on every backend: as bytes (UTF-8), the order SQLite's BINARY
collation and Redis's sorted sets give. Listing, ``--after`` paging (both directions)
and the claim's tie-break between equally urgent jobs all follow it, for ids that mix
case, digits and punctuation, where a database's language collation would sort them
another way (``a`` before ``B``, ``-`` and ``_`` ignored). PostgreSQL gets it from its
``COLLATE "C"`` id columns (tests/integration/test_postgres_collation.py runs the same
checks on a database whose default collation is a language's)."""

from __future__ import annotations

import time

from conveyor.backends.base import Backend, JobInsertParams, JobListParams
from tests.contract.helpers import claim, register

#: Mixed case, digits, punctuation and one non-ASCII id. Byte order puts '-' < '.' <
#: digits < upper case < '_' < lower case < '~' < 'é'; English collation would not.
ODD_IDS = (
    "job-b", "Job-A", "job_a", "JOB.c", "job~z", "job-B", "a", "B", "_x", "-y", "0",
    "a-b", "a_b", "aB", "Ab", "ab", "a.b", "Z9", "z9", "é",
)  # fmt: skip


def byte_order(ids: tuple[str, ...] | list[str]) -> list[str]:
    return sorted(ids, key=lambda i: i.encode())


def insert_odd_ids(backend: Backend) -> None:
    """The ids, in an order that is none of the expected ones, all equally urgent."""
    due = time.time() - 60  # the same due time for each: only the id breaks the tie
    backend.job_insert_many(
        [
            JobInsertParams(id=i, task="t", queue="q", payload="{}", run_at=due)
            for i in reversed(ODD_IDS)
        ]
    )


def page_through(backend: Backend, *, descending: bool, limit: int = 3) -> list[str]:
    seen: list[str] = []
    after = None
    while True:
        page = backend.job_list(JobListParams(after_id=after, limit=limit, descending=descending))
        if not page:
            return seen
        seen += [j.id for j in page]
        after = page[-1].id


def check_id_order(backend: Backend) -> None:
    """The whole check (shared with the PostgreSQL collation test)."""
    insert_odd_ids(backend)
    expected = byte_order(ODD_IDS)
    assert [j.id for j in backend.job_list(JobListParams(limit=100))] == expected
    assert page_through(backend, descending=False) == expected
    assert page_through(backend, descending=True) == expected[::-1]
    middle = expected[7]
    after = backend.job_list(JobListParams(after_id=middle, limit=100))
    assert [j.id for j in after] == expected[8:]
    register(backend)
    assert [j.id for j in claim(backend, 5)] == expected[:5]
    assert [j.id for j in claim(backend, 100)] == expected[5:]


def test_ids_list_page_and_break_claim_ties_in_byte_order(backend: Backend) -> None:
    check_id_order(backend)
