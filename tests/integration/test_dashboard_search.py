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


def test_suggestions_complete_fields_and_frequent_values(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="billing.charge", max_attempts=1)
    def charge(user_id: int) -> None:
        raise TimeoutError("bank gave up")

    @app.task(name="mail.send_welcome", queue="mail")
    def send_welcome(user_id: int, subject: str = "hi") -> None: ...

    charge.enqueue(1)
    conveyor.Worker(app, burst=True).run(install_signals=False)
    send_welcome.with_options(headers={"tenant": "acme"}).enqueue(2)

    def ask(text: str) -> list[str]:
        got = client.get("/api/search/suggest", params={"q": text})
        assert got.status_code == 200 and got.headers["content-type"] == "application/json"
        found: list[str] = got.json()["suggestions"]
        return found

    with TestClient(create_app(app), base_url=BASE) as client:
        assert ask("gave ta") == ["gave task:"]
        assert sorted(ask("task:")) == ["task:billing.charge", "task:mail.send_welcome"]
        assert ask("timeout -queue:m") == ["timeout -queue:mail"]
        assert ask("state:d") == ["state:dead"]
        assert ask("error:T") == ["error:TimeoutError"]
        assert ask("args.") == ["args.user_id:", "args.subject:"]
        assert ask("header.t") == ["header.tenant:"]
        assert ask("colour:") == []
    app.close()


def test_autocomplete_in_chromium(tmp_path: Path) -> None:
    """Typing in the jobs page's search box fills its datalist from the store."""
    import socket
    import threading

    import uvicorn

    from tests.integration.test_dashboard import CHROMIUM, CHROMIUM_ARGS, _need_browser

    sync_playwright = _need_browser()
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="billing.charge")
    def charge(user_id: int) -> None: ...

    charge.enqueue(1)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(app), log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if srv.started:
                break
            threading.Event().wait(0.05)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                errors: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.goto(f"http://127.0.0.1:{port}/jobs")
                box = page.locator("input[name=q]")
                box.click()
                box.press_sequentially("bank task:bil")
                options = page.locator("#search-suggest option")
                options.first.wait_for(state="attached", timeout=10_000)
                values = [o.get_attribute("value") for o in options.all()]
                assert values == ["bank task:billing.charge"]
                box.fill("task:billing.charge")
                box.press("Enter")
                page.wait_for_url("**/jobs?*q=task*")
                assert page.locator("mark").first.inner_text() == "billing"
                assert "1 match" in page.locator(".hits").inner_text()
                assert errors == []
            finally:
                browser.close()
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()
        app.close()
