"""Rows written around the API (issue 12, item 8): an unknown state, a BLOB or non-UTF-8
payload, JSON nested 100,000 deep, a lone surrogate in an error, a 50 MB payload.

Each is written with raw SQL into a real SQLite file or a raw HSET on the test
redis-server (tests/support/odd_rows.py), then read the way a user reads it: every CLI
listing (``jobs``, ``job ID``, ``--json``, ``status``, ``export`` jsonl and csv) through
click's runner (whose stdout encodes strictly, as a terminal does) and every dashboard
page through Starlette's TestClient; and a burst worker runs over it among good jobs:
the odd row ends dead with its reason, every good job succeeds.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from click.testing import CliRunner
from starlette.testclient import TestClient

import conveyor
from conveyor.cli.main import cli
from conveyor.states import JobState
from conveyor.web.app import create_app
from tests.integration.cli_run import CONVEYOR, clean_env
from tests.support.backends import BACKEND_URLS
from tests.support.odd_rows import (
    DEEP,
    FIFTY_MB,
    LONE_SURROGATE_ERROR,
    mariadb_row,
    postgres_row,
    redis_row,
    row,
    sqlite_row,
)

LISTINGS = (
    ("jobs",),
    ("jobs", "--json"),
    ("status",),
    ("export",),
    ("export", "--format", "csv"),
)


@pytest.fixture(params=sorted(BACKEND_URLS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store on each backend with its schema made (one job enqueued and deleted)."""
    store = BACKEND_URLS[request.param](request, tmp_path)
    conveyor.App(store).backend.close()  # makes the schema, as the first use would
    return store


def write(url: str, **columns: Any) -> str:
    """One raw row on whichever backend ``url`` names."""
    return row(url, **columns)


def cli_output(url: str, *args: str) -> str:
    result = CliRunner().invoke(cli, [args[0], "--url", url, *args[1:]], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def every_listing(url: str, *job_ids: str) -> dict[tuple[str, ...], str]:
    """Every CLI listing and dashboard page, and each job's own: all must answer."""
    shown = {args: cli_output(url, *args) for args in LISTINGS}
    for job_id in job_ids:
        shown[("job", job_id)] = cli_output(url, "job", job_id)
        shown[("job", job_id, "--json")] = cli_output(url, "job", job_id, "--json")
    paths = ["/", "/jobs", f"/jobs?q=x&state={JobState.DEAD.value}"]
    with TestClient(create_app(url), base_url="http://127.0.0.1") as client:
        for path in paths + [f"/jobs/{job_id}" for job_id in job_ids]:
            response = client.get(path)
            assert response.status_code == 200, (path, response.text[-2000:])
            shown[(path,)] = response.text
    return shown


def run_worker(url: str, **task_options: Any) -> tuple[conveyor.App, list[str]]:
    """Good jobs around whatever raw rows are in the store, one burst worker; the ids of
    the good jobs (each must succeed)."""
    app = conveyor.App(url)

    @app.task(name="odd.task", **task_options)
    def odd_task(*args: Any, **kwargs: Any) -> int:
        return len(args) + len(kwargs)

    good = [odd_task.enqueue(n).id for n in range(3)]
    conveyor.Worker(app, burst=True, concurrency=2).run(install_signals=False)
    good += [odd_task.enqueue(n).id for n in range(3)]
    conveyor.Worker(app, burst=True).run(install_signals=False)
    return app, good


def assert_dead(app: conveyor.App, job_id: str, reason: str, good: list[str]) -> None:
    found = {j.id: j for j in app.backend.job_get_many([job_id, *good])}
    assert found[job_id].state is JobState.DEAD and reason in (found[job_id].reason or ""), found[
        job_id
    ]
    assert all(found[g].state is JobState.SUCCEEDED for g in good)


def test_unknown_state_is_listed_as_such_and_never_claimed(url: str) -> None:
    job_id = write(url, state="bogus")
    shown = every_listing(url, job_id)
    assert "bogus?" in shown[("jobs",)]
    listed = {j["id"]: j for j in json.loads(shown[("jobs", "--json")])["jobs"]}
    assert listed[job_id]["state"] == "bogus"
    assert listed[job_id]["problems"] == ["unknown state 'bogus'"]
    assert "unknown state 'bogus'" in shown[("job", job_id)]
    exported = [json.loads(x) for x in shown[("export",)].splitlines() if x.startswith("{")]
    assert [j["state"] for j in exported if j["id"] == job_id] == ["bogus"]
    assert ",bogus," in shown[("export", "--format", "csv")]
    assert "bogus?</span>" in shown[("/jobs",)] and "Odd row" in shown[(f"/jobs/{job_id}",)]
    app, good = run_worker(url)
    assert app.backend.job_get_many([job_id])[0].stored_state == "bogus"  # left as it was
    assert all(j.state is JobState.SUCCEEDED for j in app.backend.job_get_many(good))
    app.close()


def test_payload_that_is_not_text_goes_dead_with_the_reason(url: str) -> None:
    """SQLite: a BLOB payload and a TEXT one holding bytes that are not UTF-8 (the query
    itself used to fail, on every claim); Redis: bytes that are not UTF-8. PostgreSQL's
    typed columns refuse such rows at the write, and MariaDB's in strict mode, so none
    reaches a worker."""
    if url.startswith("postgres"):
        import psycopg

        for columns in ({"payload": "{\x00}"}, {"priority": "high"}):
            with pytest.raises(psycopg.Error):
                postgres_row(url, **columns)
        # Bytes reach a text column only as their text form (bytea's '\x7b7d'): text.
        stored = postgres_row(url, payload=b"{}")
        probe = conveyor.App(url)
        assert probe.backend.job_get_many([stored])[0].payload == "\\x7b7d"
        probe.close()
        cases = {}
    elif url.startswith("mariadb"):
        import pymysql

        # Strict mode refuses text in an integer and bytes that are not UTF-8 in text.
        for columns in ({"payload": b'{"\xff'}, {"priority": "high"}):
            with pytest.raises(pymysql.err.DataError):
                mariadb_row(url, **columns)
        cases = {}
    elif url.startswith("sqlite"):
        cases = {
            sqlite_row(url, payload=b'{"args": [], "kwargs": {}}'): "payload is a BLOB (26 bytes)",
            sqlite_row(url, payload="sql:CAST(x'7b22ff' AS TEXT)"): "payload is not valid UTF-8",
            sqlite_row(url, priority="high"): "priority is not a number ('high')",
        }
    else:
        cases = {
            redis_row(url, payload=b'{"args": ["\xff"]}'): "payload is not valid UTF-8",
            redis_row(url, lease="long"): "lease is not a number ('long')",
        }
    for job_id, problem in cases.items():
        shown = every_listing(url, job_id)
        assert problem in shown[("job", job_id)]
        assert html.escape(problem) in shown[(f"/jobs/{job_id}",)]
    app, good = run_worker(url)
    for job_id, problem in cases.items():
        assert_dead(app, job_id, problem, good)
    app.close()


def test_nesting_100k_deep_is_shown_as_text_and_goes_dead(url: str) -> None:
    job_id = write(url, payload=DEEP, result=DEEP)
    shown = every_listing(url, job_id)
    listed = {j["id"]: j for j in json.loads(shown[("jobs", "--json")])["jobs"]}
    assert listed[job_id]["payload"] == DEEP  # not JSON this parser can read: its text
    assert len(shown[("jobs",)]) < 10_000 and "[[[[" in shown[("jobs",)]
    assert len(shown[(f"/jobs/{job_id}",)]) < 100_000
    app, good = run_worker(url)
    assert_dead(app, job_id, "undecodable payload", good)
    app.close()


def test_lone_surrogate_in_an_error_is_shown_replaced(url: str) -> None:
    error = json.loads(LONE_SURROGATE_ERROR) | {"traceback": "Traceback: bad \ud800 frame"}
    job_id = write(url, state="dead", error=json.dumps(error), finished_at=1.0)
    shown = every_listing(url, job_id)
    assert "bad \ufffd frame" in shown[("job", job_id)]
    assert "bad \ufffd here" in shown[(f"/jobs?q=x&state={JobState.DEAD.value}",)] or (
        "bad \ufffd here" in shown[("/jobs",)]
    )
    assert "bad \ufffd frame" in shown[(f"/jobs/{job_id}",)]


def test_fifty_mb_row_is_never_rendered_and_never_decoded(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 50 MB row: the jobs page and listing stay small (it was rendered twice, a
    210 MB page), the whole is one link away, and the worker refuses it unread."""
    app = conveyor.App(sqlite_url)
    assert app.backend.job_count is not None  # the schema exists before the raw insert
    job_id = sqlite_row(sqlite_url, payload=FIFTY_MB)
    with TestClient(create_app(sqlite_url), base_url="http://127.0.0.1") as client:
        listing = client.get("/jobs")
        assert listing.status_code == 200 and len(listing.content) < 1_000_000
        assert f'href="/jobs/{job_id}/payload"' in listing.text
        page = client.get(f"/jobs/{job_id}")
        assert page.status_code == 200 and len(page.content) < 1_000_000
        assert f"{len(FIFTY_MB):,} bytes: showing the first 20,000 characters" in page.text
        raw = client.get(f"/jobs/{job_id}/payload")
        assert (
            raw.content == FIFTY_MB.encode() and "attachment" in raw.headers["content-disposition"]
        )
    assert len(cli_output(sqlite_url, "jobs")) < 10_000
    assert len(cli_output(sqlite_url, "job", job_id)) < 100_000
    assert cli_output(sqlite_url, "job", job_id, "--payload") == FIFTY_MB + "\n"

    calls: list[str] = []

    @app.task(name="odd.task")
    def odd_task(text: str) -> int:
        return len(text)

    real = odd_task.decoder.arguments
    monkeypatch.setattr(odd_task.decoder, "arguments", lambda p: calls.append(p[:20]) or real(p))
    good = [odd_task.enqueue("small").id for _ in range(3)]
    conveyor.Worker(app, burst=True).run(install_signals=False)
    assert_dead(app, job_id, f"payload too large ({len(FIFTY_MB)} bytes > 1048576)", good)
    assert len(calls) == len(good)  # the good jobs were decoded, the big one never
    app.close()


def test_oversized_row_goes_dead(url: str) -> None:
    payload = '{"args": ["' + "y" * 2_000_000 + '"], "kwargs": {}}'
    job_id = write(url, payload=payload)
    app, good = run_worker(url)
    assert_dead(app, job_id, f"payload too large ({len(payload)} bytes > 1048576)", good)
    app.close()


def test_jobs_listing_through_a_pipe_stays_bounded(sqlite_url: str, tmp_path: Path) -> None:
    """The real console script through a pipe: one 50 MB row is a 200-character cell."""
    conveyor.App(sqlite_url).backend.close()
    job_id = sqlite_row(sqlite_url, payload=FIFTY_MB, state="bogus")
    proc = subprocess.run(
        [str(CONVEYOR), "jobs", "--url", sqlite_url],
        capture_output=True,
        cwd=tmp_path,
        env=clean_env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    row = [line for line in proc.stdout.decode().splitlines() if line.startswith(job_id)]
    assert len(row) == 1 and "bogus?" in row[0] and row[0].endswith("…")
    assert len(proc.stdout) < 2_000, sys.getsizeof(proc.stdout)


def test_raw_payload_keeps_bytes_that_are_not_utf8(sqlite_url: str) -> None:
    conveyor.App(sqlite_url).backend.close()
    job_id = sqlite_row(sqlite_url, payload="sql:CAST(x'7b22ff' AS TEXT)")
    proc = subprocess.run(
        [str(CONVEYOR), "job", job_id, "--payload", "--url", sqlite_url],
        capture_output=True,
        env=clean_env(),
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == b'{"\xff\n', proc
    with TestClient(create_app(sqlite_url), base_url="http://127.0.0.1") as client:
        assert client.get(f"/jobs/{job_id}/payload").content == b'{"\xff'
