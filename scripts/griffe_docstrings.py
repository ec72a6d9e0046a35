"""Griffe extension (mkdocs.yml, the python handler's ``extensions``): docstrings as written.

conveyor's docstrings are read by people, by ``pytest --doctest-modules`` and by this
site. Two habits of theirs are not the Google-style Markdown mkdocstrings expects, and
are translated here before a docstring is parsed, with no change to the source:

- doctests, under an ``Example:`` header or bare: only an ``Examples:`` section knows
  ``>>>``; elsewhere the prompts became Markdown blockquotes and an output list
  ``['x']`` a broken link. Each is wrapped in a ``pycon`` fence;
- Sphinx roles (``:class:`~conveyor.Job```, ``:meth:`add_middleware```), which Markdown
  shows raw: each becomes the code span of its name (the short one after ``~``).

Example:
    >>> clean("Add (:func:`~conveyor.testing.drain`).\\n\\n>>> 1 + 1\\n2").split("\\n")
    ['Add (`drain`).', '', '```pycon', '>>> 1 + 1', '2', '```']
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

_ROLE = re.compile(r"(?<![\w:/]):(?:attr|class|data|exc|func|meth|mod|obj):`(?P<target>[^`]+)`")


def _role_to_code(match: re.Match[str]) -> str:
    target = match.group("target")
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target}`"


def clean(text: str) -> str:
    """``text`` with each doctest fenced and each Sphinx role turned into a code span."""
    out: list[str] = []
    in_fence = False
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip(" ")
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
            i += 1
            continue
        if not stripped.startswith(">>>"):
            out.append(_ROLE.sub(_role_to_code, line))
            i += 1
            continue
        # A doctest runs to the next blank line (doctest's own rule).
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DocstringsAsWritten(Extension):
    """Clean every object's docstring as it is loaded."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = clean(obj.docstring.value)
