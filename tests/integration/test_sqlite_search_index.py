"""SQLite's search index (FTS5, ``search_index.sql``; off by default): turned on, it
indexes the jobs already there, answers searches (no scan) with the same answers as the
contract suite's scans, stays consistent through inserts, finishes and deletes (FTS5's
own integrity check), and turned off again, searches scan and writes skip it; the
``conveyor search-index`` command through a pipe."""

from __future__ import annotations

from pathlib import Path

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams
from conveyor.backends.sqlite.search import SQLiteSearch
from conveyor.states import FinishKind
from tests.contract import test_search as contract
from tests.integration.cli_run import conveyor as run


def _indexed(path: Path) -> conveyor.App:
    app = conveyor.App(f"sqlite:///{path}")
    backend = app.backend
    assert isinstance(backend, SQLiteSearch) and not backend.search_index_enabled()
    backend.search_index_set(True)
    return app


def test_the_contracts_language_from_the_index(tmp_path: Path) -> None:
    app = _indexed(tmp_path / "a.db")
    contract.test_one_language_finds_the_same_jobs_on_every_store(app, app.backend)
    assert app.search("send_welcome").scanned is None  # the index answered
    app.close()
    for name, test in (
        ("b.db", contract.test_pages_go_on_where_the_last_ended),
        ("c.db", contract.test_the_index_follows_deletes_and_retries),
    ):
        app = _indexed(tmp_path / name)  # each on a store of its own, as in the suite
        test(app, app.backend)
        app.close()


def test_index_follows_writes_and_turns_off_and_on(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="media.resize")
    def resize(path: str) -> None: ...

    jobs = [resize.enqueue(f"photo_{i}.png") for i in range(20)]
    assert app.search("photo_7").scanned == 20  # off: a scan
    on = run("search-index", "--url", app.url, "on", cwd=tmp_path)  # indexes these 20
    assert on.returncode == 0 and on.stdout.startswith("search index on")
    backend = app.backend
    (claimed,) = backend.job_claim(JobClaimParams("w1", [("default", 1)], 1))
    backend.job_finish_many(
        [
            JobFinishParams(
                claimed.id,
                claimed.token,
                FinishKind.SUCCEEDED,
                result='"thumb_ready"',
                started_at=claimed.claimed_at,
            )
        ]
    )
    backend.job_delete_many([jobs[5].id])
    page = app.search("photo_7")
    assert [j.id for j in page.jobs] == [jobs[7].id] and page.scanned is None
    assert [j.id for j in app.search("result:thumb_ready").jobs] == [claimed.id]
    assert app.search("photo_5").jobs == ()
    with backend._write() as conn:  # type: ignore[attr-defined]
        conn.execute("INSERT INTO job_search (job_search) VALUES ('integrity-check')")
    assert isinstance(backend, SQLiteSearch)
    backend.search_index_set(False)
    status = run("search-index", "--url", app.url, cwd=tmp_path)
    assert status.stdout.strip() == "sqlite: index off (searches scan)"
    later = resize.enqueue("photo_99.png")  # written without an index
    assert [j.id for j in app.search("photo_99").jobs] == [later.id]
    app.close()
