"""The ops CLI on every backend: every command, filters, prompts, export, backup and the
integrity audit (the store corrupted on purpose, under the seam: tests/support/stores.py).
Adding a backend to ``tests/support/backends.py`` (and its raw-store helpers) runs all
of this on it."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import conveyor
from conveyor.cli.main import cli
from conveyor.records import record
from conveyor.worker.worker import Worker
from tests.support.backends import CLI_URLS
from tests.support.stores import STORES, fill


@record
class Store:
    backend: str
    url: str
    ids: dict[str, str]


@pytest.fixture(params=sorted(CLI_URLS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """A store with 3 succeeded, 2 dead and 1 queued (queue "later") job; ids by name."""
    url = CLI_URLS[request.param](request, tmp_path)
    return Store(request.param, url, fill(url))


def run(url: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(
        cli, [*args[:1], "--url", url, *args[1:]], input=input, catch_exceptions=False
    )


def features(url: str) -> frozenset[str]:
    app = conveyor.App(url)
    try:
        return app.backend.features
    finally:
        app.close()


def test_status_jobs_filters_and_paging(store: Store) -> None:
    url, ids = store.url, store.ids
    assert run(url, "status").exit_code == 0
    listed = json.loads(run(url, "jobs", "--json").output)["jobs"]  # newest first
    assert len(listed) == 6 and [j["id"] for j in listed] == sorted(ids.values(), reverse=True)
    oldest = json.loads(run(url, "jobs", "--json", "--oldest-first").output)["jobs"]
    assert [j["id"] for j in oldest] == sorted(ids.values())

    def matching(*args: str) -> set[str]:
        return {j["id"] for j in json.loads(run(url, "jobs", "--json", *args).output)["jobs"]}

    assert matching("--where", "kwargs.user_id=10") == {ids["x1"]}
    assert matching("--where", 'kwargs.user_id="10"') == set()  # typed: 10 is not "10"
    assert matching("--where", "args.0=2") == {ids["x2"]}
    assert matching("--where", "result.ok=true") == {ids["x0"], ids["x2"]}
    assert matching("--state", "dead") == {ids["x-1"], ids["x-2"]}
    assert matching("--queue", "later") == {ids["later"]}
    assert matching("--task", "t.work", "--created-after", "1h") == set(ids.values())
    assert matching("--finished-before", "1h") == set()
    page = json.loads(run(url, "jobs", "--json", "--limit", "4").output)
    rest = json.loads(run(url, "jobs", "--json", "--after", page["next_after"]).output)
    assert len(page["jobs"]) == 4 and len(rest["jobs"]) == 2 and rest["next_after"] is None
    assert [j["id"] for j in page["jobs"] + rest["jobs"]] == [j["id"] for j in listed]
    page = json.loads(run(url, "jobs", "--json", "--limit", "4", "--oldest-first").output)
    rest = json.loads(
        run(url, "jobs", "--json", "--oldest-first", "--after", page["next_after"]).output
    )
    assert [j["id"] for j in page["jobs"] + rest["jobs"]] == sorted(ids.values())
    human = run(url, "jobs", "--state", "dead")
    assert human.exit_code == 0 and "dead" in human.output


def test_bad_where_is_a_usage_error(store: Store) -> None:
    result = CliRunner().invoke(cli, ["jobs", "--url", store.url, "--where", "kwargs.a'--=1"])
    assert result.exit_code == 2 and "not an identifier" in result.output


def test_job_shows_attempts_traceback_and_logs(store: Store) -> None:
    url, ids = store.url, store.ids
    data = json.loads(run(url, "job", ids["x-1"], "--json").output)
    assert data["job"]["state"] == "dead"
    [attempt] = data["attempts"]
    assert attempt["outcome"] == "dead" and attempt["worker_id"]
    assert attempt["error"]["type"] == "ValueError" and "bad x -1" in attempt["error"]["traceback"]
    assert [r["message"] for r in data["logs"]] == ["working on -1 for -10"]
    human = run(url, "job", ids["x-1"]).output
    assert "Traceback" in human and "working on -1 for -10" in human
    assert run(url, "job", "nope").exit_code == 1


def test_retry_by_filter_asks_with_count(store: Store) -> None:
    url, ids = store.url, store.ids
    refused = run(url, "retry", "--state", "dead", input="n\n")
    assert refused.exit_code == 1 and "Retry 2 job(s)" in refused.output
    assert len(json.loads(run(url, "jobs", "--json", "--state", "dead").output)["jobs"]) == 2
    accepted = run(url, "retry", "--state", "dead", input="y\n")
    assert accepted.exit_code == 0 and "2 of 2" in accepted.output
    queued = json.loads(run(url, "jobs", "--json", "--state", "queued").output)["jobs"]
    assert {j["id"] for j in queued} == {ids["x-1"], ids["x-2"], ids["later"]}


def test_cancel_delete_retry_by_ids_and_filters(store: Store) -> None:
    url, ids = store.url, store.ids
    out = json.loads(run(url, "cancel", ids["later"], "--json").output)
    assert out == {"action": "cancel", "matched": 1, "changed": 1}
    out = json.loads(run(url, "delete", "--where", "result.ok=false", "--yes", "--json").output)
    assert out["changed"] == 1
    assert run(url, "job", ids["x1"]).exit_code == 1
    assert json.loads(run(url, "retry", ids["x0"], "--json").output)["changed"] == 1
    assert run(url, "retry").exit_code == 2  # neither ids nor filters
    assert run(url, "delete", ids["x0"], "--state", "dead").exit_code == 2


def test_purge_older_than(store: Store) -> None:
    url = store.url
    assert "0 of 0" in run(url, "purge", "--older-than", "1h", "--yes").output
    STORES[store.backend].age_finished(url, 8 * 86400)
    out = json.loads(
        run(url, "purge", "--older-than", "7d", "--state", "succeeded", "--yes", "--json").output
    )
    assert out["changed"] == 3
    left = {j["state"] for j in json.loads(run(url, "jobs", "--json").output)["jobs"]}
    assert left == {"dead", "queued"}


def test_export_streams_jsonl_and_csv(store: Store, tmp_path: Path) -> None:
    url, ids = store.url, store.ids
    result = run(url, "export", "--format", "jsonl", "--page", "2")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["id"] for d in lines] == sorted(ids.values())
    assert lines[0]["payload"]["kwargs"] == {"user_id": 0}
    target = tmp_path / "dead.csv"
    run(url, "export", "--format", "csv", "--state", "dead", "-o", str(target))
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert {r["id"] for r in rows} == {ids["x-1"], ids["x-2"]}
    assert json.loads(rows[0]["error"])["type"] == "ValueError"


def test_backup_is_a_readable_copy_or_refused(store: Store, tmp_path: Path) -> None:
    url = store.url
    target = tmp_path / "copy.db"
    if "backup" not in features(url):
        refused = CliRunner().invoke(cli, ["backup", "--url", url, str(target)])
        assert refused.exit_code == 1 and "only available on the SQLite backend" in refused.output
        # ...and names the engine's own tool (not Redis's advice on every engine).
        assert {"redis": "BGSAVE", "postgres": "pg_dump", "mariadb": "mariadb-dump"}[
            store.backend
        ] in refused.output
        assert not target.exists()
        return
    assert run(url, "backup", str(target)).exit_code == 0
    with sqlite3.connect(target) as db:
        assert db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 6
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    copy = json.loads(run(f"sqlite:///{target}", "jobs", "--json").output)["jobs"]
    assert len(copy) == 6
    assert run(url, "backup", str(target)).exit_code == 1  # never overwrites


def test_queues_pause_resume_listing(store: Store) -> None:
    url = store.url
    assert run(url, "queues", "pause", "later").output.strip() == "queue later paused"
    listed = {q["queue"]: q for q in json.loads(run(url, "queues", "--json").output)}
    assert listed["later"]["paused"] and listed["later"]["depth"] == 1
    assert not listed["default"]["paused"]
    # the autoscaling signal: a paused queue's ready jobs are no demand; no live worker
    later = listed["later"]
    assert (later["ready"], later["demand"], later["capacity"], later["load"]) == (0, 0, 0, None)
    run(url, "queues", "resume", "later")
    later = {q["queue"]: q for q in json.loads(run(url, "queues", "--json").output)}["later"]
    assert not later["paused"]
    assert (later["ready"], later["demand"], later["capacity"], later["load"]) == (1, 1, 0, None)
    assert "later" in run(url, "queues").output


def test_check_finds_corruption(store: Store) -> None:
    url = store.url
    clean = run(url, "check")
    assert clean.exit_code == 0 and "ok" in clean.output
    expected = STORES[store.backend].corrupt(url, store.ids)
    result = CliRunner().invoke(cli, ["check", "--url", url, "--json"])
    assert result.exit_code == 1, result.output
    kinds = {(p["kind"], p["job_id"]) for p in json.loads(result.output)["problems"]}
    assert expected <= kinds
    assert CliRunner().invoke(cli, ["check", "--url", url]).exit_code == 1


@pytest.mark.parametrize("backend_name", sorted(CLI_URLS))
def test_job_shows_workflow_parents_and_progress(
    backend_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = CLI_URLS[backend_name](request, tmp_path)
    app = conveyor.App(url)

    release = threading.Event()

    @app.task(name="t.fetch")
    def fetch(n: int) -> int:
        conveyor.current_job().progress(0.5, "halfway")
        release.wait(10)
        return n

    @app.task(name="t.total")
    def total(values: list[int]) -> int:
        return sum(values)

    first, second, callback = conveyor.group(fetch.s(1), fetch.s(2)).then(total.s()).enqueue_all()
    shown = json.loads(run(url, "job", callback.id, "--json").output)
    assert [p["id"] for p in shown["depends_on"]] == [first.id, second.id]
    assert {p["state"] for p in shown["depends_on"]} == {"queued"}
    assert shown["job"]["state"] == "waiting"
    text = run(url, "job", callback.id).output
    assert "depends on" in text and first.id in text and "t.fetch" in text
    worker = Worker(app, concurrency=2).start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # progress is written by a throttled service
            running = json.loads(run(url, "job", first.id, "--json").output)["job"]
            if running["progress"] is not None:
                break
            time.sleep(0.05)
        assert (running["progress"], running["progress_message"]) == (0.5, "halfway")
        release.set()
        assert callback.result(timeout=10) == 3
    finally:
        release.set()
        worker.stop(timeout=10)
    app.close()


def test_limits_listed_set_and_reset(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/limits.db"
    app = conveyor.App(url)

    @app.task(concurrency=2, limit_key="partner-api")
    def call(n: int) -> None: ...

    call.enqueue(1)
    app.close()
    [row] = json.loads(run(url, "limits", "--json").output)
    assert row["in_force"] == {"concurrency": 2, "rate_count": None, "rate_period": None}
    out = run(url, "limits", "set", "partner-api", "--rate", "10/s", "--concurrency", "3")
    assert out.output.strip() == "limit partner-api set"
    [row] = json.loads(run(url, "limits", "--json").output)
    assert row["in_force"] == {"concurrency": 3, "rate_count": 10, "rate_period": 1.0}
    assert row["code"]["concurrency"] == 2
    # --url after the subcommand (where users type it) names the same store.
    done = CliRunner().invoke(cli, ["limits", "reset", "partner-api", "--url", url])
    assert done.exit_code == 0, done.output
    [row] = json.loads(run(url, "limits", "--json").output)
    assert row["override"] is None and row["in_force"]["concurrency"] == 2
