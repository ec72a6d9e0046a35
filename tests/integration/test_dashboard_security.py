"""The dashboard's security edges, against the real app factory and a real SQLite store:
redirects stay on the host, any CSRF value is refused cleanly, the login cookie is per
port and holds no token, nothing from the address bar is shown as text, the CSP limits
forms and <base>, and a dashboard given its token by file or environment keeps it out
of ``ps``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

import conveyor
from conveyor.states import JobState
from conveyor.web import create_app
from tests.integration.cli_run import CONVEYOR, clean_env
from tests.support.redis_server import free_port

TOKEN = "tok-9f8e7d6c5b4a"
PHISH = "Your account is locked: call +1 555 0100"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[conveyor.App]:
    """An app on a fresh store holding one queued job (``app.queued_id``)."""
    application = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @application.task
    def ping() -> None: ...

    application.queued_id = ping.enqueue().id  # type: ignore[attr-defined]
    yield application
    application.close()


@pytest.fixture
def client(app: conveyor.App) -> Iterator[TestClient]:
    with TestClient(create_app(app), base_url="http://127.0.0.1:8123") as c:
        yield c


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


@pytest.mark.parametrize("path", ["//evil.example/", "/%2F/evil.example/", "///evil.example/x"])
def test_login_redirect_never_leaves_the_host(app: conveyor.App, path: str) -> None:
    with TestClient(create_app(app, token=TOKEN), base_url="http://127.0.0.1:8123") as c:
        answer = c.get(f"http://127.0.0.1:8123{path}?token={TOKEN}&a=1", follow_redirects=False)
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert location.startswith("/") and location[1:2] not in ("/", "\\"), location
    assert location.endswith("evil.example/?a=1") or location.endswith("evil.example/x?a=1")


@pytest.mark.parametrize("value", ["é", "\u00ff" * 64, "☃", "a\udcff"])
def test_a_non_ascii_csrf_value_is_refused_not_a_crash(client: TestClient, value: str) -> None:
    assert client.get("/jobs").status_code == 200  # the browser has its CSRF cookie
    body = f"csrf={value}".encode("utf-8", "surrogatepass")
    answer = client.post(
        "/queues/default/pause",
        content=body,
        headers={
            "content-type": "application/x-www-form-urlencoded",
            "origin": "http://127.0.0.1:8123",
        },
        follow_redirects=False,
    )
    assert answer.status_code == 403 and "CSRF" in answer.text


def test_login_cookie_is_named_after_the_port_and_is_not_the_token(app: conveyor.App) -> None:
    web = create_app(app, token=TOKEN)
    with TestClient(web, base_url="http://127.0.0.1:8123") as c:
        login = c.get("/", params={"token": TOKEN}, follow_redirects=False)
        assert login.status_code == 303
        set_cookie = login.headers["set-cookie"]
        assert set_cookie.startswith("conveyor_token_8123="), set_cookie
        assert TOKEN not in set_cookie  # another service on 127.0.0.1 receives it too
        assert "httponly" in set_cookie.lower() and "samesite=strict" in set_cookie.lower()
        assert c.get("/").status_code == 200  # the cookie logs this port in
        cookie = c.cookies.get("conveyor_token_8123")
        assert cookie
    with TestClient(web, base_url="http://127.0.0.1:8124") as other:
        # A browser sends it to every port of 127.0.0.1; a dashboard on another port
        # reads only its own name, so this one's login does not leak into that one.
        other.cookies.set("conveyor_token_8123", cookie)
        assert other.get("/").status_code == 401


def test_csrf_cookie_is_per_port_too(client: TestClient) -> None:
    answer = client.get("/")
    assert "conveyor_csrf_8123=" in answer.headers["set-cookie"]


def test_flash_shows_only_server_side_texts(client: TestClient, app: conveyor.App) -> None:
    crafted = client.get("/jobs", params={"flash": PHISH})
    assert PHISH not in crafted.text and 'class="flash"' not in crafted.text
    for code in ("<b>x</b>", "retry-1-of-2 extra", "retried\n"):
        assert 'class="flash"' not in client.get("/", params={"flash": code}).text
    assert "Job retried." in client.get("/jobs", params={"flash": "retried"}).text

    job_id = app.queued_id  # type: ignore[attr-defined]
    detail = client.get(f"/jobs/{job_id}")
    cancel = client.post(
        f"/jobs/{job_id}/cancel",
        data={"csrf": csrf_of(detail.text)},
        headers={"origin": "http://127.0.0.1:8123"},
        follow_redirects=False,
    )
    assert cancel.status_code == 303
    assert cancel.headers["location"].endswith("?flash=cancelled")
    assert app.backend.job_get_many([job_id])[0].state is JobState.CANCELLED
    shown = client.get(cancel.headers["location"])
    assert '<div class="flash">Job cancelled.</div>' in shown.text


def test_bulk_flash_is_a_code_with_counts(client: TestClient) -> None:
    shown = client.get("/jobs", params={"flash": "delete-2-of-3"})
    assert "Delete: 2 of 3 matching jobs changed." in shown.text


def test_not_found_page_does_not_echo_free_text(client: TestClient) -> None:
    answer = client.get(f"/jobs/{PHISH}")
    assert answer.status_code == 404
    assert "call +1 555" not in answer.text and "No such job" in answer.text
    assert "<code>01ABC</code>" in client.get("/jobs/01ABC").text  # an id-like one is shown


def test_csp_limits_form_targets_and_base(client: TestClient) -> None:
    csp = client.get("/").headers["content-security-policy"]
    assert "form-action 'self'" in csp and "base-uri 'none'" in csp
    assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp


# -- a real dashboard process: the token is not on its command line -----------------------


def _serve(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CONVEYOR), "dashboard", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _login(port: int) -> tuple[int, str]:
    """GET /?token=TOKEN without following the redirect: (status, Set-Cookie)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    deadline = time.monotonic() + 20
    while True:
        try:
            answer = opener.open(f"http://127.0.0.1:{port}/?token={TOKEN}", timeout=5)
            return answer.status, answer.headers.get("set-cookie", "")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("set-cookie", "")
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/cmdline")
@pytest.mark.parametrize("source", ["--token-file", "$CONVEYOR_DASHBOARD_TOKEN"])
def test_token_from_file_or_env_is_not_in_the_command_line(
    app: conveyor.App, tmp_path: Path, source: str
) -> None:
    port = free_port()
    args = ["--url", app.url, "--port", str(port)]
    env = clean_env()
    if source == "--token-file":
        secret = tmp_path / "token"
        secret.write_text(TOKEN + "\n")
        args += ["--token-file", str(secret)]
    else:
        env["CONVEYOR_DASHBOARD_TOKEN"] = TOKEN
    proc = _serve(args, env, tmp_path)
    try:
        status, cookie = _login(port)
        assert status == 303, proc.stderr.read() if proc.poll() is not None else status
        assert cookie.startswith(f"conveyor_token_{port}=") and TOKEN not in cookie
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert TOKEN.encode() not in cmdline, cmdline
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "visible" not in err, err  # no --token warning for these


def test_token_on_the_command_line_still_works_with_a_warning(
    app: conveyor.App, tmp_path: Path
) -> None:
    port = free_port()
    proc = _serve(["--url", app.url, "--port", str(port), "--token", TOKEN], clean_env(), tmp_path)
    try:
        status, _ = _login(port)
        assert status == 303
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "warning: --token is visible to every local user in ps" in err, err
    assert "CONVEYOR_DASHBOARD_TOKEN" in err and "--token-file" in err


def test_token_file_problems_are_one_line(app: conveyor.App, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for args, fragment in (
        (["--token-file", str(empty)], "is empty"),
        (["--token-file", str(tmp_path / "missing")], "does not exist"),
        (["--token-file", str(empty), "--token", "x"], "not both"),
    ):
        done = subprocess.run(
            [str(CONVEYOR), "dashboard", "--url", app.url, *args],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert fragment in done.stderr, done.stderr
    assert os.path.exists(empty)
