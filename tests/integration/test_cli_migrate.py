"""``conveyor migrate`` between every two backends, interrupted and rerun: every job
moved exactly once, with its state, attempts and errors."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from click.testing import CliRunner

import conveyor
from conveyor.backends.base import IntegrityCheckParams, JobCountParams, JobFilter, JobListParams
from conveyor.cli.main import cli
from conveyor.cli.migrate import MOVED, move_page
from tests.support.backends import BACKEND_URLS
from tests.support.stores import fill

DIRECTIONS = [f"{a}->{b}" for a, b in itertools.permutations(sorted(BACKEND_URLS), 2)]


def _moved(url: str) -> list[str]:
    app = conveyor.App(url)
    try:
        return [
            j.id
            for j in app.backend.job_list(JobListParams(limit=1000, filter=JobFilter(states=MOVED)))
        ]
    finally:
        app.close()


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_migrate_moves_jobs_and_reruns_cleanly(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    a, b = direction.split("->")
    (tmp_path / "from").mkdir()
    (tmp_path / "to").mkdir()
    source = BACKEND_URLS[a](request, tmp_path / "from")
    target = BACKEND_URLS[b](request, tmp_path / "to")
    ids = fill(source)
    app = conveyor.App(source)
    app.task(name="t.more")(lambda i: i).with_options(delay=3600).enqueue(1)  # scheduled
    for i in range(12):
        app.task(name="t.more2")(lambda i: i).enqueue(i)
    app.close()
    wanted = sorted(_moved(source))
    assert len(wanted) == 2 + 1 + 1 + 12  # dead, queued "later", scheduled, queued
    # An interruption after two pages, then a crash between copy and delete of one page.
    first = CliRunner().invoke(
        cli, ["migrate", "--from", source, "--to", target, "--page-size", "3", "--limit", "2"]
    )
    assert first.exit_code == 0 and "moved 6 job(s)" in first.output and "left" in first.output
    src, dst = conveyor.App(source), conveyor.App(target)
    page = src.backend.job_list(JobListParams(limit=3, filter=JobFilter(states=MOVED)))
    move_page(src.backend, dst.backend, page, delete=False)
    src.close()
    dst.close()
    again = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert again.exit_code == 0, again.output
    assert "3 were already there" in again.output
    assert _moved(source) == [] and sorted(_moved(target)) == wanted  # exactly one copy each
    dst = conveyor.App(target)
    dead = dst.backend.job_get_many([ids["x-1"]])[0]
    assert dead.state.value == "dead" and dead.attempt == 1 and "bad x -1" in (dead.error or "")
    assert dst.backend.job_attempts(ids["x-1"])[0].outcome == "dead"
    assert dst.backend.job_count(JobCountParams(JobFilter(task="t.more"))) == 1
    dst.close()
    assert (
        "moved 0 job(s)"
        in CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target]).output
    )


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_migrate_refuses_while_a_workflow_waits_and_moves_nothing(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # Moving the parent would delete it from the source, which cancels its dependant
    # there (a deleted parent never releases it): the workflow would be lost.
    a, b = direction.split("->")
    (tmp_path / "from").mkdir()
    (tmp_path / "to").mkdir()
    source = BACKEND_URLS[a](request, tmp_path / "from")
    target = BACKEND_URLS[b](request, tmp_path / "to")
    app = conveyor.App(source)
    step = app.task(name="t.step")(lambda i: i)
    parent = step.enqueue(1)
    child = step.with_options(depends_on=[parent]).enqueue(2)
    app.close()
    refused = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert refused.exit_code == 1
    assert "1 job(s) on the source wait on workflow parents" in refused.output
    src = conveyor.App(source)
    states = {j.id: j.state.value for j in src.backend.job_get_many([parent.id, child.id])}
    src.close()
    assert states == {parent.id: "queued", child.id: "waiting"}
    assert _moved(target) == []


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_migrate_carries_unique_keys_unless_the_target_holds_them(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    a, b = direction.split("->")
    (tmp_path / "from").mkdir()
    (tmp_path / "to").mkdir()
    source = BACKEND_URLS[a](request, tmp_path / "from")
    target = BACKEND_URLS[b](request, tmp_path / "to")
    src = conveyor.App(source)
    send = src.task(name="t.send")(lambda n: n)
    free = send.with_options(unique_key="k1").enqueue(1)
    taken = send.with_options(unique_key="k2").enqueue(2)
    src.close()
    dst = conveyor.App(target)
    resident = dst.task(name="t.send")(lambda n: n).with_options(unique_key="k2").enqueue(3)
    dst.close()
    moved = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert moved.exit_code == 0 and "moved 2 job(s)" in moved.output, moved.output
    dst = conveyor.App(target)
    again = dst.task(name="t.send")(lambda n: n)
    assert again.with_options(unique_key="k1").enqueue(9).id == free.id  # the key came along
    assert again.with_options(unique_key="k2").enqueue(9).id == resident.id  # still theirs
    got = {j.id: j for j in dst.backend.job_get_many([free.id, taken.id, resident.id])}
    problems = dst.backend.integrity_check(IntegrityCheckParams(30.0))
    dst.close()
    assert problems == []
    assert got[free.id].unique_key == "k1" and got[resident.id].unique_key == "k2"
    assert got[taken.id].unique_key is None and got[taken.id].state.value == "queued"
