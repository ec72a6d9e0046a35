"""``conveyor worker APP``: run a worker process.

Settings come from the flags, else ``-C FILE``, else ``[tool.conveyor.worker]`` of
./pyproject.toml, else the defaults (:mod:`conveyor.config`); APP may come from the files.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import click

from conveyor.app import App, check_url, load_app
from conveyor.cli.common import valid_url
from conveyor.cli.config import apply_url, config_option, read_layers
from conveyor.cli.other_stores import warn_other_stores
from conveyor.config import WORKER_DEFAULTS, Layer, Setting, app_setting, worker_settings
from conveyor.errors import ConfigurationError
from conveyor.worker.executors import POOLS

if TYPE_CHECKING:
    from conveyor.worker.claim_size import Prefetch
    from conveyor.worker.worker import Worker


class PrefetchType(click.ParamType):  # type: ignore[type-arg]
    """``--prefetch auto`` or ``--prefetch N`` (N >= 0)."""

    name = "prefetch"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> object:
        from conveyor.worker.claim_size import parse_prefetch

        try:
            return parse_prefetch(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


#: Worker settings a file may give: parameter name -> the flag that overrides it.
_FLAGS = {
    key: "--queue" if key == "queues" else f"--{key.replace('_', '-')}" for key in WORKER_DEFAULTS
}


@click.command("worker")
@click.argument("app_spec", metavar="[APP]", required=False)
@config_option
@click.option(
    "-c",
    "--concurrency",
    type=click.IntRange(min=1),
    default=WORKER_DEFAULTS["concurrency"],
    show_default=True,
    help="Jobs run at once.",
)
@click.option(
    "--pool",
    type=click.Choice(list(POOLS)),
    default=WORKER_DEFAULTS["pool"],
    show_default=True,
    help="thread/async: one process; process: child processes; "
    "interpreter: subinterpreters (Python >= 3.13). See docs/pools.md.",
)
@click.option(
    "--max-jobs-per-child",
    type=click.IntRange(min=1),
    default=None,
    help="process/interpreter pools: replace a child after N jobs.",
)
@click.option(
    "--max-memory-per-child",
    type=click.FloatRange(min=1),
    default=None,
    metavar="MIB",
    help="process pool: replace a child whose RSS exceeds MIB.",
)
@click.option(
    "--prefetch",
    type=PrefetchType(),
    default=WORKER_DEFAULTS["prefetch"],
    show_default=True,
    metavar="auto|N",
    help="Claim up to N jobs beyond the free slots; they wait in this worker "
    "(leases kept, released on stop). auto: sized from observed job durations (at most "
    "32, none for long jobs); 0: strict claims. See docs/guarantees.md.",
)
@click.option(
    "-q",
    "--queue",
    "queues",
    multiple=True,
    metavar="NAME[:WEIGHT]",
    help="Queue to consume (repeatable, weighted). Default: every queue the app's "
    "tasks declare, plus default.",
)
@click.option(
    "--shutdown-timeout",
    type=click.FloatRange(min=0),
    default=WORKER_DEFAULTS["shutdown_timeout"],
    show_default=True,
    help="Seconds running jobs get after TERM/INT before being released.",
)
@click.option("--burst", is_flag=True, help="Exit 0 when no job is ready or running.")
@click.option(
    "--include",
    "include",
    multiple=True,
    metavar="MODULE",
    help="Import this module of tasks at start, after APP (repeatable; as App(include=...)).",
)
@click.option("--url", callback=valid_url, help="Store URL; wins over App(url) and $CONVEYOR_URL.")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default=WORKER_DEFAULTS["log_level"],
    show_default=True,
    help="INFO: one line per failed, dead, cancelled, rescued or released job; "
    "DEBUG adds succeeded jobs.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=WORKER_DEFAULTS["log_format"],
    show_default=True,
    help="json: one JSON object per line (ts, level, logger, message, event fields).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve Prometheus metrics on this port (needs conveyor[metrics]).",
)
@click.option(
    "--metrics-host",
    default=WORKER_DEFAULTS["metrics_host"],
    show_default=True,
    help="Address the metrics endpoint binds to.",
)
@click.pass_context
def worker(
    ctx: click.Context,
    app_spec: str | None,
    config_file: str | None,
    concurrency: int,
    pool: str,
    max_jobs_per_child: int | None,
    max_memory_per_child: float | None,
    prefetch: Prefetch,
    queues: tuple[str, ...],
    shutdown_timeout: float,
    burst: bool,
    include: tuple[str, ...],
    url: str | None,
    log_level: str,
    log_format: str,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Run jobs of APP (module:attribute; or `app` of -C FILE / [tool.conveyor]). TERM/INT
    stop gracefully, a second INT stops at once, TSTP stops fetching, TTIN prints every
    thread's stack."""
    from conveyor.worker import console

    files, app_spec, s = _settings(ctx, config_file, app_spec)
    log_level, log_format = s["log_level"], s["log_format"]

    # Every line goes through a bounded queue to stderr: a slow reader costs dropped
    # (and counted) lines, never job time. Drained with a deadline on the way out.
    handler = console.install(logging.getLevelName(log_level.upper()), log_format)
    try:
        app = _load(app_spec, include, url, files)
        w = _worker(app, app_spec, s, burst)
        # Inside the try: process/interpreter pools import the app at start and report
        # a module that cannot load there as a ConfigurationError.
        try:
            w.run()
        finally:
            _close_store(app)
    except ConfigurationError as exc:
        raise click.ClickException(str(exc)) from exc  # --debug shows the cause
    finally:
        console.uninstall(handler)


def _settings(
    ctx: click.Context, config_file: str | None, app_spec: str | None
) -> tuple[list[Layer], str, dict[str, Any]]:
    """The config files, the APP and every worker setting's value (flags given on the
    command line > the files > defaults)."""
    files = read_layers(config_file)
    named = app_setting(files, app_spec, "APP")
    if named is None:
        raise click.UsageError(
            "Missing argument 'APP' (module:attribute, e.g. tasks:app); or set app in "
            "-C FILE or in [tool.conveyor] of ./pyproject.toml"
        )
    app_spec = named.value
    given = {k: v for k, v in ctx.params.items() if k in _FLAGS}
    flags = {
        k: Setting(list(v) if k == "queues" else v, _FLAGS[k])
        for k, v in given.items()
        if ctx.get_parameter_source(k) is click.core.ParameterSource.COMMANDLINE
    }
    s = {k: setting.value for k, setting in worker_settings(files, flags).items()}
    return files, app_spec, s


def _load(app_spec: str, include: tuple[str, ...], url: str | None, files: list[Layer]) -> App:
    """The app, its include modules imported and its URL settled and checked."""
    app = load_app(app_spec)  # imports App(include=...) too
    app.import_includes(include)  # before the queues: their tasks declare some
    apply_url(app, url, files)  # --url > App(url) > $CONVEYOR_URL > the files > default
    if files:  # settings the command line does not show: say where they came from
        logging.getLogger("conveyor.worker").info(
            "config: %s (conveyor config shows each setting's source)",
            ", ".join(layer.source for layer in files),
        )
    check_url(app.url)  # App(url) or $CONVEYOR_URL: a typo is one line, not a traceback
    warn_other_stores(app, files)  # jobs waiting where producers here may write
    return app


def _worker(app: App, app_spec: str, s: dict[str, Any], burst: bool) -> Worker:
    """The worker the settings ``s`` describe, its metrics served when asked for."""
    from conveyor.worker.eventlog import default_queue_specs
    from conveyor.worker.worker import Worker

    queues = tuple(s["queues"] or ())
    w = Worker(
        app,
        queues=list(queues) or default_queue_specs(app),
        concurrency=s["concurrency"],
        pool=s["pool"],
        shutdown_timeout=s["shutdown_timeout"],
        burst=burst,
        app_spec=app_spec,
        max_jobs_per_child=s["max_jobs_per_child"],
        max_memory_per_child=s["max_memory_per_child"],
        prefetch=s["prefetch"],
    )
    w.events.queues_defaulted = not queues
    if s["metrics_port"] is not None:
        from conveyor.metrics import WorkerMetrics  # imports prometheus_client

        WorkerMetrics(w).serve(s["metrics_port"], s["metrics_host"])
    return w


def _close_store(app: App) -> None:
    """Close the worker's store before the interpreter ends. Left open, psycopg's pool
    joins its threads from a finaliser at exit, up to 5 s each on Python 3.13 (a
    stopped PostgreSQL worker lingered ~20 s). A failure to close changes nothing about
    how the worker ended, so it is not raised over that."""
    try:
        app.close()
    except Exception:  # the store may be gone (deleted file, dropped schema)
        return
