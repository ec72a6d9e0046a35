"""The dashboard's search box speaks the search language (docs/search.md): words and
``field:`` terms, ``state:``; the page comes from the store's ``job_search``; "Retry all
matching" acts on every match of the query (not a page) after a confirmation with the
count, and is recorded on ``/audit``; a malformed query says why and matches nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

import conveyor
from conveyor.backends.base import ActionLogListParams
from conveyor.states import JobState
from conveyor.web import create_app

BASE = "http://127.0.0.1:8124"


def test_search_box_and_bulk_retry_of_every_match(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="billing.charge", max_attempts=1)
    def charge(user_id: int) -> None:
        raise TimeoutError(f"bank gave up on {user_id}")

    @app.task(name="mail.send_welcome", queue="mail")
    def send_welcome(user_id: int) -> None: ...

    failed = [charge.enqueue(i) for i in range(3)]
    conveyor.Worker(app, burst=True, queues=["default"]).run(install_signals=False)
    queued = send_welcome.enqueue(1)
    with TestClient(create_app(app), base_url=BASE) as client:
        page = client.get("/jobs", params={"q": "error:timeouterror state:dead"}).text
        assert all(j.id in page for j in failed) and queued.id not in page
        assert '<span class="hits">3 matches</span>' in page  # the hit count
        assert "<strong><mark>TimeoutError</mark></strong>" in page  # the matched word
        page = client.get("/jobs", params={"q": "send_w*"}).text
        assert "<mark>send_welcome</mark>" in page and "1 match<" in page
        assert queued.id in client.get("/jobs", params={"q": "send_welcome"}).text
        bad = client.get("/jobs", params={"q": "state:lost"}).text
        assert "search matches nothing: state:lost: not a state" in bad
        confirm = client.get("/jobs/bulk", params={"action": "retry", "q": "bank gave"})
        assert "<strong>3</strong> jobs match" in confirm.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', confirm.text)
        assert csrf
        done = client.post(
            "/jobs/bulk",
            data={"csrf": csrf.group(1), "action": "retry", "q": "bank gave", "expected": "3"},
            headers={"origin": BASE},
            follow_redirects=False,
        )
        assert done.status_code == 303
    states = {j.state for j in app.backend.job_get_many([j.id for j in failed])}
    assert states == {JobState.QUEUED}
    (entry,) = app.backend.action_log_list(ActionLogListParams())
    assert (entry.action, entry.count) == ("retry", 3) and "q=bank gave" in entry.detail
    app.close()


def test_marks_are_escaped(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="web.render")
    def render(html: str) -> None: ...

    render.enqueue("<script>alert(1)</script>")
    with TestClient(create_app(app), base_url=BASE) as client:
        page = client.get("/jobs", params={"q": "script"}).text
    assert "&lt;<mark>script</mark>&gt;alert(1)&lt;/<mark>script</mark>&gt;" in page
    assert "<script>alert" not in page
    app.close()
