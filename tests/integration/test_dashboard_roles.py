"""Dashboard roles and the audit page, as a user meets them: tokens from a token file
(viewer, operator) or the environment, a viewer's read-only pages and its 403s, secret
arguments masked for a viewer, and an operator's actions on ``/audit`` under its name;
then both roles in headless Chromium against a real uvicorn server.
Chromium or Playwright missing: skipped locally, a failure when ``CI=true``."""

from __future__ import annotations

import base64
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import conveyor
from conveyor.backends.base import ActionLogListParams
from conveyor.states import JobState
from conveyor.web import create_app
from conveyor.web.tokens import DashboardToken, parse_tokens
from tests.integration.cli_run import conveyor as run
from tests.integration.test_dashboard import CHROMIUM, CHROMIUM_ARGS, _need_browser
from tests.support.dashboard import ALICE, BASE, TOKEN_FILE, VICKY, client_as, csrf_of

KEY = "k1:" + base64.b64encode(bytes(range(32))).decode()


class Store:
    """A SQLite store with a dead job, a queued one, and a job with a secret argument."""

    def __init__(self, tmp_path: Path) -> None:
        self.app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")
        app = self.app

        @app.task(name="media.resize", max_attempts=1)
        def resize(path: str) -> None:
            raise ValueError(f"cannot decode {path}")

        @app.task(name="mail.welcome", queue="mail")
        def welcome(user: str) -> None: ...

        @app.task(name="shop.charge", secret=["card"], queue="shop")
        def charge(card: str, cents: int) -> None: ...

        self.dead = resize.enqueue("a.png")
        conveyor.Worker(app, burst=True, queues=["default"]).run(install_signals=False)
        self.queued = welcome.enqueue("ada")
        self.secret = charge.enqueue("4111 1111 1111 1111", 500)

    def state(self, job_id: str) -> JobState:
        return self.app.backend.job_get_many([job_id])[0].state


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", KEY)
    s = Store(tmp_path)
    yield s
    s.app.close()


@pytest.fixture
def web(store: Store) -> Any:
    return create_app(store.app, tokens=parse_tokens(TOKEN_FILE))


def test_a_viewer_reads_every_page_but_is_offered_no_action(web: Any, store: Store) -> None:
    with client_as(web, VICKY) as viewer:
        for path in (
            "/",
            "/jobs",
            "/jobs?state=dead",
            f"/jobs/{store.dead.id}",
            "/audit",
            "/limits",
        ):
            page = viewer.get(path)
            assert page.status_code == 200, path
            assert '<form method="post"' not in page.text, path
            assert "all matching</a>" not in page.text, path  # no bulk links either
            assert "vicky (viewer)" in page.text
        assert "cannot decode a.png" in viewer.get(f"/jobs/{store.dead.id}").text


def test_a_viewers_post_gets_403_with_one_line(web: Any, store: Store) -> None:
    with client_as(web, ALICE) as operator:
        csrf = csrf_of(operator.get(f"/jobs/{store.dead.id}").text)  # a valid form value
    with client_as(web, VICKY) as viewer:
        viewer.get("/")  # its CSRF cookie
        for path, data in (
            (f"/jobs/{store.dead.id}/retry", {"csrf": csrf}),
            ("/queues/mail/pause", {"csrf": csrf}),
            ("/jobs/bulk", {"csrf": csrf, "action": "retry", "state": "dead", "expected": "1"}),
        ):
            answer = viewer.post(path, data=data, headers={"origin": BASE})
            assert answer.status_code == 403, path
            assert answer.text == (
                "403: vicky has a viewer token, which only reads; actions need an operator token"
            )
        confirm = viewer.get("/jobs/bulk", params={"action": "retry", "state": "dead"})
        assert confirm.status_code == 403 and "viewer token" in confirm.text
    assert store.state(store.dead.id) is JobState.DEAD
    assert store.app.backend.action_log_list(ActionLogListParams()) == []


def test_secret_arguments_are_never_shown_to_a_viewer(web: Any, store: Store) -> None:
    job = store.secret
    with client_as(web, VICKY) as viewer:
        raw = viewer.get(f"/jobs/{job.id}/payload")
        page = viewer.get(f"/jobs/{job.id}").text + viewer.get("/jobs?queue=shop").text
    assert raw.status_code == 200 and raw.text == '{"args":["•••",500],"kwargs":{}}'
    assert "$secret" not in raw.text and "4111" not in raw.text
    assert "$secret" not in page and "4111" not in page and "•••" in page
    with client_as(web, ALICE) as operator:  # as before roles: the stored, sealed value
        assert "$secret" in operator.get(f"/jobs/{job.id}/payload").text


def test_an_operators_actions_are_on_the_audit_page_under_its_name(web: Any, store: Store) -> None:
    with client_as(web, ALICE) as operator:
        csrf = csrf_of(operator.get(f"/jobs/{store.dead.id}").text)
        done = operator.post(
            f"/jobs/{store.dead.id}/retry",
            data={"csrf": csrf},
            headers={"origin": BASE},
            follow_redirects=False,
        )
        assert done.status_code == 303 and store.state(store.dead.id) is JobState.QUEUED
        paused = operator.post(
            "/queues/mail/pause",
            data={"csrf": csrf},
            headers={"origin": BASE},
            follow_redirects=False,
        )
        assert paused.status_code == 303
        page = operator.get("/audit").text
    [pause, retry] = store.app.backend.action_log_list(ActionLogListParams())
    assert (retry.actor, retry.source, retry.action, retry.count) == (
        "alice",
        "dashboard",
        "retry",
        1,
    )
    assert retry.job_ids == (store.dead.id,) and retry.host == "testclient"
    assert (pause.action, pause.detail) == ("queue_pause", "queue mail")
    assert page.index("queue_pause") < page.index(">retry<")  # newest first
    assert "alice" in page and store.dead.id in page


def test_token_file_rules_at_start(store: Store, tmp_path: Path) -> None:
    cases = [
        ("bob admin tok-1234567890", 0o600, "line 1: role 'admin' is not viewer or operator"),
        ("a operator same-token\nb viewer same-token", 0o600, "are the same"),
        ("a operator x y z", 0o600, "line 1: expected NAME ROLE TOKEN"),
        (f"alice operator {ALICE}", 0o620, "writable by other users"),
    ]
    for text, mode, fragment in cases:
        path = tmp_path / "tokens"
        path.write_text(text)
        path.chmod(mode)
        done = run("dashboard", "--url", store.app.url, "--token-file", str(path), cwd=tmp_path)
        assert done.returncode == 2, (text, done.stderr)
        [line] = done.stderr.strip().splitlines()
        assert fragment in line and str(path) in line
    # Readable by others: it starts (here it stops at a port in use), with a warning.
    path = tmp_path / "tokens"
    path.write_text(TOKEN_FILE)
    path.chmod(0o644)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        done = run(
            "dashboard",
            "--url",
            store.app.url,
            "--token-file",
            str(path),
            "--port",
            port,
            cwd=tmp_path,
        )
    assert f"warning: the token file {path} is readable by every local user" in done.stderr
    assert "cannot listen" in done.stderr


def test_the_environment_token_is_an_operator_named_env(store: Store) -> None:
    web = create_app(store.app, tokens=[DashboardToken("env", "operator", "e-0123456789abcdef")])
    with client_as(web, "e-0123456789abcdef") as c:
        page = c.get(f"/jobs/{store.dead.id}").text
        assert (
            "env (operator)" in page and 'value="Retry"' not in page and ">Retry</button>" in page
        )


# -- in Chromium -------------------------------------------------------------------------


def test_both_roles_in_chromium(server: str, store: Store, tmp_path: Path) -> None:
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            viewer = browser.new_context().new_page()
            viewer.goto(f"{server}/jobs/{store.dead.id}?token={VICKY}")
            viewer.wait_for_url(f"**/jobs/{store.dead.id}")  # the token left the address bar
            assert viewer.locator("header .user").inner_text() == "vicky (viewer)"
            assert viewer.locator("form[method=post]").count() == 0
            assert viewer.get_by_role("button", name="Retry").count() == 0
            viewer.goto(f"{server}/")
            assert viewer.get_by_role("button", name="Pause").count() == 0
            viewer.goto(f"{server}/jobs?state=dead")
            assert viewer.get_by_role("link", name="Retry all matching").count() == 0
            # A POST made by hand from the viewer's own page, cookies and all: refused.
            answer = viewer.evaluate(
                """async (path) => {
                    const r = await fetch(path, {method: "POST", body: new URLSearchParams({csrf: "x"})});
                    return [r.status, await r.text()];
                }""",
                f"/jobs/{store.dead.id}/retry",
            )
            assert answer[0] == 403 and "viewer token, which only reads" in answer[1]
            viewer.screenshot(path=str(tmp_path / "viewer.png"))

            operator = browser.new_context().new_page()
            operator.goto(f"{server}/jobs/{store.dead.id}?token={ALICE}")
            operator.wait_for_url(f"**/jobs/{store.dead.id}")
            assert operator.locator("header .user").inner_text() == "alice (operator)"
            operator.get_by_role("button", name="Retry").click()
            operator.wait_for_selector(".flash")
            assert "retried" in operator.locator(".flash").inner_text()
            operator.get_by_role("link", name="Audit", exact=True).click()
            operator.wait_for_url("**/audit")
            row = operator.locator("table.audit tbody tr").first
            cells = row.locator("td").all_inner_texts()
            assert cells[1:5] == ["alice", "dashboard", "retry", "1"], cells
            assert store.dead.id in cells[5]
            operator.screenshot(path=str(tmp_path / "audit.png"), full_page=True)

            viewer.goto(f"{server}/audit")  # a viewer reads the log too
            assert "alice" in viewer.locator("table.audit").inner_text()
        finally:
            browser.close()
    assert store.state(store.dead.id) is JobState.QUEUED
    if os.environ.get("CONVEYOR_UPDATE_SCREENSHOTS") == "1":
        (Path(__file__).resolve().parents[2] / "docs" / "img" / "audit.png").write_bytes(
            (tmp_path / "audit.png").read_bytes()
        )
