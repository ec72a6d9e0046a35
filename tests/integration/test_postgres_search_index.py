"""PostgreSQL's search index (pg_trgm, made by ``conveyor search-index on``; off by
default): turned on, it answers searches (no scan) with the same answers as the
contract suite's scans, follows inserts, finishes and deletes, reads only candidates
(a word it narrows to is never a full read), and turned off, searches scan again."""

from __future__ import annotations

from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams, JobSearchParams
from conveyor.backends.postgres.search import DOC, PostgresSearch, term_patterns
from conveyor.search_query import parse_search
from conveyor.states import FinishKind
from tests.contract import test_search as contract
from tests.integration.cli_run import conveyor as run
from tests.support import postgres_server


def _indexed(request: pytest.FixtureRequest) -> conveyor.App:
    app = conveyor.App(postgres_server.isolated_url(request))
    backend = app.backend
    assert isinstance(backend, PostgresSearch) and not backend.search_index_enabled()
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
    ):
        app = _indexed(request)  # each on a store of its own, as in the suite
        test(app, app.backend)
        app.close()


def test_index_follows_writes_and_turns_off_and_on(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    app = conveyor.App(postgres_server.isolated_url(request))

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
    assert isinstance(backend, PostgresSearch)
    with backend._tx() as cur:  # type: ignore[attr-defined]  # 20 rows: forbid a seq scan
        cur.execute("SET LOCAL enable_seqscan = off")
        (pattern,) = term_patterns(parse_search("photo_7").terms)
        cur.execute(f"EXPLAIN SELECT id FROM jobs WHERE {DOC} ~ %s", (pattern,))
        plan = " ".join(str(r[0]) for r in cur.fetchall())
    assert "jobs_search_trgm" in plan  # the planner can read the trigram index
    status = run("search-index", "--url", app.url, cwd=tmp_path)
    assert status.stdout.strip() == "postgres: index on (pg_trgm)"
    backend.search_index_set(False)
    status = run("search-index", "--url", app.url, cwd=tmp_path)
    assert status.stdout.strip() == "postgres: index off (searches scan)"
    later = resize.enqueue("photo_99.png")
    page = app.search("photo_99")
    assert [j.id for j in page.jobs] == [later.id] and page.scanned == 20
    app.close()


def test_the_index_answers_as_the_scan_does(request: pytest.FixtureRequest) -> None:
    """Words that are parts of others, phrases over punctuation, prefixes, fields,
    negations, short words: the index's candidates re-checked give the scan's answer."""
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
    ]
    for note in notes:
        paid.enqueue(note)
    from conveyor.backends.search_scan import scan_search

    hits = 0
    for query in ("customer_5", "customer_5*", '"re paid"', "paid -customer_50", "5",
                  "args:customer_5 task:order_paid", "creme", '"in full"', "x y", "gave up",
                  "order_p* -retry", "cust*", '"customer_5 paid"'):  # fmt: skip
        parsed = parse_search(query)
        params = JobSearchParams(parsed.filter, parsed.terms, 100)
        scanned = scan_search(app.backend.job_list, params)
        indexed = app.backend.job_search(params)
        assert [j.id for j in indexed.jobs] == [j.id for j in scanned.jobs], query
        assert (indexed.scanned is None) == bool(term_patterns(parsed.terms)), query
        hits += len(indexed.jobs)
    assert hits > 10  # the queries find jobs (not only none, alike)
    app.close()
