"""The dashboard at scale, as a user sees it: the overview's queues table bounded to the
largest backlogs with a link to the paged ``/queues`` page, the run and wait times per
task, and a bulk confirmation counted from SQLite's kept counts (Chromium and HTTP);
``conveyor queue-counts`` and ``status --json``'s durations through a pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from conveyor.backends.base import JobFinishedHistogramParams
from conveyor.backends.sqlite.counts import SQLiteCounts
from conveyor.web import create_app, queues_page
from conveyor.web.durations_section import RecentDurations
from conveyor.web.throughput import ThroughputHistory
from tests.integration.test_dashboard import (  # noqa: F401 (fixtures)
    BASE,
    CHROMIUM,
    CHROMIUM_ARGS,
    Store,
    _need_browser,
    server,
    store,
)


@pytest.fixture
def many(store: Store) -> Iterator[Store]:  # noqa: F811
    """The store with 24 more queues, queue tN holding N + 1 queued jobs."""
    task = store.app.tasks["mail.send_welcome"]
    for n in range(24):
        task.with_options(queue=f"t{n:02d}").enqueue_many({"user": "u"} for _ in range(n + 1))
    yield store


def test_overview_shows_top_queues_and_durations_in_chromium(
    many: Store,
    server: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(queues_page, "PAGE", 10)  # 26 queues: three pages
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(server + "/")
            rows = page.locator("table.queues tbody tr")
            assert rows.count() == queues_page.OVERVIEW_QUEUES
            assert rows.first.locator("td").first.inner_text() == "t23"  # largest backlog
            durations = page.locator("table.durations tbody tr")
            tasks = [durations.nth(i).locator("td").first.inner_text() for i in range(2)]
            assert tasks == ["billing.charge_card", "media.resize_image"]  # 3 jobs, then 1
            assert durations.first.locator("td").nth(1).inner_text() == "3"
            assert durations.first.locator("td").nth(2).inner_text().endswith(("ms", "s"))
            page.get_by_role("link", name="All queues").click()
            page.wait_for_url("**/queues")
            assert "page 1 of 3" in page.locator("h1").inner_text()
            page.get_by_role("link", name="Next").click()
            page.get_by_role("link", name="Next").click()
            page.wait_for_url("**/queues?page=3")
            names = page.locator("table.queues tbody tr td:first-child").all_inner_texts()
            # backlogs 4, 3, 3, 2, 1 (default: its scheduled job), 1; ties by name
            assert names == ["t03", "mail", "t02", "t01", "default", "t00"]
            page.get_by_role("link", name="t02").click()
            page.wait_for_url("**/jobs?queue=t02")
        finally:
            browser.close()


def test_bulk_confirmation_counts_with_kept_counts(store: Store) -> None:  # noqa: F811
    backend = store.app.backend
    assert isinstance(backend, SQLiteCounts)
    backend.queue_counts_set(True)
    with TestClient(create_app(store.app), base_url=BASE) as client:
        for params, n in (
            ({"action": "cancel", "state": "queued"}, 3),
            ({"action": "cancel"}, 4),  # the scheduled one too
            ({"action": "retry", "queue": "default"}, 1),
            ({"action": "cancel", "task": "mail.send_welcome"}, 3),
        ):
            confirm = client.get("/jobs/bulk", params=params).text
            assert f"<strong>{n}</strong> jobs match" in confirm, params


def _conveyor(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "conveyor", *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_queue_counts_and_durations_through_a_pipe(store: Store) -> None:  # noqa: F811
    url = store.app.backend.url
    assert (
        _conveyor("queue-counts", "--url", url)
        == "sqlite: counts kept: off (status counts every job)\n"
    )
    assert _conveyor("queue-counts", "--url", url, "on").startswith("queue counts on (")
    assert "counts kept: on" in _conveyor("queue-counts", "--url", url)
    status = json.loads(_conveyor("status", "--url", url, "--json"))
    counts = {q["queue"]: q["counts"] for q in status["queues"]}
    assert counts == {
        "default": {"succeeded": 3, "dead": 1, "scheduled": 1},
        "mail": {"queued": 3},
    }
    assert status["durations"]["jobs"] == 4
    tasks = {t["task"]: t for t in status["durations"]["tasks"]}
    assert tasks["billing.charge_card"]["jobs"] == 3
    assert set(tasks["billing.charge_card"]["run"]) == {"p50", "p95", "p99"}
    assert 0 <= tasks["billing.charge_card"]["wait"]["p99"] < 60
    assert _conveyor("queue-counts", "--url", url, "off").startswith("queue counts off (")
    audit = _conveyor("audit", "--url", url)
    assert "queue_counts_on" in audit and "queue_counts_off" in audit


class _Slow:
    """The store, with each throughput read taking at least 20 ms (as a million finished
    jobs make it take seconds), and the ``since`` of each read kept."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.since: list[float] = []

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> Any:
        time.sleep(0.02)
        self.since.append(params.since)
        return self.backend.job_finished_histogram(params)


def test_a_slow_full_throughput_read_is_spaced_out(store: Store) -> None:  # noqa: F811
    slow = _Slow(store.app.backend)
    history = ThroughputHistory(minutes=60, full_every=0.5)
    now = time.time()
    first = now // 60 * 60 - 59 * 60
    assert sum(history.read(slow, now).totals()) == 4  # type: ignore[arg-type]
    history.read(slow, now + 1)  # type: ignore[arg-type]  # past full_every, but < 100 x 20 ms
    assert slow.since[0] == first and slow.since[1] > first  # the second read: recent only
    history.read(slow, now + 3)  # type: ignore[arg-type]
    assert slow.since[2] == (now + 3) // 60 * 60 - 59 * 60  # the whole hour again


def test_the_dashboards_full_rereads_run_off_the_request_path(store: Store) -> None:  # noqa: F811
    """background=True (the dashboard's): after the first read no page waits for the
    whole hour or the durations; a thread re-reads them and the next pages show it."""
    slow = _Slow(store.app.backend)
    history = ThroughputHistory(minutes=60, full_every=0.5, background=True)
    now = time.time()
    first = now // 60 * 60 - 59 * 60
    assert sum(history.read(slow, now).totals()) == 4  # type: ignore[arg-type]
    assert slow.since == [first]  # the first read is the request's own
    started = time.perf_counter()
    assert sum(history.read(slow, now + 3).totals()) == 4  # type: ignore[arg-type]
    assert time.perf_counter() - started < 0.5  # the recent minutes only, not 2 reads
    for _ in range(100):  # the thread's whole-hour read lands
        if not history._refreshing:
            break
        time.sleep(0.02)
    assert (now + 3) // 60 * 60 - 59 * 60 in slow.since[1:]
    assert sum(history.read(slow, now + 4).totals()) == 4  # type: ignore[arg-type]
    recent = RecentDurations(every=0.0, background=True)
    found, jobs = recent.read(store.app.backend, now)
    assert jobs == 4 and found  # the first read: the request's own
    assert recent.read(store.app.backend, now + 1) == (found, jobs)  # the last answer


def test_status_lists_the_largest_backlogs_when_there_are_many_queues(
    many: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from conveyor.cli import status as status_module
    from conveyor.cli.main import cli

    monkeypatch.setattr(status_module, "STATUS_QUEUES", 5)
    url = many.app.backend.url
    text = CliRunner().invoke(cli, ["status", "--url", url]).output
    rows = [
        line.split()[0] for line in text.splitlines() if line[:1] == "t" and line[1:3].isdigit()
    ]
    assert rows == ["t23", "t22", "t21", "t20", "t19"]
    assert "the 5 queues with the largest backlog of 26; all of them: conveyor queues" in text
    document = json.loads(CliRunner().invoke(cli, ["status", "--url", url, "--json"]).output)
    assert len(document["queues"]) == 26  # --json: every queue
