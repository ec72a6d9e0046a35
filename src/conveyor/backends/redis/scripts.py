"""Load the Lua scripts (one per transition) and call them by SHA.

Each ``scripts/<name>.lua`` is prefixed with ``scripts/_lib.lua``, the rules of
:mod:`conveyor.rules` as Lua constants (``RULE_*``), and then every other
library ``scripts/_*.lua`` (by name: flow control's ``_flow.lua``, ``_limits.lua``; each
only defines local functions, so a script that does not call them pays a few closures),
and registered with
redis-py, which calls ``EVALSHA`` and, on ``NOSCRIPT`` (Redis restarted or its script
cache was flushed), loads the source once more and retries: nothing to do after a restart.

Example:
    >>> "local function k_job" in load_source("job_claim")
    True
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from redis.commands.core import Script

from conveyor.rules import lua_prelude


def load_source(name: str) -> str:
    """The full text sent to Redis for script ``name`` (library + script)."""
    lib, others = _library()
    script = (_folder() / f"{name}.lua").read_text(encoding="utf-8")
    # The rules (target states, attempt outcomes, dependants' table) come from
    # conveyor/rules.py as Lua constants: the scripts look them up, never restate them.
    return "\n".join([lib, lua_prelude(uses="\n".join([*others, script])), *others, script])


def _folder() -> Any:
    return resources.files("conveyor.backends.redis") / "scripts"


@functools.cache
def _library() -> tuple[str, tuple[str, ...]]:
    """``_lib.lua`` and the other libraries' texts (sorted by name), read once a process:
    every script is prefixed with them, and opening a backend loads some fifteen scripts
    (reading the folder for each was ~5 ms of a Redis worker's start, issue 16)."""
    folder = _folder()
    libs = sorted(
        f.name for f in folder.iterdir() if f.name.startswith("_") and f.name.endswith(".lua")
    )
    # _lib.lua first: the other libraries use its helpers.
    libs.remove("_lib.lua")
    lib, *others = [(folder / n).read_text(encoding="utf-8") for n in ("_lib.lua", *libs)]
    return lib, tuple(others)


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
