"""Load the Lua scripts (one per transition) and call them by SHA.

Each ``scripts/<name>.lua`` is prefixed with the definitions it uses from the libraries
``scripts/_*.lua``: ``_lib.lua``'s first, then the rules of :mod:`conveyor.rules` as Lua
constants (``RULE_*``), then the other libraries' by name (flow control's ``_flow.lua``,
``_limits.lua``, ``_rescue.lua``). A library is a list of top-level ``local``
definitions; one is included when the script, or a definition included for it, names
it. Every included definition runs on every call (a closure, a key concatenation), so a
one-job insert does not pay for the workflow code. The script is registered with
redis-py, which calls ``EVALSHA`` and, on ``NOSCRIPT`` (Redis restarted or its script
cache was flushed), loads the source once more and retries: nothing to do after a restart.

Example:
    >>> "local function k_job" in load_source("job_claim")
    True
    >>> "local function k_logs" in load_source("job_insert")  # named by no insert code
    False
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any, NamedTuple

from redis.commands.core import Script

from conveyor.rules import lua_prelude

#: A top-level definition: ``local function name`` or ``local a, b = ...``.
_DEFINITION = re.compile(r"local\s+(?:function\s+(\w+)|([\w\s,]+?)\s*=)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


class Definition(NamedTuple):
    """One top-level definition of a library (with the comment lines after it)."""

    library: str
    text: str
    #: the names it defines
    defines: frozenset[str]
    #: every identifier its code names (comments left out)
    names: frozenset[str]


def _identifiers(lua: str) -> frozenset[str]:
    """The identifiers of Lua code, comments left out (no string literal of the
    scripts holds ``--``)."""
    code = "\n".join(line.split("--", 1)[0] for line in lua.splitlines())
    return frozenset(_IDENTIFIER.findall(code))


def split_definitions(library: str, text: str) -> list[Definition]:
    """A library's text cut before each top-level ``local`` (the header comments stay
    with the first definition).

    >>> [sorted(d.defines) for d in split_definitions("_x.lua", "-- x\\nlocal A, B = 1, 2\\n"
    ...     "local function f(x)\\n  return A\\nend")]
    [['A', 'B'], ['f']]
    """
    pieces: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("local ") and any(p.startswith("local ") for p in pieces[-1]):
            pieces.append([])
        pieces[-1].append(line)
    found = []
    for lines in pieces:
        piece = "\n".join(lines)
        head = next((line for line in lines if line.startswith("local ")), "")
        match = _DEFINITION.match(head)
        function, variables = match.groups() if match else (None, None)
        defines = {function} if function else {v.strip() for v in (variables or "").split(",")}
        defines.discard("")
        found.append(Definition(library, piece, frozenset(defines), _identifiers(piece)))
    return found


@functools.cache
def _libraries() -> tuple[Definition, ...]:
    """Every library definition in load order: ``_lib.lua`` first (the others use its
    helpers), then the other ``_*.lua`` by name (``_limits.lua`` uses ``_flow.lua``'s
    keys). Read once per process: every backend loads all of its scripts."""
    folder = resources.files("conveyor.backends.redis") / "scripts"
    names = sorted(
        f.name for f in folder.iterdir() if f.name.startswith("_") and f.name.endswith(".lua")
    )
    names.remove("_lib.lua")
    return tuple(
        d
        for n in ("_lib.lua", *names)
        for d in split_definitions(n, (folder / n).read_text(encoding="utf-8"))
    )


def load_source(name: str) -> str:
    """The full text sent to Redis for script ``name`` (the definitions it uses + itself)."""
    folder = resources.files("conveyor.backends.redis") / "scripts"
    script = (folder / f"{name}.lua").read_text(encoding="utf-8")
    definitions = _libraries()
    chosen = [False] * len(definitions)
    wanted = set(_identifiers(script))
    grown = True
    while grown:  # until no included definition names one more
        grown = False
        for i, d in enumerate(definitions):
            if not chosen[i] and (not d.defines or d.defines & wanted):
                chosen[i] = grown = True
                wanted |= d.names
    lib = [
        d.text for d, c in zip(definitions, chosen, strict=True) if c and d.library == "_lib.lua"
    ]
    others = [
        d.text for d, c in zip(definitions, chosen, strict=True) if c and d.library != "_lib.lua"
    ]
    # The rules (target states, attempt outcomes, dependants' table) come from
    # conveyor/rules.py as Lua constants: the scripts look them up, never restate them.
    return "\n".join([*lib, lua_prelude(uses="\n".join([*others, script])), *others, script])


class Scripts:
    """Every script of the backend, registered on one client, one attribute each."""

    def __init__(self, client: Any) -> None:
        def load(name: str) -> Script:
            return Script(client, load_source(name))

        self.job_cancel = load("job_cancel")
        self.job_claim = load("job_claim")
        self.job_delete = load("job_delete")
        self.job_extend_leases = load("job_extend_leases")
        self.job_finish = load("job_finish")
        self.job_insert = load("job_insert")
        self.job_promote_due = load("job_promote_due")
        self.job_prune = load("job_prune")
        self.job_release = load("job_release")
        self.job_rescue = load("job_rescue")
        self.job_rescue_apply = load("job_rescue_apply")
        self.job_retry = load("job_retry")
        self.job_watch = load("job_watch")
        self.worker_deregister = load("worker_deregister")
        self.worker_heartbeat = load("worker_heartbeat")
