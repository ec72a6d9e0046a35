"""Griffe extension (mkdocs.yml, the python handler's ``extensions``): doctests as code.

conveyor's docstrings carry their examples as doctests, under an ``Example:`` header or
bare (``pytest --doctest-modules`` runs them). In the Google style mkdocstrings reads,
only an ``Examples:`` section knows ``>>>``; elsewhere the prompts are Markdown
blockquotes and the output list ``['x']`` a broken link. This wraps each doctest in a
``pycon`` fence before the docstring is parsed, so the site shows it as the session it
is, with no change to the docstrings.

Example:
    >>> fence_doctests("Add.\\n\\n>>> 1 + 1\\n2\\n\\nMore.").split("\\n")
    ['Add.', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'More.']
"""

from __future__ import annotations

from typing import Any

from griffe import Extension


def fence_doctests(text: str) -> str:
    """``text`` with each doctest (a ``>>>`` line up to the next blank line) fenced."""
    out: list[str] = []
    in_fence = False
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip(" ")
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(Extension):
    """Fence the doctests of every object's docstring as it is loaded."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
