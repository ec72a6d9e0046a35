"""Job filters shared by ``jobs``, ``retry``, ``cancel``, ``delete`` and ``export``.

``@filter_options`` adds ``--queue``, ``--state`` (repeatable), ``--task``,
``--created-after/--created-before``, ``--finished-after/--finished-before`` (ISO time,
epoch seconds, or an age with its unit such as ``2h``) and ``--where FIELD=VALUE`` (repeatable;
``kwargs.user_id=42``, ``args.0=7``, ``result.ok=true``), and hands the command one
``job_filter`` argument. :func:`bound_to` binds its ``--where`` conditions to the app's
task signatures, so ``kwargs.user_id=42`` also finds ``send_welcome.enqueue(42)``.

Example::

    @click.command()
    @filter_options
    def jobs(job_filter: JobFilter) -> None:
        for record in iter_jobs(backend, job_filter):
            ...
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from conveyor import records, rowtext
from conveyor.backends.base import Backend, JobFilter, JobListParams, JobRecord
from conveyor.cli.common import STATES as STATES
from conveyor.cli.output import iso_json
from conveyor.headers import decode as decode_headers
from conveyor.query import bind_filter, parse_duration, parse_time, parse_where
from conveyor.secrets import mask_payload
from conveyor.states import JobState

#: Fields of a job record that hold epoch timestamps (ISO 8601 when shown or exported).
TIME_FIELDS = ("run_at", "created_at", "lease_until", "started_at", "finished_at", "expires_at")
#: Units a duration must carry: a bare "1" could mean seconds or days.
DURATION_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
#: Bare numbers in a time option are epoch seconds; below this (1973) they are almost
#: surely an age whose unit was forgotten.
_EPOCH_FLOOR = 100_000_000


if TYPE_CHECKING:
    from conveyor.app import App

if TYPE_CHECKING:  # click >= 8.2 types ParamType; 8.1 (still supported) cannot subscript it
    _FloatParam = click.ParamType[float]
else:
    _FloatParam = click.ParamType


class Duration(_FloatParam):
    """A duration with its unit: ``45s``, ``30m``, ``12h``, ``7d``, ``2w`` -> seconds.

    Example:
        >>> Duration().convert("12h", None, None)
        43200.0
    """

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        if text[-1:] not in DURATION_UNITS:
            units = ", ".join(f"{u} ({name})" for u, name in DURATION_UNITS.items())
            self.fail(f"{value!r} has no unit; add one of {units}, e.g. 7d or 12h", param, ctx)
        try:
            return parse_duration(text)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def parse_time_option(text: str) -> float:
    """A time option's value: ISO time, epoch seconds, or an age with its unit."""
    stripped = text.strip()
    try:
        bare = float(stripped)
    except ValueError:
        return parse_time(stripped)
    if bare < _EPOCH_FLOOR:
        raise ValueError(
            f"{text!r} would be epoch seconds in 1970; for an age add a unit "
            f"({', '.join(DURATION_UNITS)}), e.g. {stripped}d"
        )
    return bare


_TIME_OPTIONS = ("created_after", "created_before", "finished_after", "finished_before")


def filter_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        kwargs["job_filter"] = build_filter(
            queue=kwargs.pop("queue"),
            states=kwargs.pop("states"),
            task=kwargs.pop("task"),
            where=kwargs.pop("where"),
            **{k: kwargs.pop(k) for k in _TIME_OPTIONS},
        )
        return fn(**kwargs)

    options = [
        click.option(
            "--where",
            "where",
            multiple=True,
            metavar="FIELD=VALUE",
            help="Match a field of args, kwargs or result: kwargs.user_id=42, "
            "args.0=7, result.ok=true (VALUE is JSON when it parses, "
            "else a string). Repeatable (AND).",
        ),
        *[
            click.option(
                f"--{name.replace('_', '-')}",
                name,
                metavar="TIME",
                help="ISO time (UTC unless an offset is given), epoch seconds, or an "
                "age like 2h / 7d.",
            )
            for name in reversed(_TIME_OPTIONS)
        ],
        click.option("--task", help="Task name."),
        click.option(
            "--state",
            "states",
            multiple=True,
            type=click.Choice(STATES),
            help="State (repeatable).",
        ),
        click.option("--queue", help="Queue name."),
    ]
    for option in options:
        wrapper = option(wrapper)
    return wrapper


def build_filter(
    *,
    queue: str | None,
    states: tuple[str, ...],
    task: str | None,
    where: tuple[str, ...],
    **times: str | None,
) -> JobFilter:
    try:
        conditions = tuple(parse_where(w) for w in where)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--where'") from None
    bounds: dict[str, float | None] = {}
    for name, value in times.items():
        try:
            bounds[name] = None if value is None else parse_time_option(value)
        except ValueError as exc:
            hint = f"'--{name.replace('_', '-')}'"
            raise click.BadParameter(str(exc), param_hint=hint) from None
    return JobFilter(
        queue=queue,
        states=tuple(JobState(s) for s in states),
        task=task,
        where=conditions,
        **bounds,
    )


def bound_to(job_filter: JobFilter, app: App, *, note: bool = True) -> JobFilter:
    """``job_filter`` with its ``--where`` conditions bound to the signatures of ``app``'s
    tasks (an argument matches by parameter name however it was passed). Without an
    app's tasks (no ``--app``), a condition on ``args``/``kwargs`` matches only the slot
    it names, and (with ``note``: not for ``--json``) a note on stderr says how to
    match both.

    Example::

        job_filter = bound_to(job_filter, open_app(url, app_spec))
    """
    signatures: dict[str, inspect.Signature] = {}
    for name, task in app.tasks.items():
        try:
            signatures[name] = inspect.signature(task.fn)
        except (TypeError, ValueError):  # a callable without one: nothing to bind to
            continue
    if note and not signatures and any(c.root in ("args", "kwargs") for c in job_filter.where):
        click.echo(
            "note: without --app, kwargs.NAME matches only arguments passed by keyword "
            "and args.N only by position; give --app MODULE:ATTR to match both",
            err=True,
        )
    return bind_filter(job_filter, signatures)


def is_empty(f: JobFilter) -> bool:
    return f == JobFilter()


def iter_jobs(
    backend: Backend, job_filter: JobFilter, page: int = 500, after: str | None = None
) -> Iterator[list[JobRecord]]:
    """Pages of matching jobs in id order (each page one query: memory stays bounded)."""
    while True:
        found = backend.job_list(JobListParams(after_id=after, limit=page, filter=job_filter))
        if not found:
            return
        yield found
        if len(found) < page:
            return
        after = found[-1].id


def job_dict(j: JobRecord, *, epoch: bool = True) -> dict[str, Any]:
    """A job as JSON-ready data: payload/result/error decoded back to values; times as
    ISO 8601 in UTC, or epoch seconds as stored with ``epoch``."""
    data = records.asdict(j)
    if not epoch:
        for key in TIME_FIELDS:
            data[key] = iso_json(data[key])
    # A row written outside the API: its own state, and what decoding had to repair.
    data["state"] = j.stored_state if j.stored_state is not None else str(j.state)
    data["problems"] = list(j.problems)
    data["payload"] = mask_payload(j.payload)  # secret arguments show as "•••"
    data["headers"] = dict(decode_headers(j.headers))  # {} when none
    for key in ("payload", "result", "error"):
        if data[key] is not None:
            data[key] = _json_or_text(data[key])
    return data


def _json_or_text(text: str) -> Any:
    """The JSON value of a stored text; the text itself when it is not JSON, or nested
    too deep to parse or to write back (``--json`` indents with the pure-Python encoder,
    which recurses once per level)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if text.count("[") + text.count("{") > 100 and rowtext.dumps(value, indent=2) is None:
        return text
    return value
