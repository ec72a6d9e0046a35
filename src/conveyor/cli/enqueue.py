"""``conveyor enqueue TASK``: enqueue a job of a registered task from the shell.

The job goes through the app's own task, exactly as ``task.with_options(...).enqueue``
from code: the same checks of options, signature, type hints and encoding (any of them
failing is a usage error on one line, exit 2, and nothing is written), the same codec,
the same defaults. ``--wait`` blocks for the result
and prints it as JSON; a job that ends dead or cancelled exits 1 with its error on one
line.

Example::

    $ conveyor enqueue tasks.add --app tasks:app --args '[1, 2]' --wait
    01JD...   (the job id)
    3
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import click

from conveyor import codec
from conveyor.app import App
from conveyor.cli.common import _valid_app_spec, echo_json, valid_url
from conveyor.cli.config import config_option, configured_app, open_store, read_layers
from conveyor.cli.filters import Duration
from conveyor.errors import EncodeError, JobCancelled, JobFailed, PayloadTooLarge
from conveyor.task import Task

if TYPE_CHECKING:
    from conveyor.job import Job


def _json_of(kind: type, example: str) -> Any:
    """A click callback parsing a JSON value of ``kind`` (list or dict)."""

    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return kind()
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise click.BadParameter(f"not JSON ({exc}); e.g. {example}") from None
        if not isinstance(parsed, kind):
            what = "an array" if kind is list else "an object"
            raise click.BadParameter(f"must be {what} in JSON, e.g. {example}")
        return parsed

    return parse


def _aware_time(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise click.BadParameter(
            f"not an ISO 8601 time: {value!r}; e.g. 2030-01-31T09:00:00+01:00"
        ) from None
    if moment.tzinfo is None:
        # As schedule_at: a time without an offset would mean a different moment on
        # each host, so say which zone.
        raise click.BadParameter(
            f"{value!r} has no UTC offset; add one, e.g. {value}+00:00 or {value}Z"
        )
    return moment


def find_task(app: App, name: str) -> Task[Any, Any]:
    """The registered task ``name``; else the one task whose name ends in ``.name``;
    else a usage error listing the registered names."""
    if name in app.tasks:
        return app.tasks[name]
    suffixed = [t for n, t in app.tasks.items() if n.endswith("." + name)]
    if len(suffixed) == 1:
        return suffixed[0]
    known = ", ".join(sorted(app.tasks)) or "none"
    if len(suffixed) > 1:
        raise click.UsageError(
            f"task name {name!r} is ambiguous: {', '.join(sorted(t.name for t in suffixed))}"
        )
    raise click.UsageError(f"no task named {name!r} in the app; registered: {known}")


def check_call(task: Task[Any, Any], args: list[Any], kwargs: dict[str, Any]) -> None:
    """Raise ``TypeError``/``ValueError`` (a usage error for the CLI) when ``task`` could
    not be enqueued with these arguments: what ``enqueue`` checks, without a store.

    Example::

        check_call(app.tasks["tasks.sync_user"], ["abc"], {})
        # TypeError: sync_user() argument 'user_id' must be int, not str ...
    """
    task.check_arguments(*args, **kwargs)
    if task.check_types is not None:
        task.check_types(tuple(args), kwargs, 0)
    codec.encode_payload(args, kwargs, max_bytes=task.app.settings.max_payload_bytes)


@click.command("enqueue")
@click.argument("task_name", metavar="TASK")
@click.option(
    "--app",
    "app_spec",
    metavar="MODULE:ATTR",
    callback=_valid_app_spec,
    help="The app whose task it is (else `app` of -C FILE or ./pyproject.toml).",
)
@config_option
@click.option("--url", callback=valid_url, help="Store URL; wins over App(url) and the env.")
@click.option(
    "--args",
    "args",
    metavar="JSON",
    callback=_json_of(list, "'[1, \"two\"]'"),
    help="Positional arguments as a JSON array.",
)
@click.option(
    "--kwargs",
    "kwargs",
    metavar="JSON",
    callback=_json_of(dict, "'{\"x\": 1}'"),
    help="Keyword arguments as a JSON object.",
)
@click.option("--queue", default=None, help="Queue (default: the task's).")
@click.option("--priority", type=int, default=None, help="Priority (default: the task's).")
@click.option("--delay", type=Duration(), default=None, help="Run after this long: 30s, 5m, 2h.")
@click.option(
    "--at",
    "at",
    metavar="ISO-TIME",
    callback=_aware_time,
    help="Run at this time, with its offset: 2030-01-31T09:00:00+01:00.",
)
@click.option(
    "--expires",
    type=Duration(),
    default=None,
    help="Expire if not started within this long: 30s, 5m, 2h (default: the task's).",
)
@click.option("--wait", is_flag=True, help="Wait for the result and print it as JSON.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="With --wait: give up after S seconds (exit 1; the job stays).",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "state", "result"}.')
def enqueue(
    task_name: str,
    app_spec: str | None,
    config_file: str | None,
    url: str | None,
    args: list[Any],
    kwargs: dict[str, Any],
    queue: str | None,
    priority: int | None,
    delay: float | None,
    at: dt.datetime | None,
    expires: float | None,
    wait: bool,
    timeout: float | None,
    as_json: bool,
) -> None:
    """Enqueue a job of TASK (its registered name, or the part after the last dot when
    that is unique) and print its id."""
    if delay is not None and at is not None:
        raise click.UsageError("give --delay or --at, not both")
    if timeout is not None and not wait:
        raise click.UsageError("--timeout needs --wait")
    files = read_layers(config_file)
    app, named = configured_app(app_spec, url, files)
    if named is None:
        raise click.UsageError(
            "which app? give --app MODULE:ATTR (or app in -C FILE or in [tool.conveyor] "
            "of ./pyproject.toml)"
        )
    task = find_task(app, task_name)
    # --expires is passed only when given: otherwise the task's own default stays.
    extra: dict[str, Any] = {} if expires is None else {"expires": expires}
    try:
        # Everything enqueue checks, before the store opens: the options, the arguments
        # against the signature and its type hints, and that they encode.
        enqueuer = task.with_options(queue=queue, priority=priority, delay=delay, at=at, **extra)
        check_call(task, args, kwargs)
    except (TypeError, ValueError) as exc:
        raise click.UsageError(f"{exc} (task {task.name})") from None
    open_store(app)
    try:
        job = enqueuer.enqueue(*args, **kwargs)
    except (EncodeError, PayloadTooLarge) as exc:  # e.g. larger once secrets are sealed
        raise click.UsageError(f"{exc} (task {task.name})") from None
    if not wait:
        if as_json:
            echo_json({"id": job.id, "state": job.status.value, "result": None})
        else:
            click.echo(job.id)
        return
    _wait_and_print(job, timeout, as_json)


def _wait_and_print(job: Job[Any], timeout: float | None, as_json: bool) -> None:
    """``--wait``: the id first, then the job's result (or why there is none)."""
    if not as_json:
        click.echo(job.id)  # first, so a user who gives up waiting knows which job it was
    try:
        result = job.result(timeout)
    except (JobFailed, JobCancelled) as exc:
        if as_json:
            echo_json({"id": job.id, "state": job.status.value, "result": None, "error": str(exc)})
        raise click.ClickException(str(exc)) from None
    except TimeoutError:
        if as_json:
            echo_json({"id": job.id, "state": job.status.value, "result": None})
        raise click.ClickException(
            f"job {job.id} not finished after {timeout:g} s; it is {job.status.value} "
            f"(conveyor job {job.id})"
        ) from None
    encoded = json.loads(codec.encode(result))
    if as_json:
        echo_json({"id": job.id, "state": "succeeded", "result": encoded})
    else:
        click.echo(json.dumps(encoded))
