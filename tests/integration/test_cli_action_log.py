"""``conveyor audit``: every operator action of the CLI, run through pipes as a shell
would, is found in the store it acted on, on every store; a store without the
feature says so in one line."""

from __future__ import annotations

import json
import os
import pwd
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import conveyor
from tests.integration.cli_run import conveyor as run
from tests.support.backends import GENERIC_URLS
from tests.support.stores import fill

ME = pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture(params=sorted(GENERIC_URLS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return GENERIC_URLS[request.param](request, tmp_path)


def audit_lines(url: str, tmp_path: Path, *args: str) -> list[dict[str, object]]:
    done = run("audit", "--url", url, "--json", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_cli_actions_appear_in_conveyor_audit(url: str, tmp_path: Path) -> None:
    ids = fill(url)
    assert audit_lines(url, tmp_path) == []
    empty = run("audit", "--url", url, cwd=tmp_path)
    assert empty.returncode == 0 and empty.stdout.strip() == "no actions recorded yet"
    steps = [
        ("retry", ids["x-1"], "--json"),
        ("cancel", ids["later"], "--json"),
        ("retry", "--state", "dead", "--yes"),
        ("delete", ids["x0"], "--yes"),
        ("purge", "--older-than", "0s", "--state", "succeeded", "--yes"),
    ]
    for step in steps:
        done = run(
            step[0], "--url", url, *step[1:], cwd=tmp_path, env={**os.environ, "USER": "mallory"}
        )
        assert done.returncode == 0, (step, done.stderr)
    for verb in ("pause", "resume"):
        done = run("queues", "--url", url, verb, "later", cwd=tmp_path)
        assert done.returncode == 0, done.stderr

    got = audit_lines(url, tmp_path)
    assert [e["action"] for e in got] == [
        "queue_resume",
        "queue_pause",
        "purge",
        "delete",
        "retry",
        "cancel",
        "retry",
    ]
    assert {e["actor"] for e in got} == {ME}  # the real uid's name, not $USER
    assert {e["source"] for e in got} == {"cli"}
    assert {e["host"] for e in got} == {socket.gethostname()}
    by = {(e["action"], e["detail"].split(";")[0]): e for e in got}
    one = by[("retry", "by id")]
    assert one["count"] == 1 and one["job_ids"] == [ids["x-1"]]
    bulk = by[("retry", "state=dead")]
    assert bulk["count"] == 1 and bulk["job_ids"] == [ids["x-2"]]  # x-1 was retried before
    assert by[("cancel", "by id")]["job_ids"] == [ids["later"]]
    assert by[("delete", "by id")]["count"] == 1
    purged = next(e for e in got if e["action"] == "purge")
    assert purged["count"] == 2 and "succeeded" in purged["detail"]  # x1 and x2 (x0 deleted)
    assert by[("queue_pause", "queue later")]["count"] == 0
    times = [e["at"] for e in got]
    assert times == sorted(times, reverse=True)

    assert len(audit_lines(url, tmp_path, "--limit", "2")) == 2
    table = run("audit", "--url", url, cwd=tmp_path)  # a pipe: plain aligned text
    assert table.returncode == 0 and "queue_resume" in table.stdout and ME in table.stdout


def test_migrate_import_and_restore_are_recorded(tmp_path: Path) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    ids = fill(source)
    done = run("migrate", "--from", source, "--to", target, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [into] = audit_lines(target, tmp_path)
    [out_of] = audit_lines(source, tmp_path)
    assert into["action"] == out_of["action"] == "migrate"
    assert into["count"] == out_of["count"] == 3  # 2 dead and 1 queued moved
    assert into["detail"].startswith(f"from {source}") and out_of["detail"].startswith("to ")

    export = tmp_path / "jobs.jsonl"
    done = run("export", "--url", source, "--format", "jsonl", "-o", str(export), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    fresh = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("import", str(export), "--url", fresh, cwd=tmp_path).returncode == 0
    [imported] = audit_lines(fresh, tmp_path)
    assert imported["action"] == "import" and imported["count"] == 3
    assert set(imported["job_ids"]) == {ids["x0"], ids["x1"], ids["x2"]}

    backup = tmp_path / "backup.db"
    assert run("backup", "--url", source, str(backup), cwd=tmp_path).returncode == 0
    done = run("restore", str(backup), "--url", target, "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # The restored file is the backup's, its log included; the restore is added on top.
    restored = audit_lines(target, tmp_path)
    assert [e["action"] for e in restored] == ["restore", "migrate"]
    assert restored[0]["count"] == 3 and str(backup) in restored[0]["detail"]


def test_a_store_without_the_feature_says_so_in_one_line(tmp_path: Path) -> None:
    """As a store that does not declare ``action_log`` yet (MariaDB, for now) answers:
    the feature taken off SQLite in a child process."""
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    app = conveyor.App(url)
    assert "action_log" in app.backend.features  # opened: the file exists
    app.close()
    code = (
        "import sys\n"
        "from conveyor.backends.sqlite import backend\n"
        "backend.SQLiteBackend.features = backend.FEATURES - {'action_log'}\n"
        "from conveyor.cli.main import main\n"
        f"sys.argv = ['conveyor', 'audit', '--url', {url!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == "Error: the sqlite store does not keep an actions log yet"
