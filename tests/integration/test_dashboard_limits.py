"""The dashboard's ``/limits`` page as a user meets it: every declared limit key with
its values in force and its running jobs; an operator sets and resets an override and
releases a blocked sequence's held job (stored, kept on ``/audit`` under its name); a
viewer sees the same page without forms and gets a 403; then both roles in headless
Chromium. Chromium or Playwright missing: skipped locally, a failure when ``CI=true``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import conveyor
from conveyor.backends.base import ActionLogListParams
from conveyor.web import create_app
from conveyor.web.tokens import parse_tokens
from tests.integration.test_dashboard import CHROMIUM, CHROMIUM_ARGS, _need_browser
from tests.support.dashboard import ALICE, BASE, TOKEN_FILE, VICKY, client_as, csrf_of


class Store:
    """A SQLite store with a declared limit (partner-api, concurrency 2) and a blocked
    sequence: ``bad`` ended dead, ``held`` waits behind it."""

    def __init__(self, tmp_path: Path) -> None:
        self.app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")
        app = self.app

        @app.task(name="partner.call", concurrency=2, limit_key="partner-api", queue="api")
        def call(order: int) -> None: ...

        @app.task(name="ledger.post", sequence_key="ledger", max_attempts=1)
        def post(entry: int) -> None:
            if entry < 0:
                raise ValueError("negative entry")

        call.enqueue(1)  # the store knows a key from its first job
        self.bad = post.enqueue(-1)
        self.held = post.enqueue(2)
        conveyor.Worker(app, burst=True, queues=["default"]).run(install_signals=False)

    def limit(self) -> conveyor.backends.base.LimitRecord:
        (found,) = self.app.backend.limit_list()
        return found

    def held_state(self) -> str:
        return str(self.held.refresh().state.value)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path)
    yield s
    s.app.close()


@pytest.fixture
def web(store: Store) -> Any:
    return create_app(store.app, tokens=parse_tokens(TOKEN_FILE))


def _post(client: Any, action: str, csrf: str, **fields: str) -> Any:
    return client.post(
        f"/limits/{action}",
        data={"csrf": csrf, **fields},
        headers={"origin": BASE},
        follow_redirects=False,
    )


def test_an_operator_sets_resets_and_releases(web: Any, store: Store) -> None:
    assert store.held_state() == "waiting"
    with client_as(web, ALICE) as operator:
        page = operator.get("/limits").text
        assert "partner-api" in page and ">Set</button>" in page
        assert store.held.id in page and f"sequence blocked: {store.bad.id} ended dead" in page
        csrf = csrf_of(page)
        done = _post(operator, "set", csrf, key="partner-api", concurrency="5", rate="10/s")
        assert done.status_code == 303 and done.headers["location"].endswith("limit-set")
        assert store.limit().in_force == (5, 10, 1.0)
        page = operator.get("/limits?flash=limit-set").text
        assert "every worker obeys it" in page and ">Reset</button>" in page
        bad = _post(operator, "set", csrf, key="partner-api", rate="lots")
        assert bad.headers["location"].endswith("limit-invalid")
        unknown = _post(operator, "set", csrf, key="nope", concurrency="1")
        assert unknown.headers["location"].endswith("limit-unknown")
        _post(operator, "reset", csrf, key="partner-api")
        assert store.limit().override is None and store.limit().in_force == (2, None, None)
        released = _post(operator, "release", csrf, id=store.held.id)
        assert released.headers["location"].endswith("flash=released")
        assert store.held_state() == "queued"
        assert "No sequence is blocked" in operator.get("/limits").text
    entries = store.app.backend.action_log_list(ActionLogListParams())
    assert [(e.actor, e.action, e.job_ids) for e in entries] == [
        ("alice", "release", (store.held.id,)),
        ("alice", "limit_reset", ()),
        ("alice", "limit_set", ()),
    ]
    assert entries[2].detail == "limit partner-api: (5, 10, 1.0)"


def test_a_viewer_sees_limits_without_actions(web: Any, store: Store) -> None:
    with client_as(web, ALICE) as operator:
        csrf = csrf_of(operator.get("/limits").text)
    with client_as(web, VICKY) as viewer:
        page = viewer.get("/limits")
        assert page.status_code == 200 and "partner-api" in page.text
        assert store.held.id in page.text
        assert "<form" not in page.text
        viewer.get("/")  # its CSRF cookie
        refused = _post(viewer, "release", csrf, id=store.held.id)
        assert refused.status_code == 403 and "viewer token" in refused.text
    assert store.held_state() == "waiting" and store.limit().override is None


def test_limits_in_chromium(server: str, store: Store, tmp_path: Path) -> None:
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            viewer = browser.new_context().new_page()
            viewer.goto(f"{server}/limits?token={VICKY}")
            viewer.wait_for_url("**/limits")
            assert "partner-api" in viewer.locator("table.limits").inner_text()
            assert store.held.id in viewer.locator("table.held").inner_text()
            assert viewer.get_by_role("button").count() == 0

            operator = browser.new_context().new_page()
            operator.goto(f"{server}/?token={ALICE}")
            operator.get_by_role("link", name="Limits", exact=True).click()
            operator.wait_for_url("**/limits")
            row = operator.locator("table.limits tbody tr").first
            row.get_by_label("concurrency").fill("4")
            row.get_by_role("button", name="Set").click()
            operator.wait_for_selector(".flash")
            assert "Override stored" in operator.locator(".flash").inner_text()
            assert "set" in operator.locator("table.limits tbody tr").first.inner_text()
            operator.get_by_role("button", name="Release").click()
            operator.wait_for_selector(".flash")
            assert "Released" in operator.locator(".flash").inner_text()
            operator.screenshot(path=str(tmp_path / "limits.png"), full_page=True)
        finally:
            browser.close()
    assert store.limit().in_force == (4, None, None)
    assert store.held_state() == "queued"
