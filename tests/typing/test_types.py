"""The typing suite: mypy (strict) and pyright (strict) over the files of this folder,
against the installed package, as a user's checker sees conveyor. ``tasks_typed.py``
asserts types (``typing.assert_type``); ``errors_expected.py`` holds calls that must be
rejected, each with a ``type: ignore`` that must be needed; ``classtask_pyright.py``
(pyright only) both, for ``class X(app.Task)``. Clean output from both checkers is the
test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FILES = ["tasks_typed.py", "errors_expected.py"]
#: pyright only: ``class X(app.Task)`` (mypy takes no instance attribute as a base class)
PYRIGHT_FILES = [*FILES, "classtask_pyright.py"]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command), cwd=HERE, capture_output=True, text=True, timeout=300, check=False
    )


def test_mypy_strict_sees_the_types() -> None:
    run = _run(
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        "mypy.ini",
        # outside the tree, kept between runs (a cold run checks all of conveyor)
        "--cache-dir",
        str(ROOT / ".mypy_cache" / "typing-suite"),
        *FILES,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == f"Success: no issues found in {len(FILES)} source files"


def _pyright() -> list[str]:
    """The pyright command, or a skip (a failure when CI=true) saying why it cannot run."""
    found = shutil.which("pyright", path=str(Path(sys.executable).parent))
    command = [found] if found else [sys.executable, "-m", "pyright"]
    probe = _run(*command, "--version")
    if probe.returncode != 0:
        why = f"pyright cannot run here: {(probe.stdout + probe.stderr).strip()[-500:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return command


def test_pyright_strict_sees_the_types() -> None:
    run = _run(
        *_pyright(), "--pythonpath", sys.executable, "-p", "pyrightconfig.json", *PYRIGHT_FILES
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 errors, 0 warnings, 0 informations" in run.stdout, run.stdout
