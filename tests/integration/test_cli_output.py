"""What a user sees from the real ``conveyor`` console script, through a pipe and in a
pseudo terminal at 60, 80 and 200 columns: whole ids that can be fed back, rows that
``grep``/``awk`` find, job text printed literally (no markup, controls escaped), ISO 8601
times (local zone, or UTC with ``--utc``) and one line for an empty result."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobClaimParams, JobProgressParams
from conveyor.worker.worker import Worker
from tests.integration.cli_run import in_pty
from tests.support.redis_server import isolated_url

CONVEYOR = str(Path(sys.executable).with_name("conveyor"))
#: A local zone that is not UTC (POSIX rule: 5:30 east of Greenwich), so that a time
#: printed in UTC by mistake cannot pass for local.
LOCAL_TZ = "XYZ-05:30"
LOCAL_OFFSET = dt.timezone(dt.timedelta(hours=5, minutes=30))
#: What the failing task raises: ESC (an SGR colour), CR, and a C1 CSI.
NASTY_ERROR = "bad \x1b[31mred\x1b[0m\rover\x9b2J"
NASTY_ERROR_SHOWN = r"bad \x1b[31mred\x1b[0m\rover\x9b2J"
ID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
SGR = re.compile(r"\x1b\[[0-9;]*m")

Store = tuple[str, dict[str, str]]


def fill(url: str) -> dict[str, str]:
    """Jobs whose arguments look like rich markup, one dead with a nasty error and a
    log line with markup and an escape sequence, one queued."""
    app = conveyor.App(url, max_attempts=1)

    @app.task(name="t.echo")
    def echo(text: str) -> str:
        logging.getLogger("t.echo").info("log [/] \x1b[2J %s", text)
        if text == "fail":
            raise ValueError(NASTY_ERROR)
        return text

    ids = {
        "close": echo.enqueue("[/]").id,
        "link": echo.enqueue("[link=http://x]hi").id,
        "dead": echo.enqueue("fail").id,
    }
    Worker(app, burst=True).run(install_signals=False)
    ids["queued"] = echo.enqueue("later").id
    app.close()
    return ids


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    url = f"sqlite:///{tmp_path_factory.mktemp('out') / 'jobs.db'}"
    return url, fill(url)


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES", "NO_COLOR"}}
    base.update(TZ=LOCAL_TZ, TERM="xterm-256color", **extra)
    base.pop("FORCE_COLOR", None)
    return base


def pipe(url: str, *args: str) -> str:
    """stdout of ``conveyor ARGS --url URL`` read through a pipe (exit 0 asserted)."""
    done = subprocess.run(
        [CONVEYOR, *args, "--url", url], capture_output=True, text=True, env=env(), timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def shell(command: str) -> str:
    done = subprocess.run(command, shell=True, capture_output=True, text=True, env=env())
    assert done.returncode == 0, (command, done.stderr)
    return done.stdout


def tty(url: str, *args: str, columns: int) -> str:
    """Everything ``conveyor ARGS --url URL`` writes to a pseudo terminal of COLUMNS."""
    out, _ = in_pty([CONVEYOR, *args, "--url", url], columns=columns, env=env(), stderr_too=False)
    return out


def visible(raw: str) -> str:
    """Terminal output without rich's own colour codes."""
    return SGR.sub("", raw)


def assert_literal(raw: str) -> None:
    """No markup was interpreted and no job-made control sequence reached the terminal."""
    assert "\x1b]8;" not in raw  # no OSC 8 hyperlink from [link=…]
    for sequence in ("\x1b[31m", "\x1b[2J", "\r", "\x9b"):
        assert sequence not in raw


def json_jobs(url: str, *args: str) -> list[dict[str, object]]:
    return json.loads(pipe(url, "jobs", "--json", *args))["jobs"]  # type: ignore[no-any-return]


# -- through a pipe -------------------------------------------------------------


def test_pipe_listing_has_whole_ids_that_awk_feeds_back(sqlite_store: Store) -> None:
    url, ids = sqlite_store
    out = shell(f"{CONVEYOR} jobs --url {shlex.quote(url)} | awk 'NR > 1 {{print $1}}'")
    listed = out.split()
    assert listed == sorted(ids.values(), reverse=True)  # newest first
    for job_id in listed:
        assert json.loads(pipe(url, "job", job_id, "--json"))["job"]["id"] == job_id
    cut = shell(f"{CONVEYOR} jobs --url {shlex.quote(url)} | tr -s ' ' | cut -d' ' -f1,4")
    assert f"{ids['dead']} dead" in cut.splitlines()


def test_pipe_status_grep_finds_the_queue_row(sqlite_store: Store) -> None:
    url, _ = sqlite_store
    [row] = shell(f"{CONVEYOR} status --url {shlex.quote(url)} | grep default").splitlines()
    counts = json.loads(pipe(url, "status", "--json"))["queues"][0]["counts"]
    header = pipe(url, "status").splitlines()[1].split()
    fields = dict(zip(header, row.split(), strict=True))
    assert fields["queue"] == "default"
    assert {s: int(fields[s]) for s in counts} == counts


def test_pipe_prints_job_text_literally(sqlite_store: Store) -> None:
    url, ids = sqlite_store
    listing = pipe(url, "jobs")
    assert '"[/]"' in listing and '"[link=http://x]hi"' in listing
    shown = pipe(url, "job", ids["dead"])
    assert NASTY_ERROR_SHOWN in shown
    assert r"log [/] \x1b[2J fail" in shown
    assert "Traceback (most recent call last):\n" in shown  # a block keeps its newlines
    assert "\x1b" not in listing + shown and "\r" not in shown
    assert "[/]" in pipe(url, "job", ids["close"])


def test_pipe_times_are_iso_local_or_utc(sqlite_store: Store) -> None:
    url, ids = sqlite_store
    record = json.loads(pipe(url, "job", ids["dead"], "--json", "--epoch"))["job"]
    local = dt.datetime.fromtimestamp(record["run_at"], LOCAL_OFFSET).isoformat("T", "seconds")
    utc = dt.datetime.fromtimestamp(record["run_at"], dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert local.endswith("+05:30")
    assert f"run_at: {local}\n" in pipe(url, "job", ids["dead"])
    assert f"run_at: {utc}\n" in pipe(url, "job", ids["dead"], "--utc")
    created = dt.datetime.fromtimestamp(record["created_at"], LOCAL_OFFSET)
    row = next(line for line in pipe(url, "jobs").splitlines() if line.startswith(ids["dead"]))
    assert created.isoformat("T", "seconds") in row.split()
    row = next(
        line for line in pipe(url, "jobs", "--utc").splitlines() if line.startswith(ids["dead"])
    )
    assert created.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") in row.split()


def test_empty_results_say_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    empty = conveyor.App(url)
    assert empty.backend.queue_list() == []  # the store exists, with no job in it
    empty.close()
    assert pipe(url, "jobs") == "no jobs\n"
    assert pipe(url, "jobs", "--state", "dead") == "no jobs match\n"
    assert pipe(url, "queues") == "no queues\n"
    assert pipe(url, "status") == f"no queues in {url}\n\nno live workers\n"
    assert json.loads(pipe(url, "jobs", "--json")) == {"jobs": [], "next_after": None}
    assert json.loads(pipe(url, "queues", "--json")) == []
    assert visible(tty(url, "jobs", "--state", "dead", columns=80)) == "no jobs match\n"
    assert visible(tty(url, "queues", columns=80)) == "no queues\n"


# -- in a terminal --------------------------------------------------------------


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_terminal_shows_whole_ids_names_and_literal_text(sqlite_store: Store, columns: int) -> None:
    url, ids = sqlite_store
    raw = tty(url, "jobs", columns=columns)
    assert_literal(raw)
    text = visible(raw)
    assert "…" not in text
    assert set(ID.findall(text)) == set(ids.values())
    copied = next(i for i in ID.findall(text) if i == ids["link"])  # as copied off the screen
    assert json.loads(pipe(url, "job", copied, "--json"))["job"]["id"] == copied
    assert max(len(line) for line in text.splitlines()) <= columns
    assert '"[/]"' in text and "[link=http://x]hi" in text

    raw = tty(url, "job", ids["dead"], columns=columns)
    assert_literal(raw)
    text = visible(raw)
    assert ids["dead"] in text and NASTY_ERROR_SHOWN in text
    assert max(len(line) for line in text.splitlines()) <= columns

    raw = tty(url, "status", columns=columns)
    assert_literal(raw)
    text = visible(raw)
    assert re.search(r"\bdefault\b", text) and "…" not in text


def test_terminal_times_are_iso(sqlite_store: Store) -> None:
    url, ids = sqlite_store
    record = json.loads(pipe(url, "job", ids["dead"], "--json", "--epoch"))["job"]
    run_at = dt.datetime.fromtimestamp(record["run_at"], LOCAL_OFFSET).isoformat("T", "seconds")
    text = visible(tty(url, "job", ids["dead"], columns=200))
    assert re.search(rf"run_at\s+{re.escape(run_at)}", text)
    assert str(record["run_at"]) not in text
    text = visible(tty(url, "job", ids["dead"], "--utc", columns=200))
    utc = dt.datetime.fromtimestamp(record["run_at"], dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert re.search(rf"run_at\s+{re.escape(utc)}", text)
    created = dt.datetime.fromtimestamp(record["created_at"], LOCAL_OFFSET)
    row = next(
        line
        for line in visible(tty(url, "jobs", columns=150)).splitlines()
        if line.startswith(ids["dead"])
    )
    assert created.isoformat("T", "seconds") in row.split()  # room for times: kept whole


# -- on Redis -------------------------------------------------------------------


@pytest.mark.redis
def test_redis_listing_pipe_and_terminal(request: pytest.FixtureRequest) -> None:
    url = isolated_url(request)
    ids = fill(url)
    listed = [line.split()[0] for line in pipe(url, "jobs").splitlines()[1:]]
    assert listed == sorted(ids.values(), reverse=True)
    raw = tty(url, "jobs", columns=80)
    assert_literal(raw)
    assert set(ID.findall(visible(raw))) == set(ids.values())
    shown = pipe(url, "job", ids["dead"])
    assert NASTY_ERROR_SHOWN in shown and "\x1b" not in shown
    assert pipe(url, "jobs", "--state", "cancelled") == "no jobs match\n"


def test_status_shows_progress_messages_literally(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'progress.db'}"
    app = conveyor.App(url)

    @app.task(name="t.slow")
    def slow() -> None: ...

    job = slow.enqueue()
    [claimed] = app.backend.job_claim(JobClaimParams("w-1", [("default", 1)], 1))
    app.backend.job_progress_many(
        [JobProgressParams(job.id, claimed.token, 0.4, "[/] [link=http://x]step\x1b[2J")]
    )
    app.close()
    row = next(line for line in pipe(url, "status").splitlines() if line.startswith(job.id))
    assert row.endswith("40%  [/] [link=http://x]step\\x1b[2J")
    raw = tty(url, "status", columns=120)
    assert_literal(raw)
    assert "[/] [link=http://x]step\\x1b[2J" in visible(raw)
