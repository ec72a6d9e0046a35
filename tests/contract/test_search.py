"""Search on every store (feature ``search``): the same query finds the same jobs,
from SQLite's FTS5 index or another store's bounded scan, newest first; words and
phrases in any field or one, prefixes, negation, ``state:``, ``args.NAME:``,
``header.NAME:``, ``finished:<1h``, ``logs:``; the index follows finishes and deletes
(before and after its indexer caught up); a scan says when it stopped at its bound."""

from __future__ import annotations

import time

import pytest

import conveyor
from conveyor.backends.base import (
    Backend,
    JobClaimParams,
    JobFinishParams,
    JobLogInsertParams,
    JobLogRecord,
    JobSearchParams,
)
from conveyor.search_query import parse_search
from conveyor.states import FinishKind
from tests.support.features import needs


@pytest.fixture(autouse=True)
def _needs_search(backend: Backend) -> None:
    needs(backend, "search")


def _fill(app: conveyor.App) -> dict[str, str]:
    @app.task(name="mail.send_welcome", queue="mail")
    def send_welcome(user_id: int, subject: str = "Welcome to Zürich") -> None: ...

    @app.task(name="billing.total")
    def total(amounts: list[float]) -> None: ...

    ids = {
        "ada": send_welcome.enqueue(42).id,
        "bob": send_welcome.enqueue(7, subject="password reset").id,
        "acme": send_welcome.with_options(headers={"tenant": "acme"}).enqueue(9).id,
        "total": total.enqueue([19.5, 5]).id,
    }
    claimed = app.backend.job_claim(JobClaimParams("w1", [("default", 5)], 5))
    (job,) = claimed
    error = '{"type":"TimeoutError","message":"gave up after 30s","traceback":"..."}'
    app.backend.job_finish_many(
        [
            JobFinishParams(
                job.id, job.token, FinishKind.DEAD, error=error, started_at=job.claimed_at
            )
        ]
    )
    return ids


def _found(app: conveyor.App, query: str) -> set[str]:
    return {j.id for j in app.search(query, limit=100).jobs}


def _caught_up(backend: Backend) -> bool:
    """Let an index filled after the fact reach every job (the workers' indexer does
    it); False for a store without one on (it scans: nothing changes)."""
    if "search_index" not in backend.features:
        return False
    if not backend.search_index_enabled():  # type: ignore[attr-defined]
        return False  # PostgreSQL's: off by default
    while backend.search_index_catch_up():  # type: ignore[attr-defined]
        pass
    return True


def test_one_language_finds_the_same_jobs_on_every_store(
    app: conveyor.App, backend: Backend
) -> None:
    ids = _fill(app)
    _the_language(app, ids)  # jobs not indexed yet: the index's tail, read row by row
    if _caught_up(backend):
        _the_language(app, ids)  # the same answers from the index itself


def _the_language(app: conveyor.App, ids: dict[str, str]) -> None:
    assert _found(app, "send_welcome") == {ids["ada"], ids["bob"], ids["acme"]}
    assert _found(app, "welcome") == set()  # an identifier is one word: send_welcome
    assert _found(app, "send_w*") == {ids["ada"], ids["bob"], ids["acme"]}
    assert _found(app, '"password reset"') == {ids["bob"]}
    assert _found(app, '"reset password"') == set()  # a phrase keeps its order
    assert _found(app, "passw*") == {ids["bob"]}
    assert _found(app, "task:send_welcome -reset") == {ids["ada"], ids["acme"]}
    assert _found(app, "task:billing.total") == {ids["total"]}
    assert _found(app, "error:timeouterror") == {ids["total"]}
    assert _found(app, "timeouterror state:dead finished:<1h") == {ids["total"]}
    assert _found(app, "timeouterror finished:>1h") == set()
    assert _found(app, "state:queued queue:mail") == {ids["ada"], ids["bob"], ids["acme"]}
    assert _found(app, "args.user_id:42") == {ids["ada"]}  # positional, bound by name
    assert _found(app, "header.tenant:acme") == {ids["acme"]}
    assert _found(app, "-send_welcome") == {ids["total"]}  # negation alone
    newest_first = [j.id for j in app.search("task:send_welcome").jobs]
    assert newest_first == [ids["acme"], ids["bob"], ids["ada"]]


def test_pages_go_on_where_the_last_ended(app: conveyor.App, backend: Backend) -> None:
    ids = _fill(app)
    _pages(app, ids)
    if _caught_up(backend):
        _pages(app, ids)


def _pages(app: conveyor.App, ids: dict[str, str]) -> None:
    first = app.search("send_welcome", limit=2)
    assert [j.id for j in first.jobs] == [ids["acme"], ids["bob"]]
    assert first.next_before == ids["bob"]
    rest = app.search("send_welcome", limit=2, before=first.next_before)
    assert [j.id for j in rest.jobs] == [ids["ada"]] and rest.next_before is None


def test_the_index_follows_deletes_and_retries(app: conveyor.App, backend: Backend) -> None:
    ids = _fill(app)
    _caught_up(backend)  # indexed as they were: then deleted, retried
    backend.job_delete_many([ids["bob"]])
    assert _found(app, "reset") == set()
    assert _found(app, "send_welcome") == {ids["ada"], ids["acme"]}
    assert _found(app, "gave") == {ids["total"]}
    _caught_up(backend)
    assert _found(app, "reset") == set()
    assert _found(app, "send_welcome") == {ids["ada"], ids["acme"]}


def test_log_lines_are_searched_by_logs(app: conveyor.App, backend: Backend) -> None:
    """A job's captured log lines: ``logs:`` finds them on every store (an index holds
    them; a scan reads them for that term only), from the tail and from an index."""
    needs(backend, "logs")
    ids = _fill(app)
    record = JobLogRecord(ids["bob"], 1, time.time(), "WARNING", "mail", "smtp relay refused us")
    backend.job_log_insert_many(JobLogInsertParams([record]))
    assert _found(app, 'logs:"relay refused"') == {ids["bob"]}
    assert _found(app, "logs:relay task:send_welcome") == {ids["bob"]}
    assert _found(app, "logs:relay -reset") == set()
    if _caught_up(backend):
        assert _found(app, 'logs:"relay refused"') == {ids["bob"]}
        assert _found(app, "relay") == {ids["bob"]}  # an index holds them in every field


def test_a_scan_says_when_it_stopped_at_its_bound(app: conveyor.App, backend: Backend) -> None:
    ids = _fill(app)
    parsed = parse_search("-nothing_matches_this")  # negation only: every store scans
    page = backend.job_search(JobSearchParams(parsed.filter, parsed.terms, 10, None, 2))
    assert page.scanned == 2 and not page.complete
    assert [j.id for j in page.jobs] == [ids["total"], ids["acme"]]
    rest = backend.job_search(JobSearchParams(parsed.filter, parsed.terms, 10, page.next_before))
    assert rest.complete and [j.id for j in rest.jobs] == [ids["bob"], ids["ada"]]


def test_bad_queries_say_what_is_wrong() -> None:
    for query, fragment in (
        ("state:lost", "not a state"),
        ("colour:red", "unknown field 'colour'"),
        ("finished:1h", "finished:<1h"),
        ("-state:dead", "can be negated"),
        ("task:", "a field needs a value"),
        ("timeout error:", "a field needs a value"),
    ):
        with pytest.raises(ValueError, match=fragment):
            parse_search(query, now=time.time())
