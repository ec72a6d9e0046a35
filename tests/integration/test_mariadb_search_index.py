"""MariaDB's search index (an InnoDB FULLTEXT-indexed table filled after the fact, made
by ``conveyor search-index on``; off by default): turned on, it answers searches (no
scan) with the same answers as the contract suite's scans, whether the indexer reached
the jobs or they are still pending (matched row by row), follows inserts, finishes and
deletes, reads only candidates (the FULLTEXT index, not the table), and turned off,
searches scan again, its triggers are gone and writes note nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams, JobSearchParams
from conveyor.backends.mariadb.search import MariaDBSearch, match_query
from conveyor.search_query import parse_search
from conveyor.states import FinishKind
from tests.contract import test_search as contract
from tests.integration.cli_run import conveyor as run
from tests.support import mariadb_server


def _indexed(request: pytest.FixtureRequest) -> conveyor.App:
    app = conveyor.App(mariadb_server.isolated_url(request))
    backend = app.backend
    assert isinstance(backend, MariaDBSearch) and not backend.search_index_enabled()
    backend.search_index_set(True)
    assert backend.search_index_enabled()
    return app


def test_the_contracts_language_from_the_index(request: pytest.FixtureRequest) -> None:
    app = _indexed(request)
    contract.test_one_language_finds_the_same_jobs_on_every_store(app, app.backend)
    assert app.search("send_welcome").scanned is None  # the index answered
    # text that is not ASCII has its accents folded: such rows are always candidates
    accented = app.tasks["mail.send_welcome"].with_options(queue="café_zürich").enqueue(1)
    assert [j.id for j in app.search("cafe_zurich").jobs] == [accented.id]
    app.close()
    for test in (
        contract.test_pages_go_on_where_the_last_ended,
        contract.test_the_index_follows_deletes_and_retries,
        contract.test_log_lines_are_searched_by_logs,
    ):
        app = _indexed(request)  # each on a store of its own, as in the suite
        test(app, app.backend)
        app.close()


def test_index_follows_writes_and_turns_off_and_on(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    app = conveyor.App(mariadb_server.isolated_url(request))

    @app.task(name="media.resize")
    def resize(path: str) -> None: ...

    jobs = [resize.enqueue(f"photo_{i}.png") for i in range(20)]
    assert app.search("photo_7").scanned == 20  # off: a scan
    on = run("search-index", "--url", app.url, "on", cwd=tmp_path)
    assert on.returncode == 0 and on.stdout.startswith("search index on"), on.stderr
    backend = app.backend
    (claimed,) = backend.job_claim(JobClaimParams("w1", [("default", 1)], 1))
    finish = JobFinishParams(
        claimed.id,
        claimed.token,
        FinishKind.SUCCEEDED,
        result='"thumb_ready"',
        started_at=claimed.claimed_at,
    )
    backend.job_finish_many([finish])
    backend.job_delete_many([jobs[5].id])
    page = app.search("photo_7")
    assert [j.id for j in page.jobs] == [jobs[7].id] and page.scanned is None
    assert [j.id for j in app.search("result:thumb_ready").jobs] == [claimed.id]
    assert app.search("photo_5").jobs == ()
    assert isinstance(backend, MariaDBSearch)
    with backend._tx() as ex:  # type: ignore[attr-defined]
        query = match_query(parse_search("photo_7").terms)
        plan = ex.execute(
            "EXPLAIN SELECT job_id FROM job_search_docs d "
            "WHERE MATCH (d.doc) AGAINST (%s IN BOOLEAN MODE)",
            (query,),
        ).fetchall()
    assert [(r[3], r[5]) for r in plan] == [("fulltext", "job_search_docs_ft")]
    assert backend.search_index_pending() == 0  # the searches indexed what was pending
    status = run("search-index", "--url", app.url, cwd=tmp_path)
    assert status.stdout.strip() == "mariadb: index on (FULLTEXT), 0 job(s) pending"
    backend.search_index_set(False)
    status = run("search-index", "--url", app.url, cwd=tmp_path)
    assert status.stdout.strip() == "mariadb: index off (searches scan)"
    later = resize.enqueue("photo_99.png")
    page = app.search("photo_99")
    assert [j.id for j in page.jobs] == [later.id] and page.scanned == 20
    assert backend.search_index_pending() == 0  # off: the writes note nothing
    with backend._tx() as ex:  # type: ignore[attr-defined]
        assert ex.execute("SHOW TRIGGERS").fetchall() == ()  # nothing runs per write
    app.close()


def test_the_index_answers_as_the_scan_does(request: pytest.FixtureRequest) -> None:
    """Words that are parts of others, phrases over punctuation, prefixes, fields,
    negations, short words, stopwords, apostrophes, long words: the index's candidates
    re-checked give the scan's answer."""
    app = _indexed(request)

    @app.task(name="shop.order_paid")
    def paid(note: str) -> None: ...

    notes = [
        "customer_5 paid",
        "customer_50 paid",
        "Customer_5: re-paid",
        "paid-in-full 5",
        "order 12 for customer_512",
        "gave up, retry",
        "café crème",
        "x y customer_5x",
        "customer5 paid",
        "the bank won't answer: customer_4242 for the order_paid",
        "Customer_4242's card was declined by the bank",
        "x" * 90 + " overlong token",
    ]
    for note in notes:
        paid.enqueue(note)
    from conveyor.backends.search_scan import scan_search

    hits = 0
    for query in ("customer_5", "customer_5*", '"re paid"', "paid -customer_50", "5",
                  "args:customer_5 task:order_paid", "creme", '"in full"', "x y", "gave up",
                  "order_p* -retry", "cust*", '"customer_5 paid"',
                  "customer_4242", '"the bank"', "the -bank", "won", "won't", "-customer_4242 bank",
                  '"declined by the bank"', "customer_4242 -declined", "x" * 90, "xxxx*",
                  '"for the order_paid"', "customer_4242*"):  # fmt: skip
        parsed = parse_search(query)
        params = JobSearchParams(parsed.filter, parsed.terms, 100)
        scanned = scan_search(app.backend.job_list, params)
        against = match_query(parsed.terms)
        if against:  # still pending: the tail, matched row by row
            tail = app.backend._indexed_search(params, against)  # type: ignore[attr-defined]
            assert [j.id for j in tail.jobs] == [j.id for j in scanned.jobs], query
        indexed = app.backend.job_search(params)  # indexed first (a batch), then read
        assert [j.id for j in indexed.jobs] == [j.id for j in scanned.jobs], query
        assert (indexed.scanned is None) == bool(against), query
        hits += len(indexed.jobs)
        # a page of 2: the newest jobs read first may hold it (a word in most jobs)
        two = JobSearchParams(parsed.filter, parsed.terms, 2)
        first = [j.id for j in app.backend.job_search(two).jobs]
        assert first == [j.id for j in scanned.jobs[:2]], query
    assert hits > 10  # the queries find jobs (not only none, alike)
    app.close()


def test_log_lines_are_searched(request: pytest.FixtureRequest) -> None:
    app = _indexed(request)

    @app.task(name="print.page")
    def page(n: int) -> None:
        import logging

        logging.getLogger("printer").warning("the printer caught fire on page %d", n)

    job = page.enqueue(3)
    other = page.enqueue(4)
    conveyor.Worker(app, burst=True).run(install_signals=False)
    backend = app.backend
    assert isinstance(backend, MariaDBSearch)
    found = backend._indexed_search(_params('logs:"fire on page 3"'), "+fire")
    hits = [j.id for j in found.jobs]
    assert hits == [job.id]  # pending (its log lines noted it), or already indexed
    while backend.search_index_catch_up():
        pass
    assert [j.id for j in app.search("logs:fire", limit=10).jobs] == [other.id, job.id]
    app.close()


def _params(query: str) -> JobSearchParams:
    parsed = parse_search(query)
    return JobSearchParams(parsed.filter, parsed.terms, 100)


def test_a_workers_indexer_and_a_finish_without_text(request: pytest.FixtureRequest) -> None:
    """A MariaDB worker runs the search-indexer service, which empties the pending
    notes; a finish with a null result notes nothing (the claim's and finish's updates
    run the update trigger, which compares), one with a result does."""
    app = _indexed(request)

    @app.task(name="media.noop")
    def noop() -> None: ...

    @app.task(name="media.size")
    def size() -> int:
        return 1234

    noop.enqueue_many([{} for _ in range(30)])
    sized = size.enqueue()
    backend = app.backend
    assert isinstance(backend, MariaDBSearch)
    worker = conveyor.Worker(app, burst=True)
    from conveyor.worker.services.search_indexer import SearchIndexer

    assert any(isinstance(s, SearchIndexer) for s in worker._make_services())
    indexer = SearchIndexer(worker)
    indexer.tick()
    assert indexer.indexed >= 31 and backend.search_index_pending() == 0
    conveyor.Worker(app, burst=True).run(install_signals=False)
    assert backend.search_index_pending() == 1  # the result 1234 only
    assert [j.id for j in app.search("result:1234").jobs] == [sized.id]
    assert app.search("null").jobs == ()  # a null result is no text, as for the scan
    app.close()


def test_a_word_in_most_jobs_is_answered_from_the_newest(
    request: pytest.FixtureRequest,
) -> None:
    """A page of a word most jobs hold comes from the newest jobs read first (no MATCH
    over every job's entry)."""
    app = _indexed(request)

    @app.task(name="shop.order")
    def order(n: int) -> None: ...

    jobs = [order.enqueue(i) for i in range(30)]
    page = app.search("order", limit=5)
    assert [j.id for j in page.jobs] == [j.id for j in jobs[::-1][:5]]
    assert page.scanned == 5  # the probe: the five newest
    assert app.search("nothing_here", limit=5).scanned is None  # the index
    app.close()
