"""``conveyor import FILE.jsonl``: load what ``conveyor export --format jsonl`` wrote
into any store, under the jobs' own ids.

Two passes over the file. The first reads and checks every line (JSON, fields, state,
times) and writes nothing, so a bad file leaves the store as it was: the error is one
line naming the line number. The second inserts the jobs in batches (``--batch``, each
batch one transaction or script: ``job_import_many``, the path ``conveyor migrate``
uses); ids the store already has are skipped and counted, so a rerun after an
interruption finishes the job without duplicates.

Kept from the export: id, task, queue, state, priority, payload, result, error, reason,
attempt and rescue counts, every time, headers, unique key and window, workflow edges
and piping, attempt history, logs, durable steps and events not consumed yet (a job
parked by ``conveyor.wait_for`` comes back parked). A job that was running when the export was taken
comes back ``queued``, as a graceful release would leave it (attempt given back, a
``released`` attempt record): its worker belongs to the store the export came from.
Refused: a job whose secret arguments export masked (``"secrets_masked": true``; the
ciphertext is not in an export, see docs/secrets.md) and an odd row (``problems`` not
empty: export wrote what decoding repaired, not what was stored), and a ``waiting`` job
whose parents are neither in the file nor in the store (it would wait forever).

Example::

    conveyor export --format jsonl -o jobs.jsonl --url sqlite:///old.db
    conveyor import jobs.jsonl --url redis://10.0.0.5:6379/0
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Iterator
from typing import IO, Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from conveyor import records
from conveyor.backends.base import (
    AttemptRecord,
    JobEventSendParams,
    JobFlow,
    JobImport,
    JobImportParams,
    JobLogRecord,
    JobRecord,
    StepRecord,
    join_of,
)
from conveyor.backends.durable_params import parked_event
from conveyor.backends.params import check_importable
from conveyor.cli.action_log import record_cli_action
from conveyor.cli.common import store_options
from conveyor.cli.config import open_app
from conveyor.errors import ConveyorError, StoreNotFound
from conveyor.redaction import redacted
from conveyor.rules import RELEASED
from conveyor.states import JobState


class LineError(ConveyorError):
    """A line of the file that cannot be imported (the message names why)."""


_MISSING = object()


def _get(data: dict[str, Any], key: str, kinds: tuple[type, ...], default: Any = _MISSING) -> Any:
    value = data.get(key, default)
    if value is _MISSING:
        raise LineError(f"no {key!r}")
    if value is None and default is None:
        return None
    # bool is an int to Python, never to a job's counts.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise LineError(f"{key!r} must be {names}, got {json.dumps(value)[:40]}")
    return value


def _time(data: dict[str, Any], key: str, *, required: bool = False) -> float | None:
    """Epoch seconds from an export's time: ISO 8601 (the default) or a number
    (``--epoch``)."""
    value = data.get(key)
    if value is None:
        if required:
            raise LineError(f"no {key!r}")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            raise LineError(f"{key!r} is not an ISO 8601 time: {value[:40]!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)  # export writes UTC
        return moment.timestamp()
    raise LineError(f"{key!r} must be a time, got {json.dumps(value)[:40]}")


def _stored(value: Any) -> str | None:
    """A decoded JSON value back to the compact text the store holds (codec.encode's
    form)."""
    return None if value is None else json.dumps(value, separators=(",", ":"), allow_nan=False)


def job_from_line(data: Any, now: float) -> JobImport:
    """One export line (decoded) as a :class:`JobImport`; :class:`LineError` says what
    is wrong. A running job is given back as a release would (see the module doc)."""
    if not isinstance(data, dict):
        raise LineError("not a JSON object")
    job_id = _get(data, "id", (str,))
    if data.get("problems"):
        raise LineError(f"job {job_id} is an odd row ({'; '.join(map(str, data['problems']))})")
    if data.get("secrets_masked"):
        raise LineError(
            f"job {job_id} has secret arguments that export masked; an export cannot "
            "restore them (use conveyor backup/restore or conveyor migrate)"
        )
    try:
        state = JobState(_get(data, "state", (str,)))
    except ValueError:
        raise LineError(f"unknown state {data['state']!r}") from None
    headers = _get(data, "headers", (dict,), None)
    if headers is not None and not all(isinstance(v, str) for v in headers.values()):
        raise LineError("'headers' must map names to strings")
    job = JobRecord(
        id=job_id,
        task=_get(data, "task", (str,)),
        queue=_get(data, "queue", (str,)),
        state=state,
        priority=_get(data, "priority", (int,), 0),
        payload=_stored(_get(data, "payload", (dict,))) or "{}",
        attempt=_get(data, "attempt", (int,), 0),
        max_attempts=_get(data, "max_attempts", (int,)),
        rescues=_get(data, "rescues", (int,), 0),
        token=_get(data, "token", (int,), 0),
        run_at=_time(data, "run_at", required=True) or 0.0,
        created_at=_time(data, "created_at", required=True) or 0.0,
        timeout=_get(data, "timeout", (int, float), None),
        lease=float(_get(data, "lease", (int, float))),
        worker_id=None,
        lease_until=None,
        cancel_requested=_get(data, "cancel_requested", (bool,), False),
        result=_stored(data.get("result")),
        error=_stored(data.get("error")),
        reason=_get(data, "reason", (str,), None),
        started_at=_time(data, "started_at"),
        finished_at=_time(data, "finished_at"),
        progress=_get(data, "progress", (int, float), None),
        progress_message=_get(data, "progress_message", (str,), None),
        unique_key=_get(data, "unique_key", (str,), None),
        waiting_on=_get(data, "waiting_on", (int,), 0),
        headers=None if not headers else json.dumps(headers, separators=(",", ":")),
        expires_at=_time(data, "expires_at"),
    )
    attempts = [_attempt(job_id, a) for a in _get(data, "attempts", (list,), [])]
    logs = [_log(job_id, r) for r in _get(data, "logs", (list,), [])]
    parents = _get(data, "parents", (list,), [])
    if not all(isinstance(p, str) for p in parents):
        raise LineError("'parents' must be a list of job ids")
    flow = JobFlow(
        job_id, _get(data, "pipe", (int,), 0), tuple(parents), _time(data, "unique_until")
    )
    if state is JobState.RUNNING:
        # As job_release_many leaves it: queued, the attempt given back and recorded.
        attempts.append(
            AttemptRecord(
                job_id, job.attempt, job.token, _get(data, "worker_id", (str,), None),
                job.started_at, now, RELEASED, None,
            )
        )  # fmt: skip
        job = records.replace(job, state=JobState.QUEUED, attempt=max(0, job.attempt - 1))
    steps = [_step(job_id, r) for r in _get(data, "steps", (list,), [])]
    events = [_event(job_id, r) for r in _get(data, "events", (list,), [])]
    item = JobImport(job, attempts, logs, flow, steps, events)
    try:
        check_importable(item)
    except ConveyorError as exc:
        raise LineError(str(exc)) from None
    return item


def _attempt(job_id: str, data: Any) -> AttemptRecord:
    if not isinstance(data, dict):
        raise LineError("an attempt is not a JSON object")
    return AttemptRecord(
        job_id,
        _get(data, "attempt", (int,)),
        _get(data, "token", (int,)),
        _get(data, "worker_id", (str,), None),
        _time(data, "started_at"),
        _time(data, "finished_at"),
        _get(data, "outcome", (str,)),
        _stored(data.get("error")),
    )


def _step(job_id: str, data: Any) -> StepRecord:
    if not isinstance(data, dict):
        raise LineError("a step is not a JSON object")
    return StepRecord(
        job_id,
        _get(data, "position", (int,)),
        _get(data, "name", (str,)),
        _get(data, "state", (str,)),
        _get(data, "result", (str,), None),
        _get(data, "error", (str,), None),
        _get(data, "attempts", (int,), 1),
        _time(data, "started_at") or 0.0,
        _time(data, "finished_at") or 0.0,
    )


def _event(job_id: str, data: Any) -> JobEventSendParams:
    """An event sent and not consumed yet: ``{"name", "payload" (stored JSON text),
    "sent_at"}``."""
    if not isinstance(data, dict):
        raise LineError("an event is not a JSON object")
    return JobEventSendParams(
        job_id,
        _get(data, "name", (str,)),
        _get(data, "payload", (str,), "null"),
        _time(data, "sent_at") or 0.0,
    )


def _log(job_id: str, data: Any) -> JobLogRecord:
    if not isinstance(data, dict):
        raise LineError("a log record is not a JSON object")
    return JobLogRecord(
        job_id,
        _get(data, "attempt", (int,)),
        _time(data, "ts", required=True) or 0.0,
        _get(data, "level", (str,)),
        _get(data, "logger", (str,)),
        _get(data, "message", (str,)),
    )


def read_jobs(f: IO[str], name: str, now: float) -> Iterator[tuple[int, JobImport]]:
    """Every job of the file with its line number, in file order;
    ``click.ClickException`` naming the line of the first one that cannot be imported.
    Blank lines are skipped."""
    for number, line in enumerate(f, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise click.ClickException(f"line {number} of {name}: not JSON ({exc})") from None
        try:
            yield number, job_from_line(data, now)
        except LineError as exc:
            raise click.ClickException(f"line {number} of {name}: {exc}") from None


def _check_parents(
    waits: list[tuple[int, str, str]],
    ids: set[str],
    name: str,
    url: str | None,
    app_spec: str | None,
) -> None:
    """A waiting job's parents must come with it or be in the store already: an export
    filtered by state (``--state waiting``) would otherwise make jobs that wait forever.
    The store is only read here (not created: a missing one has no parent either)."""
    missing = [(n, child, parent) for n, child, parent in waits if parent not in ids]
    if not missing:
        return
    try:
        app = open_app(url, app_spec)
        found = {j.id for j in app.backend.job_get_many(sorted({p for _, _, p in missing}))}
    except StoreNotFound:
        found = set()
    for number, child, parent in missing:
        if parent not in found:
            raise click.ClickException(
                f"line {number} of {name}: job {child} waits on {parent}, which is neither "
                "in the file nor in the store (export its workflow whole)"
            )


@click.command("import")
@store_options
@click.argument("path", metavar="FILE.jsonl", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--batch",
    type=click.IntRange(1, 10_000),
    default=500,
    show_default=True,
    help="Jobs written per transaction.",
)
def import_jobs(url: str | None, app_spec: str | None, path: str, batch: int) -> None:
    """Import jobs from a JSON-lines export (`conveyor export --format jsonl`) under
    their own ids; ids the store has are skipped."""
    now = time.time()
    # Pass 1: check every line before anything is written.
    ids: set[str] = set()
    waits: list[tuple[int, str, str]] = []  # (line, waiting job, parent)
    total = 0
    with open(path, encoding="utf-8") as f:
        for number, item in read_jobs(f, path, now):
            total += 1
            ids.add(item.job.id)
            if item.job.state is JobState.WAITING and item.flow is not None:
                waits += [(number, item.job.id, p) for p in item.flow.parents]
            joined = join_of(parked_event(item.steps) or "")  # conveyor.join(child)
            if item.job.state is JobState.WAITING and joined is not None:
                waits.append((number, item.job.id, joined))
    _check_parents(waits, ids, path, url, app_spec)
    app = open_app(url, app_spec, create=True)
    new_ids: list[str] = []
    columns = (TextColumn("import"), BarColumn(), MofNCompleteColumn())
    with (
        open(path, encoding="utf-8") as f,
        Progress(*columns, console=Console(stderr=True), transient=True) as bar,
    ):
        task = bar.add_task("jobs", total=total)
        pending: list[JobImport] = []
        for _, item in read_jobs(f, path, now):
            pending.append(item)
            if len(pending) == batch:
                new_ids += app.backend.job_import_many(JobImportParams(pending))
                bar.advance(task, len(pending))
                pending = []
        if pending:
            new_ids += app.backend.job_import_many(JobImportParams(pending))
            bar.advance(task, len(pending))
    added = len(new_ids)
    skipped = total - added
    record_cli_action(
        app.backend,
        "import",
        count=added,
        job_ids=new_ids,
        detail=f"from {os.path.abspath(path)}; {skipped} skipped",
    )
    click.echo(
        f"imported {added} job(s) into {redacted(app.url)}"
        + (f"; {skipped} were already there (same id), skipped" if skipped else "")
    )
