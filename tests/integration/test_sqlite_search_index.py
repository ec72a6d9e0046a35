"""SQLite's search index (FTS5, filled after the fact since schema 10; off by default,
``conveyor search-index on``):
the writes only note what the indexer has to index; a search finds every job whether
the indexer reached it or not (the pending tail is matched row by row), with the same
answers as the contract suite's scans; the index follows inserts, finishes, deletes
and log lines (FTS5's own integrity check); turned off, searches scan and writes note
nothing; a store from before schema 10 with the old index is upgraded; the
``conveyor search-index`` command through a pipe, and a worker's indexer service."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams
from conveyor.backends.sqlite.search import SQLiteSearch
from conveyor.states import FinishKind
from tests.contract import test_search as contract
from tests.integration.cli_run import conveyor as run


def _search(app: conveyor.App) -> SQLiteSearch:
    backend = app.backend
    assert isinstance(backend, SQLiteSearch)
    return backend


def _indexed(url: str) -> conveyor.App:
    """An app whose store has the index on (``conveyor search-index on``)."""
    app = conveyor.App(url)
    _search(app).search_index_set(True)
    return app


def _integrity(app: conveyor.App) -> None:
    with app.backend._write() as conn:  # type: ignore[attr-defined]
        conn.execute("INSERT INTO job_search (job_search) VALUES ('integrity-check')")


def test_the_contracts_language_from_the_index(tmp_path: Path) -> None:
    for name, test in (
        ("a.db", contract.test_one_language_finds_the_same_jobs_on_every_store),
        ("b.db", contract.test_pages_go_on_where_the_last_ended),
        ("c.db", contract.test_the_index_follows_deletes_and_retries),
        ("d.db", contract.test_log_lines_are_searched_by_logs),
    ):
        app = conveyor.App(f"sqlite:///{tmp_path / name}")
        assert not _search(app).search_index_enabled()  # off by default
        _search(app).search_index_set(True)
        test(app, app.backend)
        assert app.search("send_welcome").scanned is None  # the index answered
        _integrity(app)
        app.close()


def test_index_follows_writes_and_turns_off_and_on(tmp_path: Path) -> None:
    app = _indexed(f"sqlite:///{tmp_path / 'jobs.db'}")
    backend = _search(app)

    @app.task(name="media.resize")
    def resize(path: str) -> None: ...

    jobs = [resize.enqueue(f"photo_{i}.png") for i in range(20)]
    jobs += [resize.enqueue_many([{"path": f"photo_{i}.png"} for i in range(20, 30)])][0]
    assert backend.search_index_pending() == 30  # noted by the writes, not indexed
    assert [j.id for j in app.search("photo_7").jobs] == [jobs[7].id]  # from the tail
    while backend.search_index_catch_up(batch=7):  # ranges taken in part
        pass
    assert backend.search_index_pending() == 0
    (claimed,) = backend.job_claim(JobClaimParams("w1", [("default", 1)], 1))  # type: ignore[attr-defined]
    backend.job_finish_many(  # type: ignore[attr-defined]
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
    backend.job_delete_many([jobs[5].id])  # type: ignore[attr-defined]
    for _ in range(2):  # pending (stale entries left out), then indexed again
        page = app.search("photo_7")
        assert [j.id for j in page.jobs] == [jobs[7].id] and page.scanned is None
        assert [j.id for j in app.search("result:thumb_ready").jobs] == [claimed.id]
        assert app.search("photo_5").jobs == ()
        assert len(app.search("resize", limit=100).jobs) == 29
        backend.search_index_catch_up()
    _integrity(app)
    off = run("search-index", "--url", app.url, "off", cwd=tmp_path)
    assert off.returncode == 0, off.stderr
    status = run("search-index", "--url", app.url, cwd=tmp_path)
    assert status.stdout.strip() == "sqlite: index off (searches scan)"
    later = resize.enqueue("photo_99.png")  # written without an index
    assert backend.search_index_pending() == 0
    assert app.search("photo_99").scanned is not None
    on = run("search-index", "--url", app.url, "on", cwd=tmp_path)
    assert on.returncode == 0 and on.stdout.startswith("search index on")
    assert backend.search_index_pending() == 30  # every job, for the indexer
    assert [j.id for j in app.search("photo_99").jobs] == [later.id]  # (a search indexes)
    assert backend.search_index_pending() == 0
    app.close()


def test_log_lines_are_searched(tmp_path: Path) -> None:
    app = _indexed(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="print.page")
    def page(n: int) -> None:
        import logging

        logging.getLogger("printer").warning("the printer caught fire on page %d", n)

    job = page.enqueue(3)
    other = page.enqueue(4)
    conveyor.Worker(app, burst=True).run(install_signals=False)
    assert [j.id for j in app.search('"caught fire" page_3').jobs] == []
    hits = [j.id for j in app.search('logs:"caught fire on page 3"').jobs]
    assert hits == [job.id]  # noted as its log lines were written: found, indexed or not
    while _search(app).search_index_catch_up():
        pass
    hits = [j.id for j in app.search("logs:fire", limit=10).jobs]
    assert hits == [other.id, job.id]  # and from the index
    app.close()


def test_a_store_from_before_version_10_is_indexed_anew(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    app = conveyor.App(f"sqlite:///{path}")

    @app.task(name="media.resize")
    def resize(path: str) -> None: ...

    job = resize.enqueue("photo_1.png")
    app.close()
    with sqlite3.connect(path) as db:  # as version 9 left it, with its old index on
        db.execute("DROP TABLE IF EXISTS job_search")
        db.execute("DROP TABLE IF EXISTS job_search_ids")
        db.execute("CREATE TABLE job_search_ids (n INTEGER PRIMARY KEY, id TEXT UNIQUE)")
        db.execute("CREATE VIEW job_search_source AS SELECT 1 AS n")
        db.execute("CREATE VIRTUAL TABLE job_search USING fts5(task, queue)")
        db.execute("DROP TABLE job_search_pending")
        db.execute("DROP TABLE job_search_on")
        db.execute("PRAGMA user_version = 9")
    app = conveyor.App(f"sqlite:///{path}")
    backend = _search(app)
    assert not backend.search_index_enabled()  # the old index went: searches scan
    page = app.search("photo_1")
    assert [j.id for j in page.jobs] == [job.id] and page.scanned is not None
    backend.search_index_set(True)  # conveyor search-index on: every job pending
    assert backend.search_index_pending() == 1
    assert [j.id for j in app.search("photo_1").jobs] == [job.id]
    columns = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(job_search)")]
    assert "logs" in columns
    app.close()


def test_a_workers_indexer_keeps_the_tail_short(tmp_path: Path) -> None:
    app = _indexed(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="media.resize")
    def resize(path: str) -> None: ...

    resize.enqueue_many([{"path": f"photo_{i}.png"} for i in range(50)])
    worker = conveyor.Worker(app, burst=True)
    from conveyor.worker.services.search_indexer import SearchIndexer

    assert any(isinstance(s, SearchIndexer) for s in worker._make_services())

    indexer = SearchIndexer(worker)
    indexer.tick()
    assert indexer.indexed >= 50 and _search(app).search_index_pending() == 0
    app.close()


def test_a_finish_that_adds_no_text_notes_nothing(tmp_path: Path) -> None:
    """Most jobs end with a null result: the entry written at insert is already right,
    so such a finish costs the indexer nothing; a result, an error or log lines do."""
    app = _indexed(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="media.noop")
    def noop() -> None: ...

    @app.task(name="media.size")
    def size() -> int:
        return 1234

    noop.enqueue()
    sized = size.enqueue()
    while _search(app).search_index_catch_up():
        pass
    conveyor.Worker(app, burst=True).run(install_signals=False)
    assert _search(app).search_index_pending() == 1  # the result 1234 only
    assert [j.id for j in app.search("result:1234").jobs] == [sized.id]
    assert app.search("null").jobs == ()  # a null result is no text, as for the scan
    app.close()


def test_imported_jobs_are_found(tmp_path: Path) -> None:
    """``conveyor import`` notes each job it writes (not a range of ids, which could
    span months of other jobs): found at once, then indexed."""
    source = conveyor.App(f"sqlite:///{tmp_path / 'a.db'}")

    @source.task(name="media.resize")
    def resize(path: str) -> None: ...

    job = resize.enqueue("photo_42.png")
    source.close()
    exported = run("export", "--url", source.url, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "jobs.jsonl").write_text(exported.stdout)
    target = _indexed(f"sqlite:///{tmp_path / 'b.db'}")
    done = run("import", str(tmp_path / "jobs.jsonl"), "--url", target.url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _search(target).search_index_pending() == 1
    assert [j.id for j in target.search("photo_42").jobs] == [job.id]
    assert _search(target).search_index_pending() == 0  # (the search indexed a batch)
    assert [j.id for j in target.search("photo_42").jobs] == [job.id]
    target.close()
