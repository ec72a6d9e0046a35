"""Run the real ``conveyor`` console script through pipes, as a user's shell would.

Example (in a test)::

    proc = conveyor("status", "--url", "sqlite:///missing.db", cwd=tmp_path)
    assert_one_error(proc, 1, "no store at")
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping, Sequence
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


def in_pty(
    argv: Sequence[str],
    *,
    columns: int,
    rows: int = 50,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stderr_too: bool = True,
) -> tuple[str, str]:
    """Run ``argv`` with stdout on a pseudo terminal COLUMNS x ROWS, as a user at a
    terminal of that size sees it; it must exit 0. Returns (terminal text with CRLF as
    LF, stderr); ``stderr_too`` sends stderr to the terminal as well (then "")."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else clean_env(),
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave if stderr_too else subprocess.PIPE,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    out = b"".join(chunks).decode().replace("\r\n", "\n")
    assert proc.wait(30) == 0, err or out
    return out, err
