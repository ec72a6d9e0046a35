"""``conveyor config``: the effective settings and where each came from.

Also the glue every command that reads configuration files shares: which files apply
(``-C FILE``, then ./conveyor.toml, then ``[tool.conveyor]`` of ./pyproject.toml), which
APP, and where the store URL comes from (``--url`` > ``App(url)`` > ``$CONVEYOR_URL`` >
the files > ``sqlite:///conveyor.db``). A file that cannot be used is a usage error
(exit 2).

Example::

    $ conveyor config -C conveyor.toml
    setting                  value                source
    app                      tasks:app            conveyor.toml
    url                      sqlite:///jobs.db    conveyor.toml
    worker.concurrency       8                    conveyor.toml
    ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from conveyor import config
from conveyor.app import App, check_url, load_app, require_store
from conveyor.cli.common import (
    _CONFIG_META,
    CONFIG_HELP,
    _valid_app_spec,
    echo_json,
    source_note,
    valid_url,
)
from conveyor.cli.errors import explain, sqlite_error
from conveyor.errors import ConfigurationError, StoreNotFound
from conveyor.redaction import redacted
from conveyor.url_rule import ENV_SOURCE


def config_option(fn: Any) -> Any:
    """``-C/--config FILE``."""
    return click.option(
        "-C", "--config", "config_file", metavar="FILE", default=None, help=CONFIG_HELP
    )(fn)


def read_layers(config_file: str | None) -> list[config.Layer]:
    """The files that apply, strongest first; a bad one is a usage error (exit 2)."""
    try:
        return config.layers(config_file)
    except config.ConfigFileError as exc:
        raise click.UsageError(str(exc)) from None


def apply_url(app: App, url: str | None, files: list[config.Layer]) -> None:
    """Point ``app`` at its store by the one rule: ``--url`` > ``App(url)`` >
    ``$CONVEYOR_URL`` > the files (``-C``, ./conveyor.toml, ./pyproject.toml) > the
    default. ``App()`` applied the rule itself without ``-C``; here ``-C`` FILE's url
    replaces what the other files or the default gave, never ``App(url)`` or the
    environment, which producers follow too."""
    if url:
        app.override_url(url)
        return
    from_file = config.file_url(files)
    if from_file is not None and app.url_source not in ("App(url)", ENV_SOURCE):
        app.override_url(from_file.value, from_file.source)


def configured_app(
    app_spec: str | None, url: str | None, files: list[config.Layer], label: str = "--app"
) -> tuple[App, config.Setting | None]:
    """The app named on the command line or in the files (a bare ``App()`` if neither
    names one) pointed at its store URL (checked, not opened), and where its name came
    from (None: no app named)."""
    app_setting = config.app_setting(files, app_spec, label)
    app = load_app(app_setting.value) if app_setting else None
    target = app if app is not None else App()
    apply_url(target, url, files)
    try:
        check_url(target.url)  # App(url), $CONVEYOR_URL and the files: no callback saw them
    except ConfigurationError as exc:
        raise ConfigurationError(f"{exc}{source_note(target)}") from None
    return target, app_setting


def open_app(url: str | None, app_spec: str | None, *, create: bool = False) -> App:
    """The app (``--app``, else ``app`` of the files) or a bare one, pointed at its store
    by the one URL rule (``-C`` FILE included), with its backend open. A missing store
    is an error unless ``create`` (commands that write): never a new empty file.

    Example::

        app = open_app(url, app_spec, create=True)
    """
    context = click.get_current_context(silent=True)
    config_file = context.meta.get(_CONFIG_META) if context is not None else None
    app, _ = configured_app(app_spec, url, read_layers(config_file))
    if not create:
        try:
            require_store(app.url)
        except StoreNotFound as exc:  # say which rule chose that store: a file, the env...
            raise StoreNotFound(f"{exc}{source_note(app)}") from None
    try:
        app.backend  # noqa: B018 - open now, so a failure names the store it was about
    except (sqlite_error(), OSError) as exc:
        known = explain(exc)
        detail = known[0] if known else str(exc)
        raise click.ClickException(
            f"cannot open the store {redacted(app.url)}{source_note(app)}: {detail}"
        ) from exc
    context = click.get_current_context(silent=True)
    if context is not None:
        # Closed when the command ends: a pooled backend (PostgreSQL) left to the garbage
        # collector may be collected on one of its own threads, which cannot join itself.
        context.call_on_close(app.close)
    return app


def open_store(app: App) -> None:
    """Open ``app``'s store now (creating it, as any producer would), so a failure names
    the store it was about."""
    try:
        app.backend  # noqa: B018
    except (sqlite_error(), OSError) as exc:
        known = explain(exc)
        detail = known[0] if known else str(exc)
        raise click.ClickException(
            f"cannot open the store {redacted(app.url)}{source_note(app)}: {detail}"
        ) from exc


def _shown(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "queues" and isinstance(value, list):
        return ", ".join(value)
    return str(value)


@click.command("config")
@config_option
@click.option(
    "--app",
    "app_spec",
    metavar="MODULE:ATTR",
    callback=_valid_app_spec,
    help="The app (else the files' app); its App(url) and queues count.",
)
@click.option("--url", callback=valid_url, help="Store URL, as on the other commands.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def config_command(
    config_file: str | None, app_spec: str | None, url: str | None, as_json: bool
) -> None:
    """Print the effective settings of `conveyor worker` and where each came from:
    flag > -C FILE > ./pyproject.toml [tool.conveyor] > default (store URL: --url >
    App(url) > $CONVEYOR_URL > the files > default). Passwords are hidden."""
    files = read_layers(config_file)
    app, app_setting = configured_app(app_spec, url, files)
    settings = config.worker_settings(files, {})
    queues = settings["queues"]
    if queues.value is None and app_setting is not None:
        from conveyor.worker.eventlog import default_queue_specs

        specs = [f"{name}:1" for name in default_queue_specs(app)]
        settings["queues"] = config.Setting(specs, "default (the app's queues)")
    rows: dict[str, config.Setting] = {
        "app": app_setting or config.Setting(None, "not set"),
        "url": config.Setting(redacted(app.url), app.url_source),
        **{f"worker.{k}": s for k, s in settings.items()},
    }
    if as_json:
        echo_json(_as_json(files, rows))
        return
    width = max(len(k) for k in rows) + 2
    values = {k: _shown(k.removeprefix("worker."), s.value) for k, s in rows.items()}
    value_width = max(len(v) for v in values.values()) + 2
    click.echo(f"{'setting':<{width}}{'value':<{value_width}}source")
    for key, setting in rows.items():
        click.echo(f"{key:<{width}}{values[key]:<{value_width}}{setting.source}")
    if not files:
        click.echo(
            "(no config file: no -C FILE, no ./conveyor.toml, no [tool.conveyor] in "
            "./pyproject.toml)"
        )
    from_file = config.file_url(files)
    if from_file is not None and from_file.source != app.url_source:
        click.echo(f"(the url of {from_file.source} is not used: {app.url_source} wins)")


def _as_json(files: list[config.Layer], rows: Mapping[str, config.Setting]) -> dict[str, Any]:
    worker = {
        k.removeprefix("worker."): {"value": s.value, "source": s.source}
        for k, s in rows.items()
        if k.startswith("worker.")
    }
    return {
        "files": [layer.source for layer in files],
        "app": {"value": rows["app"].value, "source": rows["app"].source},
        "url": {"value": rows["url"].value, "source": rows["url"].source},
        "worker": worker,
    }
