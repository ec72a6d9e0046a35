"""A MariaDB store made by schema version 1 (before schedules could be paused) gains
the new columns of ``periodic_schedules`` when a newer conveyor opens it, and keeps its
schedules; version 2 is recorded."""

from __future__ import annotations

import pytest

import conveyor
from conveyor.backends.base import JobKeysParams, PeriodicFireParams, PeriodicPauseParams
from conveyor.backends.mariadb.connection import SCHEMA_VERSION
from tests.support import mariadb_server


def test_a_version_1_store_gains_the_schedule_columns(request: pytest.FixtureRequest) -> None:
    url = mariadb_server.isolated_url(request)
    app = conveyor.App(url)
    backend = app.backend
    backend.periodic_fire(PeriodicFireParams("nightly", "every 60s", [], 60.0))
    with backend._tx() as ex:  # type: ignore[attr-defined]  # back to what version 1 made
        ex.execute(
            "ALTER TABLE periodic_schedules DROP COLUMN paused, DROP COLUMN run_requested_at"
        )
        ex.execute("DELETE FROM schema_version")
        ex.execute("INSERT INTO schema_version (version) VALUES (1)")
    app.close()
    again = conveyor.App(url)
    assert again.backend.periodic_pause(PeriodicPauseParams("nightly"))
    (record,) = again.backend.periodic_list()
    assert record.name == "nightly" and record.paused
    with again.backend._tx() as ex:  # type: ignore[attr-defined]
        version = ex.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
    assert int(version) == SCHEMA_VERSION == 6  # 6: jobs_task (the sorted listing)
    again.close()


def test_a_version_4_store_gains_the_search_tables(request: pytest.FixtureRequest) -> None:
    """Version 5 adds the search index's tables (empty: the index stays off until
    ``conveyor search-index on``); a version-4 store gets them on open, keeps its jobs,
    and its searches scan until the index is turned on, then answer from it."""
    url = mariadb_server.isolated_url(request)
    app = conveyor.App(url)

    @app.task(name="mail.send_welcome")
    def send_welcome(user: str) -> None: ...

    job = send_welcome.enqueue("customer_4242")
    with app.backend._tx() as ex:  # type: ignore[attr-defined]  # back to version 4
        ex.execute("DROP TABLE job_search_pending, job_search_on, job_search_docs")
        ex.execute("DELETE FROM schema_version")
        ex.execute("INSERT INTO schema_version (version) VALUES (4)")
    app.close()
    again = conveyor.App(url)
    backend = again.backend
    assert not backend.search_index_enabled()  # type: ignore[attr-defined]
    page = again.search("customer_4242")
    assert [j.id for j in page.jobs] == [job.id] and page.scanned == 1  # a scan
    backend.search_index_set(True)  # type: ignore[attr-defined]
    page = again.search("customer_4242")
    assert [j.id for j in page.jobs] == [job.id] and page.scanned is None  # the index
    again.close()


def test_a_version_5_store_gains_the_sort_index(request: pytest.FixtureRequest) -> None:
    """Version 6 adds jobs_task (the dashboard's indexed sort by task) to a jobs
    table made before it; its jobs are kept and walked by task."""
    url = mariadb_server.isolated_url(request)
    app = conveyor.App(url)

    @app.task(name="mail.send_welcome")
    def send_welcome(user: str) -> None: ...

    job = send_welcome.enqueue("customer_4242")
    with app.backend._tx() as ex:  # type: ignore[attr-defined]  # back to version 5
        ex.execute("DROP INDEX jobs_task ON jobs")
        ex.execute("DELETE FROM schema_version")
        ex.execute("INSERT INTO schema_version (version) VALUES (5)")
    app.close()
    again = conveyor.App(url)
    with again.backend._tx() as ex:  # type: ignore[attr-defined]
        found = ex.execute(
            "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "
            "DATABASE() AND TABLE_NAME = 'jobs'"
        ).fetchall()
    assert "jobs_task" in {str(r[0]) for r in found}
    keys = again.backend.job_keys(JobKeysParams("task"))
    assert keys == ["mail.send_welcome"] and job.id
    again.close()
