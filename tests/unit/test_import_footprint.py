"""Issue 16's cold start, as a guard that does not time anything: each start-up path
imports only what it uses, checked in a fresh interpreter (``sys.modules`` is exact,
timings are not). ``tests/unit/test_imports.py`` keeps the optional extras and the
first job's older list out; this file covers the lazy package, the enqueue path and
the worker command. The figures behind each entry are in bench/HOTPATH.md ("Cold
start: what each path imports").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import conveyor

#: Never needed to enqueue on SQLite or run a first job in-process: the CLI and its
#: libraries, the other backends' drivers, and stdlib modules only other paths use
#: (``urllib.parse``: store URLs are split without it; ``tomllib``/``pathlib``: config
#: files; ``base64``: decoding an id). Each entry was imported by that path before.
ENQUEUE_PATH_AVOIDS = (
    "click",
    "rich",
    "redis",
    "psycopg",
    "asyncio",
    "concurrent.futures",
    "multiprocessing",
    "urllib.parse",
    "tomllib",
    "pathlib",
    "base64",
    "uuid",
    "decimal",
    "socket",
    "ssl",
    "email",
    "importlib.metadata",
    "conveyor.cli",
    "conveyor.compose",
    "conveyor.worker",
)

#: What the worker command's own modules must not pull in before a store is opened:
#: sqlite3 is the SQLite backend's (not loaded on Redis), tomllib only with a TOML file.
WORKER_COMMAND_AVOIDS = ("sqlite3", "tomllib", "pathlib", "rich", "redis", "asyncio")

#: Never needed by the operator's quick reads (``conveyor status``, ``queues``, ``check``)
#: on SQLite printing to a pipe (issue 25: the CLI's wall time at a million jobs was its
#: imports): rich only draws terminal tables, the durations only ``status --json``, the
#: autoscaling signal only ``queues --json``, the action log (and socket) only a write;
#: traceback only ``--debug``, logging only a store-permission warning, urllib.parse
#: nothing. Each entry was imported by these commands before.
OPERATOR_READ_AVOIDS = (
    "rich",
    "conveyor.durations",
    "conveyor.scaling",
    "conveyor.cli.action_log",
    "conveyor.cli.filters",
    "socket",
    "traceback",
    "logging",
    "urllib.parse",
    "fractions",
    "decimal",
    "pickle",
    "asyncio",
    "redis",
    "psycopg",
    "conveyor.web",
    "conveyor.worker",
)


def _modules_after(code: str) -> set[str]:
    """``sys.modules`` of a fresh interpreter once ``code`` ran (json is imported after)."""
    probe = f"{code}\nimport sys as _s\n_names = sorted(_s.modules)\nimport json\nprint(json.dumps(_names))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def _loaded(modules: set[str], avoided: tuple[str, ...]) -> list[str]:
    """The entries of ``avoided`` that are in ``modules`` (a package or any submodule)."""
    return sorted(a for a in avoided if any(m == a or m.startswith(a + ".") for m in modules))


def test_import_conveyor_imports_no_conveyor_module() -> None:
    loaded = _modules_after("import conveyor")
    assert sorted(m for m in loaded if m.startswith("conveyor.")) == []


def test_submodules_reached_as_attributes_after_a_bare_import_still_resolve() -> None:
    # The old eager import conveyor set conveyor.errors, conveyor.backends.base... as a
    # side effect; code that relied on it keeps working (each loaded on first access).
    loaded = _modules_after(
        "import conveyor\n"
        "assert conveyor.errors.JobFailed is conveyor.JobFailed\n"
        "assert conveyor.backends.base.JobInsertParams.__name__ == 'JobInsertParams'\n"
        "assert not hasattr(conveyor, 'web')  # never loaded by import conveyor: absent\n"
    )
    assert "conveyor.errors" in loaded and "conveyor.web" not in loaded


def test_enqueue_on_sqlite_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    loaded = _modules_after(f"""
import conveyor
app = conveyor.App("sqlite:///{tmp_path}/e.db?synchronous=NORMAL")

@app.task
def add(a: int, b: int) -> int:
    return a + b

add.enqueue(1, 2)
""")
    assert "conveyor.backends.sqlite.backend" in loaded  # the probe did open the store
    assert _loaded(loaded, ENQUEUE_PATH_AVOIDS) == []


def test_first_job_in_process_imports_no_cli_and_no_url_parser(tmp_path: Path) -> None:
    loaded = _modules_after(f"""
import conveyor
app = conveyor.App("sqlite:///{tmp_path}/f.db")

@app.task
def add(a: int, b: int) -> int:
    return a + b

job = add.enqueue(1, 2)
conveyor.Worker(app, burst=True).run()
assert job.result() == 3
""")
    avoided = tuple(a for a in ENQUEUE_PATH_AVOIDS if a != "conveyor.worker")
    assert _loaded(loaded, avoided) == []


def test_worker_command_modules_import_no_backend_driver_and_no_config_parser() -> None:
    loaded = _modules_after("import conveyor.cli.main, conveyor.cli.worker")
    assert _loaded(loaded, WORKER_COMMAND_AVOIDS) == []


@pytest.mark.parametrize("command", ["status", "queues", "check"])
def test_operator_reads_on_sqlite_through_a_pipe_import_no_table_library(
    tmp_path: Path, command: str
) -> None:
    url = f"sqlite:///{tmp_path}/ops.db"
    app = conveyor.App(url)
    app.backend  # noqa: B018 - the store exists: the command only reads it
    app.close()
    loaded = _modules_after(f"""
from conveyor.cli.main import cli
try:
    cli([{command!r}, "--url", {url!r}], prog_name="conveyor")
except SystemExit as exc:
    assert exc.code == 0, exc.code
""")
    assert "conveyor.backends.sqlite.backend" in loaded  # the probe did read the store
    assert _loaded(loaded, OPERATOR_READ_AVOIDS) == []


def test_every_public_name_resolves_to_its_defining_module() -> None:
    # The lazy attributes give the same objects the eager imports gave.
    import importlib

    for name in conveyor.__all__:
        module = importlib.import_module(conveyor._LAZY[name])
        assert getattr(conveyor, name) is getattr(module, name), name
    assert set(conveyor.__all__) <= set(dir(conveyor))
    from conveyor import App, Worker, transaction  # from-imports go through __getattr__

    assert (App, Worker, transaction) == (conveyor.App, conveyor.Worker, conveyor.transaction)
    try:
        conveyor.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
