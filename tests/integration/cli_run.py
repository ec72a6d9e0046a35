"""Run the real ``conveyor`` console script through pipes, as a user's shell would.

Example (in a test)::

    proc = conveyor("status", "--url", "sqlite:///missing.db", cwd=tmp_path)
    assert_one_error(proc, 1, "no store at")
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: The console script installed beside this interpreter (the venv's ``bin/conveyor``).
CONVEYOR = Path(sys.executable).with_name("conveyor")

#: A small project: an app with an explicit URL and a task on a non-default queue, and a
#: module whose attribute is a function with a side effect (it must never be called).
PROJECT = {
    "tasks.py": """
import conveyor

app = conveyor.App("sqlite:///a.db")


@app.task
def hello(name: str) -> str:
    return f"hello {name}"


@app.task(queue="reports")
def report() -> None:
    pass
""",
    "sidefx.py": """
import pathlib

import conveyor

app = conveyor.App()


def wipe() -> conveyor.App:
    pathlib.Path("WIPED").write_text("wipe() was called")
    return app
""",
}


def write_project(directory: Path) -> Path:
    for name, text in PROJECT.items():
        (directory / name).write_text(text.lstrip())
    return directory


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any CONVEYOR_* setting of the developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVEYOR_")}
    env.update(extra)
    return env


def conveyor(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONVEYOR), *args],
        cwd=cwd,
        env=clean_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_one_error(proc: subprocess.CompletedProcess[str], status: int, *fragments: str) -> str:
    """Exactly one stderr line, ``Error: ...``, containing every fragment; the status."""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]
