"""Load the Lua scripts (one per transition) and call them by SHA.

Each ``scripts/<name>.lua`` is prefixed with ``scripts/_lib.lua``, the rules of
:mod:`conveyor.rules` as Lua constants (``RULE_*``), and then the other libraries
``scripts/_*.lua`` it uses (by name: flow control's ``_flow.lua``, ``_limits.lua``,
``_rescue.lua``; a library is included when the script, or a library included for it,
names one of its top-level locals), and registered with
redis-py, which calls ``EVALSHA`` and, on ``NOSCRIPT`` (Redis restarted or its script
cache was flushed), loads the source once more and retries: nothing to do after a restart.

Example:
    >>> "local function k_job" in load_source("job_claim")
    True
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from redis.commands.core import Script

from conveyor.rules import lua_prelude

#: A library's top-level definitions: ``local function name`` and ``local a, b = ...``.
_TOP_LEVEL = re.compile(r"^local\s+(?:function\s+(\w+)|([\w\s,]+?)\s*=)", re.MULTILINE)


def defined_names(library: str) -> set[str]:
    """The top-level local names a library defines.

    >>> sorted(defined_names("local K_A, K_B = 1, 2\\nlocal function f(x) return x end"))
    ['K_A', 'K_B', 'f']
    """
    names: set[str] = set()
    for function, variables in _TOP_LEVEL.findall(library):
        names.update([function] if function else (v.strip() for v in variables.split(",")))
    return names


def _uses(text: str, names: set[str]) -> bool:
    return any(re.search(rf"\b{re.escape(n)}\b", text) for n in names)


def load_source(name: str) -> str:
    """The full text sent to Redis for script ``name`` (libraries + script)."""
    folder = resources.files("conveyor.backends.redis") / "scripts"
    libs = sorted(
        f.name for f in folder.iterdir() if f.name.startswith("_") and f.name.endswith(".lua")
    )
    # _lib.lua first, always: the other libraries use its helpers.
    libs.remove("_lib.lua")
    lib = (folder / "_lib.lua").read_text(encoding="utf-8")
    script = (folder / f"{name}.lua").read_text(encoding="utf-8")
    # Only the libraries the script uses: every top-level definition runs on every call
    # (closures, key concatenations), and the three optional libraries were ~13 of the
    # ~60 µs a one-job insert spent in Redis (measured with INFO commandstats).
    optional = {n: (folder / n).read_text(encoding="utf-8") for n in libs}
    chosen: set[str] = set()
    grown = True
    while grown:  # a library may use another (_limits.lua names _flow.lua's keys)
        text = "\n".join([script, *(optional[n] for n in chosen)])
        added = {n for n in optional if n not in chosen and _uses(text, defined_names(optional[n]))}
        chosen |= added
        grown = bool(added)
    others = [optional[n] for n in libs if n in chosen]  # by name, as before
    # The rules (target states, attempt outcomes, dependants' table) come from
    # conveyor/rules.py as Lua constants: the scripts look them up, never restate them.
    return "\n".join([lib, lua_prelude(uses="\n".join([*others, script])), *others, script])


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
