"""The web dashboard against a real SQLite store filled through the public API.

Two layers: Starlette's TestClient for every page, filter and guard (fast, no browser),
and one end-to-end run in headless Chromium (Debian's package, driven by Playwright)
against a real uvicorn server, clicking an action and checking the store changed.
Chromium or Playwright missing: skipped locally, a failure when ``CI=true``.

Set ``CONVEYOR_UPDATE_SCREENSHOTS=1`` to refresh ``docs/img/dashboard.png`` and
``docs/img/overview.png``.
"""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from click.testing import CliRunner
from starlette.testclient import TestClient

import conveyor
from conveyor.backends.base import JobListParams
from conveyor.cli.main import cli
from conveyor.errors import ConfigurationError
from conveyor.states import JobState
from conveyor.web import create_app
from conveyor.web import sorting as sorting_module
from conveyor.web.query import paused_queues
from conveyor.web.security import check_bind
from conveyor.web.throughput import ThroughputHistory

BASE = "http://127.0.0.1"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]


class Store:
    """An app on a tmp SQLite file, with one job in each interesting state."""

    def __init__(self, tmp_path: Path) -> None:
        self.app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")
        app = self.app

        @app.task(name="billing.charge_card")
        def charge_card(customer: str, cents: int) -> dict[str, Any]:
            return {"charged": cents, "customer": customer}

        @app.task(name="media.resize_image", max_attempts=1)
        def resize_image(path: str, width: int = 640) -> None:
            raise ValueError(f"cannot decode image {path!r}")

        @app.task(name="mail.send_welcome", queue="mail")
        def send_welcome(user: str) -> None: ...

        self.succeeded = [charge_card.enqueue(f"cus_{i:03d}", 1000 + i) for i in range(3)]
        self.dead = resize_image.enqueue("<script>alert(1)</script>.png", width=320)
        conveyor.Worker(app, burst=True, concurrency=2).run(install_signals=False)
        self.queued = [send_welcome.enqueue(user) for user in ("alice", "bob", "carol")]
        self.scheduled = charge_card.enqueue_after(3600, "cus_later", 5)

    def state(self, job_id: str) -> JobState:
        return self.app.backend.job_get_many([job_id])[0].state


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path)
    yield s
    s.app.close()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store.app), base_url=BASE) as c:
        yield c


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "page has no CSRF field"
    return found.group(1)


def post(client: TestClient, path: str, data: dict[str, str], **headers: str) -> Any:
    return client.post(path, data=data, headers={"origin": BASE, **headers}, follow_redirects=False)


# -- pages -------------------------------------------------------------------------------


def test_pages_render_real_data(client: TestClient, store: Store) -> None:
    overview = client.get("/")
    assert overview.status_code == 200
    assert "mail" in overview.text and "default" in overview.text
    assert "<svg" in overview.text  # throughput chart and sparklines
    assert "Pause" in overview.text

    jobs = client.get("/jobs").text
    for name in ("billing.charge_card", "media.resize_image", "mail.send_welcome"):
        assert name in jobs
    for state in ("succeeded", "dead", "queued", "scheduled"):
        assert f'badge s-{state}"' in jobs

    dead = client.get(f"/jobs/{store.dead.id}").text
    assert "ValueError" in dead and "Traceback" in dead and "cannot decode image" in dead
    attempts = dead.split("<h2>Attempts</h2>")[1]
    assert store.app.backend.job_attempts(store.dead.id)[0].worker_id in attempts
    assert 'badge s-dead"' in attempts

    ok = client.get(f"/jobs/{store.succeeded[0].id}").text
    assert "&quot;charged&quot;: 1000" in ok  # the result, pretty-printed and escaped
    assert client.get("/jobs/NOPE").status_code == 404


def test_user_data_is_escaped(client: TestClient, store: Store) -> None:
    for path in ("/jobs", "/jobs?state=dead&sort=task", f"/jobs/{store.dead.id}"):
        page = client.get(path).text
        assert "<script>alert" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_jobs_filters_search_and_paging(client: TestClient, store: Store) -> None:
    dead = client.get("/jobs", params={"state": "dead"}).text
    assert store.dead.id in dead and store.succeeded[0].id not in dead

    found = client.get("/jobs", params={"q": "ALICE"}).text
    assert store.queued[0].id in found and store.queued[1].id not in found

    by_task = client.get("/jobs", params={"task": "billing.charge_card", "queue": "default"}).text
    assert store.succeeded[0].id in by_task and store.queued[0].id not in by_task

    # Newest first: the last enqueued comes first, paging goes on to older jobs.
    first = client.get("/jobs", params={"queue": "mail", "limit": "2"}).text
    assert store.queued[2].id in first and store.queued[1].id in first
    assert store.queued[0].id not in first
    assert first.index(store.queued[2].id) < first.index(store.queued[1].id)
    next_link = re.search(r'href="(/jobs\?[^"]*after=[^"]+)"', first)
    assert next_link
    second = client.get(next_link.group(1).replace("&amp;", "&")).text
    assert store.queued[0].id in second and store.queued[1].id not in second
    assert "Next page" not in second


def ids_in(page: str) -> list[str]:
    """Job ids in the order the jobs table lists them."""
    return re.findall(r'<a class="mono" href="/jobs/([^"]+)"', page)


def test_jobs_sort_newest_first_by_header_and_across_pages(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = ids_in(client.get("/jobs").text)
    assert everything == sorted(everything, reverse=True)  # newest first by default
    assert everything[0] == store.scheduled.id  # the last one enqueued

    oldest = ids_in(client.get("/jobs", params={"sort": "created", "dir": "asc"}).text)
    assert oldest == everything[::-1]

    # The header links carry the sort; the next page keeps it (and the filters).
    first = client.get("/jobs", params={"sort": "task", "limit": "3"}).text
    tasks = re.findall(r'<td><span class="mono">([^<]+)</span></td>', first)
    assert tasks == ["billing.charge_card"] * 3
    assert 'href="/jobs?sort=task&amp;dir=desc&amp;limit=3"' in first  # click again: desc
    # by task: an index walk (sorting.py), paged by the last job's id, ties newest first
    next_link = re.search(r'href="(/jobs\?[^"]*after=[^"]*)"', first)
    assert next_link and "sort=task" in next_link.group(1)
    second = client.get(next_link.group(1).replace("&amp;", "&")).text
    rest = re.findall(r'<td><span class="mono">([^<]+)</span></td>', second)
    assert rest == ["billing.charge_card", "mail.send_welcome", "mail.send_welcome"]
    assert not set(ids_in(first)) & set(ids_in(second))
    assert ids_in(first + second) == sorted(ids_in(first), reverse=True) + ids_in(second)
    assert "sorted only" not in first  # not a bounded sort

    # A column without an index (attempt) sorts only the newest SORT_LIMIT jobs, and
    # says so; its next page is an offset.
    monkeypatch.setattr(sorting_module, "SORT_LIMIT", 3)
    capped = client.get("/jobs", params={"sort": "attempt"}).text
    assert "sorted only the newest 3 jobs" in capped
    assert sorted(ids_in(capped)) == sorted(everything[:3])
    monkeypatch.undo()

    # Anything but a known column is the default order, never an error or a query.
    for bad in ("id; DROP TABLE jobs", "payload", "__class__"):
        assert ids_in(client.get("/jobs", params={"sort": bad}).text) == everything
    assert len(store.app.backend.job_list(JobListParams(limit=100))) == len(everything)


def test_failed_and_dead_jobs_show_their_error_first(client: TestClient, store: Store) -> None:
    @store.app.task(name="flaky.sync", max_attempts=3)
    def sync() -> None:
        raise ConnectionError("upstream timed out after 30 s " + "x" * 300)

    retrying = sync.enqueue()
    conveyor.Worker(store.app, burst=True).run(install_signals=False)
    assert store.state(retrying.id) is JobState.SCHEDULED  # failed once, retry pending

    listing = client.get("/jobs").text
    assert "<th>error</th>" in listing.replace('<th><a class="sort', "")
    row = next(r for r in listing.split("<tr>") if retrying.id in r)
    cell = re.search(r'<span class="err" title="([^"]*)">(.*?)</span></td>', row)
    assert cell, row
    assert cell.group(2).startswith("<strong>ConnectionError</strong>: upstream timed out")
    assert "x" * 300 not in cell.group(2) and cell.group(2).endswith("…")  # truncated...
    assert cell.group(1).endswith("x" * 300)  # ...and whole in its tooltip
    ok_row = next(r for r in listing.split("<tr>") if store.succeeded[0].id in r)
    assert "Error" not in ok_row
    assert "<th>error</th>" not in client.get("/jobs", params={"state": "queued"}).text

    for job, title in ((store.dead, "Error"), (retrying, "Last error (will retry)")):
        page = client.get(f"/jobs/{job.id}").text
        top = page.index('<section class="failure">')
        assert top < page.index('<dl class="fields">') < page.index("<h2>Arguments</h2>")
        assert f"<h2>{title}</h2>" in page[top:] and "Traceback" in page[top:]


def test_actions_are_offered_and_accepted_only_where_they_apply(
    client: TestClient, store: Store
) -> None:
    dead = client.get("/jobs", params={"state": "dead"}).text
    assert "Retry all matching" in dead and "Delete all matching" in dead
    assert "Cancel all matching" not in dead
    queued = client.get("/jobs", params={"state": "queued"}).text
    assert "Cancel all matching" in queued and "Retry all matching" not in queued
    page = client.get(f"/jobs/{store.dead.id}").text
    assert ">Retry<" in page and ">Cancel<" not in page
    token = csrf_of(page)

    # The server refuses what the page does not offer: nothing changes.
    refused = client.get("/jobs/bulk", params={"action": "cancel", "state": "dead"})
    assert refused.status_code == 409 and "does not apply to dead jobs" in refused.text
    bulk = {"csrf": token, "action": "cancel", "state": "dead", "expected": "1"}
    assert post(client, "/jobs/bulk", bulk).status_code == 409
    assert post(client, f"/jobs/{store.dead.id}/cancel", {"csrf": token}).status_code == 409
    assert post(client, f"/jobs/{store.queued[0].id}/retry", {"csrf": token}).status_code == 409
    assert store.state(store.dead.id) is JobState.DEAD
    assert store.state(store.queued[0].id) is JobState.QUEUED

    # Unfiltered, "retry all matching" counts (and retries) only dead and cancelled jobs.
    confirm = client.get("/jobs/bulk", params={"action": "retry"}).text
    assert "<strong>1</strong> jobs match" in confirm and "cancelled, dead" in confirm
    done = post(client, "/jobs/bulk", {"csrf": token, "action": "retry", "expected": "1"})
    assert done.status_code == 303 and store.state(store.dead.id) is JobState.QUEUED
    assert all(store.state(j.id) is JobState.SUCCEEDED for j in store.succeeded)


def test_triage_reads_on_every_backend(app: conveyor.App) -> None:
    """The store reads behind triage, through the pages, on SQLite and on Redis."""

    @app.task(name="t.ok")
    def ok(n: int) -> int:
        return n

    @app.task(name="t.bad", max_attempts=1)
    def bad() -> None:
        raise KeyError("missing <key>")

    first, dead, last = ok.enqueue(1), bad.enqueue(), ok.enqueue(2)
    conveyor.Worker(app, burst=True).run(install_signals=False)
    with TestClient(create_app(app), base_url=BASE) as c:
        overview = c.get("/").text
        assert '<rect class="succeeded"' in overview and '<rect class="dead"' in overview
        assert "succeeded <strong>2</strong>" in overview and "dead <strong>1</strong>" in overview
        assert ids_in(c.get("/jobs").text) == [last.id, dead.id, first.id]
        listing = c.get("/jobs", params={"state": "dead"}).text
        assert "<strong>KeyError</strong>: &#x27;missing &lt;key&gt;&#x27;" in listing


def test_workers_page_shows_heartbeats(client: TestClient, store: Store) -> None:
    worker = conveyor.Worker(store.app, queues=["idle"]).start()
    try:
        page = client.get("/workers").text
        assert worker.id in page and "ago" in page and 'badge s-running"' in page
    finally:
        worker.stop(5)
    assert "No workers are registered" in client.get("/workers").text


def test_throughput_comes_from_the_store(store: Store) -> None:
    """A dashboard started after the jobs ran still shows them (no sampling), and one
    more finished job shows up at the next read, in its state's series."""
    state = create_app(store.app).state.dashboard
    before = state.history.read(store.app.backend, time.time())
    assert sum(before.totals()) == 4  # 3 succeeded + 1 dead, finished in the fixture
    assert sum(before.by_state()[JobState.DEAD]) == 1
    store.app.tasks["billing.charge_card"].enqueue("cus_x", 1)
    conveyor.Worker(store.app, burst=True).run(install_signals=False)
    after = state.history.read(store.app.backend, time.time())
    assert sum(after.by_state()[JobState.SUCCEEDED]) == 4
    assert sum(after.totals("default")) == 5 and sum(after.totals("mail")) == 0


def test_throughput_history_rereads_only_the_current_minute_between_full_reads(
    store: Store,
) -> None:
    """The cache: between full reads (every ``full_every`` s) only the minute in progress
    is read again; a change to an earlier minute shows at the next full read."""
    backend = store.app.backend
    history = ThroughputHistory(minutes=60, full_every=60.0)
    now = time.time()
    assert sum(history.read(backend, now).totals()) == 4
    # Move one success two minutes back (a finished minute), then add one now.
    with backend.lock:  # type: ignore[attr-defined]
        backend.connection.execute(  # type: ignore[attr-defined]
            "UPDATE jobs SET finished_at = finished_at - 120 WHERE id = ?", (store.succeeded[0].id,)
        )
        backend.connection.commit()  # type: ignore[attr-defined]
    store.app.tasks["billing.charge_card"].enqueue("cus_y", 2)
    conveyor.Worker(store.app, burst=True).run(install_signals=False)
    # Re-read: the current minute (the new job in, the moved one out); its older minute
    # is not read again before the next full read.
    assert sum(history.read(backend, now + 1).totals()) == 4
    full = history.read(backend, now + 61)
    assert sum(full.totals()) == 5 and max(full.totals()) <= 4
    assert full.starts[-1] - full.starts[0] == 59 * 60 and full.starts[-1] <= now + 61


# -- actions -----------------------------------------------------------------------------


def test_single_job_actions(client: TestClient, store: Store) -> None:
    job = store.queued[0]
    token = csrf_of(client.get(f"/jobs/{job.id}").text)
    r = post(client, f"/jobs/{job.id}/cancel", {"csrf": token})
    assert r.status_code == 303 and store.state(job.id) is JobState.CANCELLED
    assert post(client, f"/jobs/{job.id}/retry", {"csrf": token}).status_code == 303
    assert store.state(job.id) is JobState.QUEUED
    assert post(client, f"/jobs/{job.id}/delete", {"csrf": token}).status_code == 303
    assert store.app.backend.job_get_many([job.id]) == []


def test_bulk_action_needs_the_confirmed_count(client: TestClient, store: Store) -> None:
    confirm = client.get("/jobs/bulk", params={"action": "cancel", "queue": "mail"}).text
    assert "<strong>3</strong> jobs match" in confirm
    fields = {"csrf": csrf_of(confirm), "action": "cancel", "queue": "mail"}
    stale = post(client, "/jobs/bulk", {**fields, "expected": "2"})
    assert stale.status_code == 409 and "<strong>3</strong>" in stale.text
    assert all(store.state(j.id) is JobState.QUEUED for j in store.queued)
    done = post(client, "/jobs/bulk", {**fields, "expected": "3"})
    assert done.status_code == 303
    assert all(store.state(j.id) is JobState.CANCELLED for j in store.queued)
    assert store.state(store.scheduled.id) is JobState.SCHEDULED  # other queue untouched


def test_queue_pause_and_resume(client: TestClient, store: Store) -> None:
    backend = store.app.backend
    token = csrf_of(client.get(f"/jobs/{store.dead.id}").text)
    assert "Pause" in client.get("/").text
    done = post(client, "/queues/mail/pause", {"csrf": token})
    assert done.status_code == 303 and paused_queues(backend) == {"mail"}
    assert 'badge s-paused"' in client.get("/").text
    assert post(client, "/queues/mail/resume", {"csrf": token}).status_code == 303
    assert paused_queues(backend) == set()


# -- guards ------------------------------------------------------------------------------


def test_actions_need_a_valid_csrf_token(client: TestClient, store: Store) -> None:
    job = store.queued[0]
    client.get("/")  # sets the CSRF cookie
    assert post(client, f"/jobs/{job.id}/cancel", {}).status_code == 403
    assert post(client, f"/jobs/{job.id}/cancel", {"csrf": "0" * 64}).status_code == 403
    other = TestClient(create_app(store.app), base_url=BASE)  # another app's secret
    foreign = csrf_of(other.get(f"/jobs/{job.id}").text)
    assert post(client, f"/jobs/{job.id}/cancel", {"csrf": foreign}).status_code == 403
    assert client.get(f"/jobs/{job.id}/cancel").status_code == 405  # never by GET
    assert store.state(job.id) is JobState.QUEUED


def test_actions_need_the_same_origin(client: TestClient, store: Store) -> None:
    job = store.queued[0]
    token = csrf_of(client.get(f"/jobs/{job.id}").text)
    path = f"/jobs/{job.id}/cancel"
    assert post(client, path, {"csrf": token}, origin="http://evil.example").status_code == 403
    assert post(client, path, {"csrf": token}, origin="null").status_code == 403
    bare = client.post(path, data={"csrf": token}, follow_redirects=False)  # no Origin/Referer
    assert bare.status_code == 403
    assert store.state(job.id) is JobState.QUEUED
    ok = client.post(
        path,
        data={"csrf": token},
        headers={"referer": f"{BASE}/jobs/{job.id}"},
        follow_redirects=False,
    )
    assert ok.status_code == 303 and store.state(job.id) is JobState.CANCELLED


def test_token_is_required_when_set(store: Store) -> None:
    web = create_app(store.app, token="s3cret")
    with TestClient(web, base_url="http://dashboard.internal") as c:
        assert c.get("/").status_code == 401
        assert c.get("/static/dashboard.css").status_code == 401
        assert c.get("/", params={"token": "wrong"}).status_code == 401
        assert c.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200
        login = c.get("/jobs", params={"token": "s3cret", "state": "dead"}, follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/jobs?state=dead"
        assert c.get("/jobs").status_code == 200  # the cookie now carries it


def test_without_token_only_loopback_host_names(store: Store) -> None:
    with TestClient(create_app(store.app), base_url="http://attacker.example") as c:
        assert c.get("/").status_code == 403


def test_binding_beyond_loopback_needs_a_token(store: Store) -> None:
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", "t")
    with pytest.raises(ConfigurationError, match="without a token"):
        check_bind("0.0.0.0", None)
    result = CliRunner().invoke(
        cli,
        ["dashboard", "--url", store.app.url, "--host", "0.0.0.0"],
        env={"CONVEYOR_DASHBOARD_TOKEN": ""},
    )
    assert result.exit_code == 2 and "without a token" in result.output


def test_import_conveyor_does_not_import_starlette() -> None:
    code = "import sys, conveyor, conveyor.cli.main; print('starlette' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- end to end in Chromium --------------------------------------------------------------


def _need_browser() -> Any:
    """Playwright's sync API, or skip (locally) / fail (CI) with the reason."""
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install playwright; no browser download)"
    if reason is None and not os.access(CHROMIUM, os.X_OK):
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return sync_playwright


@pytest.fixture
def server(store: Store) -> Iterator[str]:
    """A real uvicorn server on a free loopback port, in a thread."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # handed to uvicorn already bound: no port race
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(store.app), log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if srv.started:
            break
        threading.Event().wait(0.05)
    assert srv.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)
    sock.close()


def test_end_to_end_in_chromium(server: str, store: Store, tmp_path: Path) -> None:
    sync_playwright = _need_browser()
    target = store.queued[1]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(server + "/")
            assert page.locator("h1").inner_text() == "Overview"
            page.get_by_role("link", name="Jobs", exact=True).click()
            page.wait_for_url("**/jobs")
            page.select_option("select[name=state]", "queued")
            page.get_by_role("button", name="Filter").click()
            page.wait_for_url("**/jobs?*state=queued*")
            shot(page, tmp_path / "jobs-queued.png")
            page.get_by_role("link", name=target.id).click()
            page.wait_for_url(f"**/jobs/{target.id}")
            page.get_by_role("button", name="Cancel").click()
            page.wait_for_selector(".flash")
            assert "cancelled" in page.locator(".flash").inner_text()
            assert store.state(target.id) is JobState.CANCELLED

            # Screenshots for the docs: the full jobs table and a dead job's detail.
            page.set_viewport_size({"width": 1280, "height": 300})  # crop to the content
            page.goto(server + "/jobs")
            shot(page, tmp_path / "dashboard.png")
            page.goto(server + "/")
            shot(page, tmp_path / "overview.png")
            page.set_viewport_size({"width": 1280, "height": 560})  # the job's top: its error
            page.goto(f"{server}/jobs/{store.dead.id}")
            page.screenshot(path=str(tmp_path / "dashboard-job.png"))
        finally:
            browser.close()
    if os.environ.get("CONVEYOR_UPDATE_SCREENSHOTS") == "1":
        combine(
            sync_playwright,
            [tmp_path / "dashboard.png", tmp_path / "dashboard-job.png"],
            ROOT / "docs" / "img" / "dashboard.png",
        )
        combine(
            sync_playwright, [tmp_path / "overview.png"], ROOT / "docs" / "img" / "overview.png"
        )


def test_triage_in_chromium(server: str, store: Store) -> None:
    """What a user sees first: newest jobs on top, a header click that sorts and survives
    a reload, a dead job's error in the list and on top of its page, the hour's
    throughput with labelled axes, and only the bulk actions that apply."""
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

            page.goto(server + "/")
            chart = page.locator("svg.chart")
            assert chart.is_visible()
            labels = chart.locator("text.label").all_text_contents()
            assert labels[0].startswith("time (UTC)") and labels[1] == "jobs/min"
            assert chart.locator("rect.succeeded").count() >= 1  # jobs finished before start
            assert chart.locator("rect.dead").count() == 1
            assert "succeeded 3" in page.locator(".legend").inner_text()

            page.goto(server + "/jobs")
            first_id = page.locator("table.jobs tbody tr").first.locator("a.mono")
            assert first_id.inner_text() == store.scheduled.id  # newest first
            page.locator("th a.sort", has_text="task").click()
            page.wait_for_url("**/jobs?sort=task*")
            page.reload()
            tasks = page.locator("table.jobs tbody tr td:nth-child(2)").all_inner_texts()
            assert tasks == sorted(tasks) and tasks[0] == "billing.charge_card"
            assert "▲" in page.locator("th a.sort.on").inner_text()

            page.select_option("select[name=state]", "dead")
            page.get_by_role("button", name="Filter").click()
            page.wait_for_url("**/jobs?*state=dead*")
            assert "sort=task" in page.url  # filtering keeps the order
            assert page.locator("th", has_text="error").count() == 1
            error = page.locator("table.jobs .err").first.inner_text()
            assert error.startswith("ValueError: cannot decode image '<script>")
            bulk = page.locator(".bar a.btn").all_inner_texts()
            assert bulk == ["Retry all matching", "Delete all matching"]

            page.get_by_role("link", name=store.dead.id).click()
            page.wait_for_url(f"**/jobs/{store.dead.id}")
            failure = page.locator("section.failure")
            box = failure.bounding_box()
            assert box is not None and box["y"] + 60 < 800  # above the fold
            assert "Traceback" in failure.inner_text() and "ValueError" in failure.inner_text()
            assert page.get_by_role("button", name="Cancel").count() == 0
            assert errors == []  # nothing blocked by the CSP, no failed request
        finally:
            browser.close()


def combine(sync_playwright: Any, parts: list[Path], out: Path) -> None:
    """Stack screenshots into one PNG (rendered by Chromium itself: no imaging library)."""
    imgs = "".join(
        f'<img src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
        for p in parts
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 600})
            page.set_content(
                "<style>body{margin:0;background:#9ca3af}img{display:block;"
                f"width:1280px;margin-bottom:6px}}</style>{imgs}"
            )
            page.screenshot(path=str(out), full_page=True)
        finally:
            browser.close()
    assert out.stat().st_size < 200_000, "screenshot over 200 KB"


def shot(page: Any, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000


def test_where_filter_narrows_the_jobs_table_and_reports_a_bad_condition(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'where.db'}"
    app = conveyor.App(url)

    @app.task(name="t.where")
    def notify(user_id: int) -> None: ...

    wanted = notify.enqueue(user_id=42)
    other = notify.enqueue(user_id=7)
    client = TestClient(create_app(app), base_url="http://127.0.0.1")
    page = client.get("/jobs", params={"where": "kwargs.user_id=42"}).text
    assert wanted.id in page and other.id not in page
    bad = client.get("/jobs", params={"where": "kwargs.user id=1"}).text
    assert "where ignored" in bad and wanted.id in bad and other.id in bad
    app.close()
