"""Configuration files for the CLI: ``-C FILE`` and ``[tool.conveyor]`` in pyproject.toml.

One schema, in both places (the ``-C`` file is the ``[tool.conveyor]`` table on its own)::

    app = "tasks:app"                 # what APP / --app would say
    url = "sqlite:///jobs.db"         # the store, when nothing stronger names one
    [worker]                          # [tool.conveyor.worker] in pyproject.toml
    queues = ["critical:3", "default"]   # or a table: {critical = 3, default = 1}
    concurrency = 8
    pool = "thread"
    ...                               # every key of WORKER_DEFAULTS

Precedence, highest first: command-line flags, the ``-C`` file, ./conveyor.toml,
./pyproject.toml, the built-in defaults. The store URL: ``--url`` > ``App(url)`` >
``$CONVEYOR_URL`` > ``-C`` file > ./conveyor.toml > ./pyproject.toml >
``sqlite:///conveyor.db``; ``App()`` applies the same rule without ``-C``
(:mod:`conveyor.url_rule`; see docs/configuration.md for why).

Every key is checked: an unknown key or a value of the wrong type is a
:class:`ConfigFileError` naming the file and the key. Only the stdlib is used
(``tomllib``, ``json``); nothing here imports a backend. Paths are plain ``os.path``
strings and ``tomllib`` is imported only when a TOML file is read: ``conveyor worker``
without a config file loads neither ``tomllib`` nor ``pathlib`` (~20 ms of its start on
the reference box, issue 16).

Example:
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "w.toml").write_text('[worker]\\nconcurrency = 4\\nqueues = {high = 3, low = 1}\\n')
    >>> layer = load_file(d / "w.toml")
    >>> layer.worker["concurrency"], layer.worker["queues"]
    (4, ['high:3', 'low:1'])
    >>> _ = (d / "bad.toml").write_text('[worker]\\nconcurency = 4\\n')
    >>> load_file(d / "bad.toml")
    Traceback (most recent call last):
    conveyor.config.ConfigFileError: ...bad.toml: unknown key worker.concurency; known: ...
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conveyor.app_spec import parse_app_spec
from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted
from conveyor.stores import check_url
from conveyor.worker_options import POOLS, parse_prefetch

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS = ("text", "json")

#: Every worker setting a file may hold, with the value ``conveyor worker`` uses when
#: neither a flag nor a file gives one. ``queues`` None: every queue the app's tasks
#: declare, plus ``default``.
WORKER_DEFAULTS: dict[str, Any] = {
    "queues": None,
    "concurrency": 10,
    "pool": "thread",
    "shutdown_timeout": 30.0,
    "prefetch": "auto",
    "log_level": "INFO",
    "log_format": "text",
    "max_jobs_per_child": None,
    "max_memory_per_child": None,
    "metrics_port": None,
    "metrics_host": "127.0.0.1",
}
TOP_KEYS = ("app", "url", "worker")
PYPROJECT = "pyproject.toml"
#: Read from the current directory by every command and by ``App()`` (no ``-C`` needed).
CONVEYOR_TOML = "conveyor.toml"
DEFAULT_SOURCE = "default"


class ConfigFileError(ConfigurationError):
    """A configuration file that cannot be used: unreadable, not TOML/JSON, an unknown
    key or a wrong type. The message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Layer:
    """The settings one file gives (only the keys it sets), and how to name it."""

    source: str
    app: str | None = None
    url: str | None = None
    worker: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: How the worker table is named in messages (pyproject: its own sub-table).
    worker_source: str = ""


@dataclasses.dataclass(frozen=True)
class Setting:
    """One effective value and where it came from ("default", a file, a flag...)."""

    value: Any
    source: str


# -- checking values -------------------------------------------------------------------

Check = Callable[[Any], Any]  # returns the normalised value or raises ValueError(expected)


def _int(minimum: int, maximum: int | None = None) -> Check:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"an integer >= {minimum}")
        if value < minimum or (maximum is not None and value > maximum):
            raise ValueError(
                f"an integer from {minimum} to {maximum}" if maximum else f"an integer >= {minimum}"
            )
        return value

    return check


def _prefetch(value: Any) -> Any:
    if isinstance(value, str) and value != "auto":  # "4" in TOML is a string: say so
        raise ValueError('"auto" or an integer >= 0')
    try:
        return parse_prefetch(value)
    except ValueError:
        raise ValueError('"auto" or an integer >= 0') from None


def _number(minimum: float, *, above: bool = False) -> Check:
    def check(value: Any) -> Any:
        what = f"a number {'>' if above else '>='} {minimum:g}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(what)
        if value < minimum or (above and value == minimum):
            raise ValueError(what)
        return float(value)

    return check


def _choice(choices: Sequence[str], *, upper: bool = False) -> Check:
    def check(value: Any) -> Any:
        if isinstance(value, str):
            normal = value.upper() if upper else value
            if normal in choices:
                return normal
        raise ValueError(f"one of {', '.join(map(repr, choices))}")

    return check


def _text(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a non-empty string")
    return value


def _queues(value: Any) -> Any:
    """``["high:3", "low"]`` or ``{high = 3, low = 1}`` -> ``["high:3", "low:1"]``."""
    expected = 'a list of "NAME" or "NAME:WEIGHT" strings, or a table NAME = WEIGHT'
    specs: list[str] = []
    if isinstance(value, list) and value:
        for item in value:
            if not isinstance(item, str) or not item.partition(":")[0].strip():
                raise ValueError(expected)
            name, _, weight = item.partition(":")
            if weight and not (weight.isdigit() and int(weight) >= 1):
                raise ValueError(expected + f" (bad weight in {item!r})")
            specs.append(f"{name.strip()}:{weight or 1}")
    elif isinstance(value, dict) and value:
        for name, weight in value.items():
            if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
                raise ValueError(expected + f" (weight of {name!r} must be an integer >= 1)")
            specs.append(f"{name}:{weight}")
    else:
        raise ValueError(expected)
    names = [s.partition(":")[0] for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(expected + " (a queue is listed twice)")
    return specs


WORKER_CHECKS: dict[str, Check] = {
    "queues": _queues,
    "concurrency": _int(1),
    "pool": _choice(POOLS),
    "shutdown_timeout": _number(0),
    "prefetch": _prefetch,
    "log_level": _choice(LOG_LEVELS, upper=True),
    "log_format": _choice(LOG_FORMATS),
    "max_jobs_per_child": _int(1),
    "max_memory_per_child": _number(1),
    "metrics_port": _int(1, 65535),
    "metrics_host": _text,
}


def _check_app(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError('a string module:attribute, e.g. "tasks:app"')
    try:
        parse_app_spec(value)
    except ConfigurationError:
        raise ValueError('a string module:attribute, e.g. "tasks:app"') from None
    return value


def _check_url(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("a store URL string, e.g. sqlite:///jobs.db or redis://host:6379/0")
    try:
        check_url(value)
    except ConfigurationError as exc:
        raise ValueError(f"a store URL ({exc})".replace(value, redacted(value))) from None
    return value


# -- reading files ---------------------------------------------------------------------


def load_file(path: str | os.PathLike[str]) -> Layer:
    """The ``-C`` file: TOML (``.toml``) or JSON (``.json``), same schema either way."""
    where = os.fspath(path)
    suffix = os.path.splitext(where)[1].lower()
    if suffix not in (".toml", ".json"):
        raise ConfigFileError(f"{where}: a config file must end in .toml or .json")
    data = _read(where, suffix)
    if os.path.basename(where) == PYPROJECT:  # -C some/other/pyproject.toml: its [tool.conveyor]
        return _pyproject_layer(data, where) or Layer(source=where)
    return _layer(data, where, prefix="")


def load_pyproject(directory: str | os.PathLike[str] | None = None) -> Layer | None:
    """``[tool.conveyor]`` of ``pyproject.toml`` in ``directory`` (the current one by
    default); None when there is no such file or table."""
    path = os.path.join(directory or os.getcwd(), PYPROJECT)
    if not os.path.isfile(path):
        return None
    return _pyproject_layer(_read(PYPROJECT, ".toml", path), PYPROJECT)


def _pyproject_layer(data: Mapping[str, Any], where: str) -> Layer | None:
    tool = data.get("tool", {})
    table = tool.get("conveyor") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}: tool.conveyor must be a table")
    return _layer(table, where, prefix="tool.conveyor.")


def _read(where: str, suffix: str, path: str | None = None) -> dict[str, Any]:
    try:
        with open(path or where, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigFileError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigFileError(f"{where}: not UTF-8 text") from None
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigFileError(f"{where}: not valid JSON: {exc}") from None
    else:
        import tomllib  # only when there is a TOML file to read

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(f"{where}: not valid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigFileError(f"{where}: the top level must be an object (a table)")
    return data


def _layer(data: Mapping[str, Any], where: str, prefix: str) -> Layer:
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise ConfigFileError(
            f"{where}: unknown key {prefix}{unknown[0]}; known: {', '.join(TOP_KEYS)}"
        )
    app = _checked(data, "app", _check_app, where, prefix)
    url = _checked(data, "url", _check_url, where, prefix)
    table = data.get("worker", {})
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}: {prefix}worker must be a table of worker settings")
    worker: dict[str, Any] = {}
    for key in table:
        if key not in WORKER_CHECKS:
            raise ConfigFileError(
                f"{where}: unknown key {prefix}worker.{key}; known: {', '.join(WORKER_CHECKS)}"
            )
        worker[key] = _checked(table, key, WORKER_CHECKS[key], where, f"{prefix}worker.")
    source = where if not prefix else f"{where} [{prefix.rstrip('.')}]"
    worker_source = where if not prefix else f"{where} [{prefix}worker]"
    return Layer(source, app, url, worker, worker_source)


def _checked(data: Mapping[str, Any], key: str, check: Check, where: str, prefix: str) -> Any:
    if key not in data:
        return None
    value = data[key]
    try:
        return check(value)
    except ValueError as exc:
        raise ConfigFileError(
            f"{where}: {prefix}{key} must be {exc}, got {_shown(value)}"
        ) from None


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    kind = type(value).__name__
    return f"{text[:60]} ({kind})"


# -- combining -------------------------------------------------------------------------


def discovered(directory: str | None = None, skip: str | None = None) -> list[Layer]:
    """The files found in ``directory`` (the current one by default), strongest first:
    ``conveyor.toml``, then ``[tool.conveyor]`` of ``pyproject.toml``; ``skip``: a path
    already read (``-C ./conveyor.toml``). Only that directory is looked in, never its
    parents: a relative ``sqlite:///jobs.db`` is a file of the current directory, so a
    file found in a parent would name another store than the one it meant."""
    here = directory or os.getcwd()
    skipped = os.path.realpath(skip) if skip else None
    found: list[Layer] = []
    own = os.path.join(here, CONVEYOR_TOML)
    if os.path.isfile(own) and not (skipped and os.path.realpath(own) == skipped):
        found.append(load_file(CONVEYOR_TOML if directory is None else own))
    if not (skipped and os.path.realpath(os.path.join(here, PYPROJECT)) == skipped):
        pyproject = load_pyproject(directory)
        if pyproject is not None:
            found.append(pyproject)
    return found


def layers(config_file: str | None, directory: str | None = None) -> list[Layer]:
    """The files that apply, strongest first: the ``-C`` file, then ./conveyor.toml, then
    ./pyproject.toml (a ``-C`` file that is one of those is read once)."""
    given = [load_file(config_file)] if config_file else []
    return [*given, *discovered(directory, skip=config_file)]


def worker_settings(files: Sequence[Layer], flags: Mapping[str, Setting]) -> dict[str, Setting]:
    """Every worker setting's effective value: ``flags`` (only those given on the command
    line, keyed like WORKER_DEFAULTS) > files in order > default."""
    result: dict[str, Setting] = {}
    for key, default in WORKER_DEFAULTS.items():
        if key in flags:
            result[key] = flags[key]
            continue
        for layer in files:
            if key in layer.worker:
                result[key] = Setting(layer.worker[key], layer.worker_source or layer.source)
                break
        else:
            result[key] = Setting(default, DEFAULT_SOURCE)
    return result


def app_setting(files: Sequence[Layer], given: str | None, label: str) -> Setting | None:
    """The APP: ``given`` on the command line (labelled ``label``), else the files'."""
    if given:
        return Setting(given, label)
    for layer in files:
        if layer.app:
            return Setting(layer.app, layer.source)
    return None


def file_url(files: Sequence[Layer]) -> Setting | None:
    """The URL the files give (the strongest), for the bottom of the URL rule."""
    for layer in files:
        if layer.url:
            return Setting(layer.url, layer.source)
    return None
