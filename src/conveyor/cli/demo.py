"""``conveyor demo``: the main job on the embedded default, end to end in a few seconds.

Enqueues a few thousand sample jobs (fast, slow, flaky-then-succeeding, doomed) into a
local SQLite file, runs a worker with a live progress bar, prints a summary, says what
the failures were (deliberate) and prints commands to look further that work as printed.

Example:
    >>> "conveyor" in conveyor_command() or "-m conveyor.cli" in conveyor_command()
    True
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from conveyor.redaction import redacted
from conveyor.states import FINISHED_STATES, JobState


@click.command("demo")
@click.option("--jobs", "total", type=click.IntRange(min=10), default=3000, show_default=True)
@click.option("-c", "--concurrency", type=click.IntRange(min=1), default=16, show_default=True)
@click.option(
    "--keep", is_flag=True, help="Keep the previous demo database instead of starting fresh."
)
def demo(total: int, concurrency: int, keep: bool) -> None:
    """Run sample jobs on a local SQLite file and show what happened."""
    if not keep and not os.environ.get("CONVEYOR_DEMO_URL"):
        shutil.rmtree(".conveyor-demo", ignore_errors=True)
    from conveyor import Args
    from conveyor import demo as sample
    from conveyor.worker.worker import Worker

    console = Console()
    app = sample.app
    rng = random.Random(7)
    n_doomed, n_flaky, n_slow = total // 150, total // 10, total // 15
    n_fast = total - n_doomed - n_flaky - n_slow
    started = time.perf_counter()
    sample.square.enqueue_many([(i,) for i in range(n_fast)])
    sample.sleepy.enqueue_many([(rng.randint(5, 30),) for _ in range(n_slow)])
    sample.flaky.enqueue_many([Args(i, failures=1 + i % 2) for i in range(n_flaky)])
    sample.doomed.enqueue_many([(i,) for i in range(n_doomed)])
    enqueue_s = time.perf_counter() - started
    console.print(
        f"[bold]conveyor demo[/]: {total} jobs enqueued into {redacted(app.url)} in {enqueue_s * 1000:.0f} ms"
    )

    worker = Worker(app, queues=["default:3", "slow:1"], concurrency=concurrency).start()
    run_started = time.perf_counter()
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("running jobs", total=total)
        while True:
            counts = _counts(app)
            finished = sum(counts.get(s.value, 0) for s in sorted(FINISHED_STATES))
            progress.update(
                bar,
                completed=finished,
                description=f"running ({counts.get('running', 0)} now, {counts.get('scheduled', 0)} waiting to retry)",
            )
            if finished >= total:
                break
            time.sleep(0.1)
    elapsed = time.perf_counter() - run_started
    worker.stop()
    _summary(console, app, total, elapsed)
    _explain(console, n_flaky=n_flaky, n_doomed=n_doomed)
    _next_steps(console, sample.DEMO_URL, _first_dead_id(app))


def _counts(app: object) -> dict[str, int]:
    totals: dict[str, int] = {}
    for stats in app.backend.queue_stats():  # type: ignore[attr-defined]
        for state, count in stats.counts.items():
            totals[state] = totals.get(state, 0) + count
    return totals


def _summary(console: Console, app: object, total: int, elapsed: float) -> None:
    backend = app.backend  # type: ignore[attr-defined]
    counts = _counts(app)
    retried = 0
    after = None
    while True:
        from conveyor.backends.base import JobListParams

        page = backend.job_list(JobListParams(after_id=after, limit=1000))
        if not page:
            break
        retried += sum(1 for j in page if j.attempt > 1)
        after = page[-1].id
    table = Table(title="demo summary")
    for col in ("jobs", "done", "retried", "dead", "seconds", "jobs/s"):
        table.add_column(col, justify="right")
    table.add_row(
        str(total),
        str(counts.get("succeeded", 0)),
        str(retried),
        str(counts.get("dead", 0)),
        f"{elapsed:.2f}",
        f"{total / elapsed:,.0f}",
    )
    console.print(table)


def _explain(console: Console, *, n_flaky: int, n_doomed: int) -> None:
    """Say that the failures are the point, so a dead job does not look like a bug."""
    console.print(
        "\n[bold]The failures are deliberate[/]: they show what conveyor does with errors.\n"
        f"- {n_flaky} demo.flaky jobs raise ConnectionError on their first attempt or two,"
        " then succeed: every failed attempt is stored and the job retried with backoff.\n"
        f"- {n_doomed} demo.doomed jobs always raise ValueError: after their 2 attempts"
        " (max_attempts=2) they are [bold]dead[/] on purpose, kept with their error and"
        " traceback until you retry or delete them. That is the 'dead' column."
    )


def _first_dead_id(app: object) -> str | None:
    from conveyor.backends.base import JobListParams

    backend = app.backend  # type: ignore[attr-defined]
    page = backend.job_list(JobListParams(state=JobState.DEAD, limit=1))
    return page[0].id if page else None


def _next_steps(console: Console, url: str, dead_id: str | None) -> None:
    """Commands to look further, printed whole (never wrapped) so they paste as they are."""
    cli, target = conveyor_command(), shlex.quote(url)
    commands = [
        f"{cli} status --url {target}",
        f"{cli} jobs --url {target} --state dead",
    ]
    if dead_id is not None:
        commands.append(f"{cli} job --url {target} {dead_id}")
    console.print("\nLook further (these work as printed, from this directory):")
    for command in commands:
        console.print(f"  {command}", markup=False, highlight=False, soft_wrap=True)
    path = url.removeprefix("sqlite:///")
    if url.startswith("sqlite:///") and shutil.which("sqlite3"):
        query = shlex.quote("SELECT task, state, COUNT(*) FROM jobs GROUP BY 1, 2")
        console.print(
            f"  sqlite3 {shlex.quote(path)} {query}", markup=False, highlight=False, soft_wrap=True
        )


def conveyor_command() -> str:
    """How to run this same conveyor from the user's shell, in a form that pastes as is.

    ``conveyor`` when that is on PATH, else the venv's script (relative to the current
    directory when under it: ``.venv/bin/conveyor`` after ``make demo``), else
    ``python -m conveyor.cli`` with this interpreter.
    """
    script = Path(sys.executable).parent / "conveyor"
    on_path = shutil.which("conveyor")
    if on_path and script.exists() and Path(on_path).resolve() == script.resolve():
        return "conveyor"
    if script.exists():
        try:
            return shlex.quote(str(script.relative_to(Path.cwd())))
        except ValueError:
            return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m conveyor.cli"
