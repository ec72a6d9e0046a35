"""The Lua sent to Redis: each script gets the library definitions it names, and those
they name in turn, and nothing else (every included definition runs on each call).

The scripts' behaviour is the contract suite's (tests/contract, run on a real
redis-server); here, without a server, that no script misses a definition it uses.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

from conveyor.backends.redis.scripts import _libraries, load_source

_FOLDER = resources.files("conveyor.backends.redis") / "scripts"
SCRIPTS = sorted(
    f.name.removesuffix(".lua")
    for f in _FOLDER.iterdir()
    if f.name.endswith(".lua") and not f.name.startswith("_")
)
#: every name a library defines
LIBRARY_NAMES = {name for d in _libraries() for name in d.defines}


def _defined_in(source: str) -> set[str]:
    found = set(re.findall(r"^local function (\w+)", source, re.MULTILINE))
    for names in re.findall(r"^local ([\w, ]+?) =", source, re.MULTILINE):
        found |= {n.strip() for n in names.split(",")}
    return found


def _named_in(source: str) -> set[str]:
    code = "\n".join(line.split("--", 1)[0] for line in source.splitlines())
    return set(re.findall(r"[A-Za-z_]\w*", code))


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_library_name_a_script_uses_is_defined_in_its_source(name: str) -> None:
    source = load_source(name)
    missing = (_named_in(source) & LIBRARY_NAMES) - _defined_in(source)
    assert not missing, f"{name}.lua names {sorted(missing)} but its source defines none"


def test_a_script_gets_what_its_definitions_use() -> None:
    claim = load_source("job_claim")
    # job_claim calls limit_admit (_limits.lua), which reads K_LIMITS (_flow.lua).
    assert "local function limit_admit" in claim
    assert re.search(r"^local K_UNIQUE, K_LIMITS =", claim, re.MULTILINE)
    # _lib.lua first, then the rules, then the other libraries: definitions before use.
    assert claim.index("local BASE") < claim.index("RULE_") < claim.index("K_LIMITS =")


def test_the_one_job_insert_carries_no_workflow_code() -> None:
    insert = load_source("job_insert")
    assert "local function k_job" in insert and "local function wake" in insert
    for unused in ("settle", "flow_insert", "limit_admit", "rescue_dead_set", "k_logs"):
        assert f"local function {unused}" not in insert
    assert len(insert) < len(load_source("job_insert_flow")) / 2
