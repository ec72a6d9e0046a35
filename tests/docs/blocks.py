"""Fenced code blocks of a Markdown page, classified the way the docs test runs them.

A page is read top to bottom as one user session in one empty directory:

- a Python block whose first line is a comment naming a file (``# tasks.py``) is that
  file: it is written into the directory, not run (later blocks import it); so is a
  ``toml`` block whose first line is ``# conveyor.toml`` (or ``# pyproject.toml``);
- any other ``python`` block runs in the page's one Python session (like a REPL: names
  persist from block to block), and a ``pycon`` block (``>>>`` prompts) runs there with
  doctest, so the values it shows are checked;
- ``bash`` / ``sh`` / ``shell`` blocks run command by command in the page's one shell
  (``export`` persists), ``console`` blocks the same for their ``$ `` lines (the other
  lines are output and are not compared);
- an HTML comment on the line before a block changes that:
  ``<!-- not-run: why -->`` skips it (the reason is required), and
  ``<!-- background: why -->`` starts a shell block in the background (a worker, a
  server); it gets SIGTERM after the page's last block and must then exit 0;
  ``<!-- exit: N -->`` says every command of a shell block exits with status N (an
  example of an error message: it runs, and must fail the way the page says).

Every fence must say its language; blocks in other languages (``text``, ``mermaid``,
``ini``, ``dockerfile``...) are not run by this test.

Example:
    >>> page = "Intro\\n\\n<!-- not-run: needs a host -->\\n```bash\\nreboot\\n```\\n"
    >>> [(b.kind, b.skip) for b in parse(page)]
    [('shell', 'needs a host')]
"""

from __future__ import annotations

import dataclasses
import re

PYTHON_LANGS = frozenset({"python", "py"})
PYCON_LANGS = frozenset({"pycon"})
SHELL_LANGS = frozenset({"bash", "sh", "shell", "zsh"})
CONSOLE_LANGS = frozenset({"console"})

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^<!--\s*(?P<key>not-run|background|exit)\s*:\s*(?P<why>.*?)\s*-->$")
_FILE_COMMENT = re.compile(r"^#\s*(?P<name>[\w./-]+\.(?:py|toml))\s*(?:#.*)?$")
#: A TOML block whose first line is ``# name.toml`` is a file too (a config file).
TOML_LANGS = frozenset({"toml"})


class PageError(ValueError):
    """The page cannot be classified (an unlabelled fence, a marker without a reason)."""


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: where it is, what it is, and how the test treats it."""

    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    skip: str | None = None  # the not-run reason
    background: bool = False
    exit_status: int = 0  # what every command of a shell block must exit with

    @property
    def kind(self) -> str:
        """``file``, ``python``, ``pycon``, ``shell``, ``console`` or ``other``."""
        if self.lang in PYTHON_LANGS:
            return "file" if self.file_name else "python"
        if self.lang in TOML_LANGS and self.file_name:
            return "file"
        if self.lang in PYCON_LANGS:
            return "pycon"
        if self.lang in SHELL_LANGS:
            return "shell"
        if self.lang in CONSOLE_LANGS:
            return "console"
        return "other"

    @property
    def file_name(self) -> str | None:
        """The file a ``# name.py`` first line says this block is."""
        first = self.text.split("\n", 1)[0].strip()
        match = _FILE_COMMENT.match(first)
        return match.group("name") if match else None

    def commands(self) -> list[str]:
        """The shell commands of a shell or console block, one per logical line.

        >>> Block(1, "console", "$ a \\\\\\n  --b\\nout\\n$ c  # note\\n").commands()
        ['a \\\\\\n  --b', 'c  # note']
        """
        lines = self.text.split("\n")
        commands: list[str] = []
        current: list[str] = []
        for raw in lines:
            if current:  # continuation of a line that ended with a backslash
                current.append(raw)
            elif self.kind == "console":
                if not raw.startswith("$ "):
                    continue  # output
                current.append(raw[2:])
            else:
                if not raw.strip() or raw.lstrip().startswith("#"):
                    continue
                current.append(raw)
            if not raw.endswith("\\"):
                commands.append("\n".join(current))
                current = []
        if current:
            commands.append("\n".join(current))
        return commands


def parse(markdown: str) -> list[Block]:
    """Every fenced block of a page, with the marker on the line before it applied."""
    blocks: list[Block] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        lang = opening.group("info").strip().split(" ", 1)[0].lower()
        if not lang:
            raise PageError(
                f"line {i + 1}: a fence without a language; say what it is "
                "(python, pycon, bash, console, or text for output and syntax)"
            )
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        skip, background, status = _marker(lines, i)
        blocks.append(Block(i + 1, lang, "\n".join(body) + "\n", skip, background, status))
        i = j + 1
    return blocks


def _marker(lines: list[str], fence_index: int) -> tuple[str | None, bool, int]:
    """The ``not-run`` reason, ``background`` flag and ``exit`` status from the line
    before a fence."""
    k = fence_index - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    if k < 0:
        return None, False, 0
    match = _MARKER.match(lines[k].strip())
    if not match:
        return None, False, 0
    key, why = match.group("key"), match.group("why")
    if not why:
        raise PageError(f"line {k + 1}: a {key} marker needs a reason")
    if key == "not-run":
        return why, False, 0
    if key == "exit":
        if not why.isdigit():
            raise PageError(f"line {k + 1}: an exit marker needs a status: <!-- exit: 1 -->")
        return None, False, int(why)
    return None, True, 0
