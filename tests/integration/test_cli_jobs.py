"""A new user's week with ``conveyor jobs``/``job``/``retry``/``cancel``/``export``, run as
the real console script through a pipe and in a pseudo terminal: newest first, the
error and run-at columns, filters by parameter name however the argument was passed,
id prefixes, ISO 8601 times in machine-readable output and progress as a percentage."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import sys
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobClaimParams, JobProgressParams
from conveyor.worker.worker import Worker
from tests.integration.cli_run import assert_one_error, clean_env, in_pty
from tests.integration.cli_run import conveyor as run_cli
from tests.support.backends import CLI_URLS

CONVEYOR = str(Path(sys.executable).with_name("conveyor"))
SHOP = """
import conveyor

app = conveyor.App(max_attempts=1)


@app.task(name="shop.send_welcome")
def send_welcome(user_id: int, subject: str = "Welcome!") -> str:
    if user_id < 0:
        raise ValueError(f"no user {user_id}")
    return f"sent {subject!r} to user {user_id}"


@app.task(name="shop.sync_user")
def sync_user(user_id: int) -> None: ...
"""
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def shop_app(url: str) -> tuple[conveyor.App, conveyor.Task, conveyor.Task]:  # type: ignore[type-arg]
    """The same tasks as shop.py, in this process, on ``url``."""
    namespace: dict[str, object] = {}
    exec(SHOP, namespace)  # the module's own text: the names and signatures match
    app = namespace["app"]
    assert isinstance(app, conveyor.App)
    app.override_url(url)
    return app, app.tasks["shop.send_welcome"], app.tasks["shop.sync_user"]


def cli(project: Path, url: str, *args: str) -> str:
    """stdout of ``conveyor ARGS --url URL`` through a pipe (exit 0 asserted)."""
    done = run_cli(*args, "--url", url, cwd=project, env=env())
    assert done.returncode == 0, done.stderr
    return done.stdout


def env() -> dict[str, str]:
    out = clean_env(TZ="UTC", TERM="xterm-256color")
    for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR"):
        out.pop(name, None)
    return out


def rows(listing: str) -> list[dict[str, str]]:
    """A pipe listing as {header: value}; values without spaces split as awk would."""
    header, *lines = listing.splitlines()
    names = header.split()
    starts = [header.index(n) for n in names]
    out = []
    for line in lines:
        if line.startswith("more:"):
            continue
        cells = [
            line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1], strict=True)
        ]
        out.append(dict(zip(names, cells, strict=True)))
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "shop.py").write_text(SHOP.lstrip())
    return tmp_path


@pytest.fixture
def filled(project: Path) -> tuple[str, dict[str, str]]:
    """On SQLite: succeeded, dead (with its error), scheduled and queued jobs."""
    url = f"sqlite:///{project / 'shop.db'}"
    app, welcome, sync = shop_app(url)
    ids = {"ok": welcome.enqueue(1).id, "dead": welcome.enqueue(-1).id}
    Worker(app, burst=True).run(install_signals=False)
    ids["later"] = welcome.enqueue_after(3600, 2).id
    ids["queued"] = sync.enqueue(3).id
    app.close()
    return url, ids


# -- listing ---------------------------------------------------------------------


def test_jobs_are_newest_first_with_error_and_run_at_columns(
    project: Path, filled: tuple[str, dict[str, str]]
) -> None:
    url, ids = filled
    listed = rows(cli(project, url, "jobs"))
    assert [r["id"] for r in listed] == sorted(ids.values(), reverse=True)
    by_id = {r["id"]: r for r in listed}
    assert by_id[ids["dead"]]["error"] == "ValueError: no user -1"
    assert by_id[ids["ok"]]["error"] == "-" and by_id[ids["queued"]]["error"] == "-"
    record = json.loads(cli(project, url, "job", ids["later"], "--json", "--epoch"))["job"]
    run_at = dt.datetime.fromtimestamp(record["run_at"], dt.UTC).isoformat("T", "seconds")
    assert by_id[ids["later"]]["run_at"] == run_at  # TZ=UTC: local is +00:00
    assert {by_id[i]["run_at"] for i in ids.values() if i != ids["later"]} == {"-"}
    oldest = rows(cli(project, url, "jobs", "--oldest-first"))
    assert [r["id"] for r in oldest] == sorted(ids.values())


@pytest.mark.parametrize("columns", [60, 100, 200])
def test_terminal_listing_at_several_widths(
    project: Path, filled: tuple[str, dict[str, str]], columns: int
) -> None:
    url, ids = filled
    out, _ = in_pty(
        [CONVEYOR, "jobs", "--url", url],
        columns=columns,
        cwd=project,
        env=env(),
        stderr_too=False,
    )
    text = SGR.sub("", out)
    assert max(len(line) for line in text.splitlines()) <= columns
    found = re.findall(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", text)
    assert found == sorted(ids.values(), reverse=True)  # whole, newest first
    flat = " ".join(text.split())  # the error may wrap inside its column
    assert "ValueError: no user -1" in flat or "ValueError: no user" in text
    assert "run_at" in text and "error" in text


# -- filters by parameter name -----------------------------------------------------


@pytest.mark.parametrize("backend_name", sorted(CLI_URLS))
def test_where_by_parameter_name_matches_however_it_was_passed(
    project: Path, request: pytest.FixtureRequest, backend_name: str
) -> None:
    url = CLI_URLS[backend_name](request, project)
    app, welcome, sync = shop_app(url)
    ids = {
        "positional": welcome.enqueue(42).id,
        "keyword": welcome.enqueue(user_id=42).id,
        "other": welcome.enqueue(43).id,
        "sync": sync.enqueue(42).id,
        "subject": welcome.enqueue(7, "Hi").id,
    }
    app.close()

    def matching(*args: str) -> set[str]:
        out = cli(project, url, "jobs", "--app", "shop:app", "--json", *args)
        return {j["id"] for j in json.loads(out)["jobs"]}

    assert matching("--where", "kwargs.user_id=42") == {
        ids["positional"],
        ids["keyword"],
        ids["sync"],
    }
    assert matching("--where", "kwargs.user_id=42", "--task", "shop.send_welcome") == {
        ids["positional"],
        ids["keyword"],
    }
    assert matching("--where", "args.0=42") == {ids["positional"], ids["keyword"], ids["sync"]}
    assert matching("--where", 'kwargs.subject="Hi"') == {ids["subject"]}
    exported = run_cli(
        "export",
        "--url",
        url,
        "--app",
        "shop:app",
        "--where",
        "kwargs.user_id=43",
        cwd=project,
        env=env(),
    )
    assert [json.loads(line)["id"] for line in exported.stdout.splitlines()] == [ids["other"]]
    # Without the app there is no signature: keyword only, and a note says how to get both.
    bare = run_cli("jobs", "--url", url, "--json", "--where", "kwargs.user_id=42", cwd=project)
    assert {j["id"] for j in json.loads(bare.stdout)["jobs"]} == {ids["keyword"]}
    assert bare.stderr == ""  # --json: for scripts, nothing but the data
    bare = run_cli("jobs", "--url", url, "--where", "kwargs.user_id=42", cwd=project)
    assert [r["id"] for r in rows(bare.stdout)] == [ids["keyword"]]
    assert "give --app MODULE:ATTR to match both" in bare.stderr
    cancelled = run_cli(
        "cancel",
        "--url",
        url,
        "--app",
        "shop:app",
        "--where",
        "kwargs.user_id=42",
        "--task",
        "shop.send_welcome",
        "--yes",
        "--json",
        cwd=project,
        env=env(),
    )
    assert json.loads(cancelled.stdout)["changed"] == 2, cancelled.stderr


# -- id prefixes ------------------------------------------------------------------


def _shared(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))


def _unique_prefix(job_id: str, others: list[str]) -> str:
    return job_id[: max(4, *(_shared(job_id, o) + 1 for o in others))]


def test_job_retry_cancel_take_a_unique_id_prefix(
    project: Path, filled: tuple[str, dict[str, str]]
) -> None:
    url, ids = filled
    others = [i for i in ids.values() if i != ids["dead"]]
    short = _unique_prefix(ids["dead"], others)
    assert len(short) < 26
    assert json.loads(cli(project, url, "job", short, "--json"))["job"]["id"] == ids["dead"]
    assert ids["dead"] in cli(project, url, "job", short)
    out = json.loads(cli(project, url, "retry", short, "--json"))
    assert out == {"action": "retry", "matched": 1, "changed": 1}
    later = _unique_prefix(ids["later"], [i for i in ids.values() if i != ids["later"]])
    out = json.loads(cli(project, url, "cancel", later, "--json"))
    assert out == {"action": "cancel", "matched": 1, "changed": 1}
    states = {j["id"]: j["state"] for j in json.loads(cli(project, url, "jobs", "--json"))["jobs"]}
    assert states[ids["dead"]] == "queued" and states[ids["later"]] == "cancelled"


def test_an_ambiguous_prefix_lists_a_few_and_none_is_not_found(
    project: Path, filled: tuple[str, dict[str, str]]
) -> None:
    url, ids = filled
    ordered = sorted(ids.values())
    shared = ordered[0][: _shared(ordered[0], ordered[-1])]
    assert len(shared) >= 4  # made within the same minute: the time part is shared
    for command in ("job", "retry", "cancel"):
        proc = run_cli(command, shared, "--url", url, cwd=project, env=env())
        line = assert_one_error(proc, 2, f"job id prefix {shared!r} is ambiguous")
        assert sum(i in line for i in ids.values()) >= 2
    missing = "ZZZZZZZZ"
    assert_one_error(run_cli("job", missing, "--url", url, cwd=project), 1, f"no job {missing}")
    assert_one_error(run_cli("retry", missing, "--url", url, cwd=project), 1, f"no job {missing}")
    assert_one_error(run_cli("cancel", missing, "--url", url, cwd=project), 1, "no job")
    # delete takes whole ids only: a prefix deletes nothing
    proc = run_cli("delete", ids["ok"][:20], "--url", url, cwd=project)
    assert_one_error(proc, 1, "no job")
    assert json.loads(cli(project, url, "job", ids["ok"], "--json"))["job"]["id"] == ids["ok"]


# -- times and progress -------------------------------------------------------------


def test_machine_readable_times_are_iso_8601_or_epoch(
    project: Path, filled: tuple[str, dict[str, str]]
) -> None:
    url, ids = filled
    [dead] = json.loads(cli(project, url, "jobs", "--json", "--state", "dead"))["jobs"]
    assert ISO_UTC.match(dead["created_at"]) and ISO_UTC.match(dead["finished_at"])
    assert dead["lease_until"] is None
    [epoch] = json.loads(cli(project, url, "jobs", "--json", "--state", "dead", "--epoch"))["jobs"]
    assert isinstance(epoch["created_at"], float)
    iso = dt.datetime.fromisoformat(dead["created_at"]).timestamp()
    assert abs(iso - epoch["created_at"]) < 1e-5
    full = json.loads(cli(project, url, "job", ids["dead"], "--json"))
    assert ISO_UTC.match(full["job"]["run_at"])
    assert ISO_UTC.match(full["attempts"][0]["started_at"])
    lines = cli(project, url, "export", "--state", "dead").splitlines()
    assert ISO_UTC.match(json.loads(lines[0])["finished_at"])
    epoch_lines = cli(project, url, "export", "--state", "dead", "--epoch").splitlines()
    assert json.loads(epoch_lines[0])["finished_at"] == epoch["finished_at"]
    [row] = csv.DictReader(
        io.StringIO(cli(project, url, "export", "--format", "csv", "--state", "dead"))
    )
    assert ISO_UTC.match(row["created_at"])


def test_progress_is_a_percentage_where_a_user_reads_it(project: Path) -> None:
    url = f"sqlite:///{project / 'shop.db'}"
    app, _, sync = shop_app(url)
    job = sync.enqueue(1)
    [claimed] = app.backend.job_claim(JobClaimParams("w-1", [("default", 1)], 1))
    app.backend.job_progress_many([JobProgressParams(job.id, claimed.token, 0.1333333, "step")])
    app.close()
    assert "progress: 13%\n" in cli(project, url, "job", job.id)
    status_row = next(line for line in cli(project, url, "status").splitlines() if job.id in line)
    assert "13%" in status_row
    out, _ = in_pty(
        [CONVEYOR, "job", job.id, "--url", url],
        columns=100,
        cwd=project,
        env=env(),
        stderr_too=False,
    )
    assert re.search(r"progress\s+13%", SGR.sub("", out))
    assert json.loads(cli(project, url, "job", job.id, "--json"))["job"]["progress"] == 0.1333333
