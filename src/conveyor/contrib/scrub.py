"""``Scrubber``: a copy of any report with known secret values masked.

For integrations that send what they see inside a job to somewhere else (Sentry's
events: messages, breadcrumbs, and every frame's local variables, still Python objects
when its event processors run). The values are the job's opened secret arguments
(``current_job().secret_values``); anything that holds one is masked with ``•••``:

- a string containing a secret string (of 4 characters or more) has it replaced where
  it occurs; shorter secrets and non-string secrets (numbers) mask a value equal to them;
- lists, tuples, sets and dicts are copied with their items scrubbed (the originals,
  which may be the task's own arguments, are never changed);
- any other object whose ``repr`` shows a secret is replaced by its scrubbed ``repr``.

Deeper than 12 levels, or past a cycle, a value is replaced by its scrubbed ``repr``.

Example:
    >>> s = Scrubber(("4111 1111 1111 1111", 1234))
    >>> s.scrub({"msg": "card 4111 1111 1111 1111 declined", "vars": {"pin": 1234, "n": 3}})
    {'msg': 'card ••• declined', 'vars': {'pin': '•••', 'n': 3}}
    >>> s.scrub(["ok", ("4111 1111 1111 1111",)])
    ['ok', ['•••']]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MASK = "•••"
#: shorter secret strings are masked only where a whole value equals them: replacing
#: "ab" inside every message would garble reports without protecting much
MIN_SUBSTRING = 4
MAX_DEPTH = 12


class Scrubber:
    """Masks the given secret values in copies of reports (see the module docstring)."""

    def __init__(self, secrets: Iterable[Any]) -> None:
        self._needles: list[str] = []
        self._equal: list[Any] = []
        for leaf in _leaves(secrets):
            if isinstance(leaf, str) and len(leaf) >= MIN_SUBSTRING:
                self._needles.append(leaf)
            elif leaf is not None and not isinstance(leaf, bool) and leaf != "":
                self._equal.append(leaf)
                self._equal.append(str(leaf))
        self._needles.sort(key=len, reverse=True)  # the longest first: no partial masks

    def __bool__(self) -> bool:
        return bool(self._needles or self._equal)

    def scrub(self, value: Any) -> Any:
        """A copy of ``value`` with every secret masked."""
        return self._scrub(value, 0, set())

    def _text(self, text: str) -> str:
        for needle in self._needles:
            if needle in text:
                text = text.replace(needle, MASK)
        return text

    def _is_secret(self, value: Any) -> bool:
        try:
            return any(type(value) is type(e) and value == e for e in self._equal)
        except Exception:  # an odd __eq__: judged by its repr instead
            return False

    def _scrub(self, value: Any, depth: int, seen: set[int]) -> Any:
        if isinstance(value, str):
            return MASK if self._is_secret(value) else self._text(value)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            return MASK if self._is_secret(value) else value
        if depth >= MAX_DEPTH or id(value) in seen:
            return self._text(_safe_repr(value))
        if isinstance(value, dict):
            seen.add(id(value))
            out = {k: self._scrub(v, depth + 1, seen) for k, v in value.items()}
            seen.discard(id(value))
            return out
        if isinstance(value, (list, tuple, set, frozenset)):
            seen.add(id(value))
            items = [self._scrub(v, depth + 1, seen) for v in value]
            seen.discard(id(value))
            return items
        if isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode("utf-8", "replace")
            scrubbed = self._text(text)
            return value if scrubbed == text else scrubbed
        shown = _safe_repr(value)
        scrubbed = self._text(shown)
        return value if scrubbed == shown and not self._is_secret(value) else scrubbed


def _leaves(values: Iterable[Any]) -> Iterable[Any]:
    """The scalars inside secret values (a secret may be a dict or a list)."""
    for value in values:
        if isinstance(value, dict):
            yield from _leaves(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            yield from _leaves(value)
        else:
            yield value


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
