"""Run a docs page's blocks as a user would: one directory, one Python session, one shell.

``run_page(blocks, workdir)`` writes file blocks, sends Python blocks to a persistent
interpreter (``pysession.py``), runs shell commands one by one in a persistent ``bash``
whose ``PATH`` starts with this venv's ``bin`` (so ``conveyor`` and ``python`` are the
ones under test), starts ``background`` blocks with ``&`` and stops them with SIGTERM at
the end. The first failure raises ``BlockFailed`` naming the block's line and output.

Example:
    >>> from tests.docs.blocks import parse
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     run_page(parse("```bash\\necho hi > f.txt\\n```\\n"), pathlib.Path(d))
    ...     (pathlib.Path(d) / "f.txt").read_text()
    'hi\\n'
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tests.docs.blocks import Block

BLOCK_TIMEOUT = 30.0  # seconds for one block; the whole docs test stays well under this
STOP_TIMEOUT = 15.0  # seconds a background block may take to exit after SIGTERM
VENV_BIN = Path(sys.executable).parent


class BlockFailed(AssertionError):
    """A block did not run as written."""


def page_env() -> dict[str, str]:
    """The environment of a fresh user: this venv first on PATH, no conveyor settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVEYOR_")}
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    env.pop("PYTHONPATH", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class PythonSession:
    """One interpreter per page; blocks share its names like lines typed into a REPL."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self._log = open(workdir / ".pysession.log", "w+", encoding="utf-8")  # noqa: SIM115
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("pysession.py"))],
            cwd=workdir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )

    def run(self, block: Block, where: str) -> str:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        request = {"kind": block.kind, "code": block.text, "name": where}
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        # One answer line per request, so nothing is left buffered between requests and
        # select() on the pipe tells whether the answer came in time.
        ready, _, _ = select.select([self._proc.stdout], [], [], BLOCK_TIMEOUT)
        if not ready:
            raise BlockFailed(
                f"{where}: still running after {BLOCK_TIMEOUT:.0f} s\n{self._printed()}"
            )
        line = self._proc.stdout.readline()
        if not line:
            raise BlockFailed(f"{where}: the Python session died\n{self._printed()}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise BlockFailed(f"{where} failed:\n{answer['output']}\n{self._printed()}")
        return str(answer["output"])

    def _printed(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read()[-4000:]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:  # it ends at EOF at once, unless a block is still running (a failure)
            self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()


class ShellSession:
    """One ``bash`` per page, fed one command at a time (exports and ``cd`` persist).

    Each command's stdin is /dev/null (a prompt gets EOF rather than eating the next
    command), its output goes to a file, and its exit status is written atomically to
    another, which this side waits for.
    """

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self._dir = workdir / ".shell"
        self._dir.mkdir()
        self._n = 0
        self._background: list[tuple[str, str]] = []  # (pid file, where)
        self._proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=workdir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own process group: close() can end all it started
        )

    def _send(self, script: str, where: str, timeout: float) -> tuple[int, str]:
        assert self._proc.stdin is not None
        self._n += 1
        out, rc = self._dir / f"{self._n}.out", self._dir / f"{self._n}.rc"
        self._proc.stdin.write(f"{script}\necho $? > {rc}.tmp && mv {rc}.tmp {rc}\n")
        self._proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while not rc.exists():
            if time.monotonic() > deadline:
                raise BlockFailed(f"{where}: still running after {timeout:.0f} s")
            if self._proc.poll() is not None:
                raise BlockFailed(f"{where}: the shell exited")
            time.sleep(0.02)
        printed = out.read_text(errors="replace") if out.exists() else ""
        return int(rc.read_text()), printed

    def run(self, command: str, where: str, expect: int = 0) -> str:
        """Run one command; it must exit ``expect``. Returns what it printed."""
        out = self._dir / f"{self._n + 1}.out"
        status, printed = self._send(
            f"{{ {command}\n}} </dev/null >{out} 2>&1", where, BLOCK_TIMEOUT
        )
        if status != expect:
            want = "" if expect == 0 else f" (the page says it exits {expect})"
            raise BlockFailed(f"{where}: `{command}` exited {status}{want}:\n{printed[-4000:]}")
        return printed

    def start(self, command: str, where: str) -> None:
        self._n += 1
        out, pid = self._dir / f"bg{self._n}.out", self._dir / f"bg{self._n}.pid"
        self.run(f"{command} </dev/null >{out} 2>&1 &\necho $! > {pid}", where)
        self._background.append((str(pid), where))

    def stop_background(self) -> None:
        """SIGTERM every background command, newest first; each must exit 0."""
        for pid_file, where in reversed(self._background):
            pid = Path(pid_file).read_text().strip()
            status, _ = self._send(f"kill -TERM {pid}; wait {pid}", where, STOP_TIMEOUT + 5)
            log = Path(pid_file).with_suffix(".out").read_text(errors="replace")
            if status != 0:
                raise BlockFailed(f"{where}: exited {status} after SIGTERM:\n{log[-4000:]}")
        self._background.clear()

    def close(self) -> None:
        """End the shell and anything a failed block left running (its process group)."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait(timeout=10)


def run_page(blocks: Sequence[Block], workdir: Path, page: str = "page") -> None:
    """Run every runnable block of one page, in order, in ``workdir``."""
    env = page_env()
    # A page may write to ~ (shell completion lines go into ~/.bashrc): a user's home of
    # its own, so the test never touches the real one.
    home = workdir / "home"
    (home / ".config" / "fish" / "completions").mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    python: PythonSession | None = None
    shell: ShellSession | None = None
    try:
        for block in blocks:
            where = f"{page}:{block.line}"
            if block.skip is not None or block.kind == "other":
                continue
            if block.kind == "file":
                assert block.file_name is not None
                target = workdir / block.file_name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.text, encoding="utf-8")
            elif block.kind in ("python", "pycon"):
                python = python or PythonSession(workdir, env)
                python.run(block, where)
            else:
                shell = shell or ShellSession(workdir, env)
                for command in block.commands():
                    if block.background:
                        shell.start(command, where)
                    else:
                        shell.run(command, where, expect=block.exit_status)
        if shell is not None:
            shell.stop_background()
    finally:
        if shell is not None:
            shell.close()
        if python is not None:
            python.close()
