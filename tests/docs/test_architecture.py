"""docs/architecture.md names only what exists, and its counts and lists are the code's.

Every code span of the page (`` `...` ``, and the paths in its layer chart) is resolved
against the tree: a path must match a file or folder (a glob ending anywhere under
``src/`` or ``tests/``, or at the repository's top), a dotted name must resolve member by
member (``rules.FINISH``: the module ``rules`` defines ``FINISH``; ``Worker._burst_over``:
the class ``Worker`` defines it), a bare name must be defined somewhere (Python under
``src/`` or ``tests/support/``, a word of a Lua script or SQL file, a feature name).
The method counts of the three protocols, the methods each protocol bullet lists, the
stores and each store's ``features`` are compared with the code itself, so a new method,
store or feature fails here until the page says so.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from conveyor.backends import protocols

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "conveyor"
PAGE = ROOT / "docs" / "architecture.md"
#: where a relative path of the page may end: anywhere under these (the page writes
#: `sqlite/inserts.py` for src/conveyor/backends/sqlite/inserts.py and
#: `unit/test_rules.py` for tests/unit/...), or at the repository's top (`scripts/test`)
PATH_ROOTS = (ROOT / "src", ROOT / "tests")
#: spans that are not names: SQL, expressions, URLs, stdlib names
NOT_NAMES = {
    "... WHERE state = 'running' AND token = ?",
    "FOR UPDATE SKIP LOCKED",
    '"x" in backend.features',
    "rescues > 0",
    "memory://NAME",
    "memory://",
    "..._async",
    "getattr",
    "ContextVar",
    "lint-imports",  # import-linter's command (the dev extra)
}
#: a lower-case first part that is an instance, and the classes it is one of
INSTANCES = {
    "backend": ("HotPath", "Flow", "Operations"),
    "app": ("App",),
    "job": ("Job",),
    "current_job()": ("JobContext",),
    "executor": ("Executor",),
}
STORES = ("sqlite", "redis", "postgres", "mariadb", "memory")


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def spans() -> list[str]:
    text = re.sub(r"```.*?```", "", page(), flags=re.S)  # the chart is read on its own
    return sorted({" ".join(s.split()) for s in re.findall(r"`([^`]+)`", text)})


@cache
def index() -> tuple[dict[str, set[str]], str]:
    """Members of every module and class (by short and dotted names), and all src text."""
    members: dict[str, set[str]] = defaultdict(set)
    words: list[str] = []
    files = [*sorted(SRC.rglob("*")), *sorted((ROOT / "tests" / "support").rglob("*.py"))]
    for path in files:
        if path.suffix in {".lua", ".sql"}:
            words.append(path.read_text(encoding="utf-8"))
        if path.suffix != ".py":
            continue
        base = ROOT / "src" if path.is_relative_to(SRC) else ROOT / "tests"
        dotted = ".".join(path.relative_to(base).with_suffix("").parts)
        dotted = dotted.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = members_of(tree)
        parts = dotted.split(".")
        for i in range(len(parts)):  # conveyor.worker.fetching, worker.fetching, fetching
            members[".".join(parts[i:])] |= names
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                members[node.name] |= members_of(node)
                members["*"] |= members_of(node)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                members["*"].add(node.name)  # nested ones too (_implements_the_seam)
        members["*"] |= set(protocols.FEATURES)
        members["*"] |= names
    return members, "\n".join(words)


def members_of(node: ast.AST) -> set[str]:
    """Names a module or class defines: defs, classes, assignments, imports, self.x."""
    found: set[str] = set()
    body = getattr(node, "body", [])
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            found |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            found.add(stmt.target.id)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            found |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(node, ast.ClassDef):
        for sub in ast.walk(node):
            target = sub.target if isinstance(sub, ast.AnnAssign) else None
            targets = sub.targets if isinstance(sub, ast.Assign) else [target]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    found |= {t.attr} if t.value.id == "self" else set()
    return found


def resolves_path(token: str) -> bool:
    path, _, name = token.partition("::")
    path = path.rstrip(":").rstrip("/")
    hits = [*ROOT.glob(path), *(hit for root in PATH_ROOTS for hit in root.glob(f"**/{path}"))]
    if name:  # contract/test_claim.py::test_x: the file defines the test
        return any(re.search(rf"\bdef {re.escape(name)}\b", h.read_text("utf-8")) for h in hits)
    return bool(hits)


def resolves_name(token: str) -> bool:
    members, text = index()
    token = re.sub(r"\[.*?\]|\*$", "", token).replace("/", ".")
    token = re.sub(r"\([^)]*\)", "()", token).removesuffix("()")
    first, *rest = token.split(".")
    if not rest:
        return (
            first in members
            or first in members["*"]
            or re.search(rf"\b{first}\b", text) is not None
        )
    if first in INSTANCES:
        scopes = set(INSTANCES[first])
    elif token.split(".")[0] in members and ".".join(token.split(".")[:-1]) in members:
        scopes = {".".join(token.split(".")[:-1])}  # a module path: services/base.Looper
        rest = rest[-1:]
    elif first in members:
        scopes = {first}
    else:
        return False
    for part in rest:
        part = part.removesuffix("()")
        if not any(part in members[s] for s in scopes):
            # an attribute of an attribute (app.middleware.classes): defined anywhere
            return part in members["*"]
        scopes = {part} if part in members else {"*"}
    return True


def resolves(span: str) -> bool:
    if span in NOT_NAMES:
        return True
    tokens = span.replace(": ", " ").split()
    if re.match(r"\w+: ", span):  # "features: frozenset[str]": the name annotated
        tokens = tokens[:1]
    return all(
        resolves_path(t) or ("/" in t and resolves_name(t))  # services/base.Looper
        if re.search(r"\.(py|sql|lua|md)\b|/|^[.*]", t)
        else resolves_name(t.rstrip(":"))
        for t in tokens
    )  # fmt: skip


@pytest.mark.parametrize("span", spans())
def test_architecture_names_resolve(span: str) -> None:
    assert resolves(span), f"docs/architecture.md names `{span}`, which the tree lacks"


def chart() -> str:
    found = re.search(r"```text\n(.*?)```", page(), flags=re.S)
    assert found, "the layer chart is a ```text block"
    return found.group(1)


def test_architecture_chart_names_resolve() -> None:
    # The chart's words that look like code are paths (x.py, x/): each must exist.
    tokens = re.findall(r"[\w./*]+(?:\.py|/)(?=[\s,)]|$)", chart(), flags=re.M)
    assert tokens
    missing = [t for t in tokens if not resolves_path(t)]
    assert not missing, f"the layer chart names paths the tree lacks: {missing}"


def test_architecture_chart_names_every_store() -> None:
    stores = {p.parent.name for p in (SRC / "backends").glob("*/backend.py")}
    assert stores == set(STORES), "a new store: add it to STORES and to the page"
    line = next(line for line in chart().splitlines() if line.startswith("stores"))
    assert {s for s in stores if f"backends/{s}/" in line} == stores, line


def protocol_methods(cls: type) -> list[str]:
    # the module that defines it (Flow and Durable live in their own modules, re-exported)
    source = sys.modules[cls.__module__].__file__ or ""
    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    return sorted(n.name for n in node.body if isinstance(n, defs))


@pytest.mark.parametrize(
    "cls", [protocols.HotPath, protocols.Flow, protocols.Operations, protocols.Durable]
)
def test_architecture_protocol_counts(cls: type) -> None:
    said = re.search(rf"\*\*{cls.__name__}\*\* \((\d+)", page())
    assert said, f"the page gives {cls.__name__}'s method count"
    assert int(said.group(1)) == len(protocol_methods(cls))


@pytest.mark.parametrize("cls", [protocols.HotPath, protocols.Flow])
def test_architecture_protocol_methods_listed(cls: type) -> None:
    # The bullet lists every method (Operations is summarised by kind, its count checked).
    bullet = re.search(rf"\*\*{cls.__name__}\*\*(.*?)\n  - ", page(), flags=re.S)
    assert bullet
    listed = set(re.findall(r"`(\w+)`", bullet.group(1)))
    methods = set(protocol_methods(cls))
    assert methods - listed <= {"job_insert_many_through_async"}  # written `..._async`
    # a lower-case name the bullet lists is a method of it (or the feature it needs)
    assert {n for n in listed if n.islower()} - methods <= set(protocols.FEATURES)


def said_features() -> dict[str, set[str]]:
    """The features table: | `store` | `feature` `feature` ... |, one row a store."""
    rows = re.findall(r"^\| `(\w+)` \| ((?:`\w+` ?)+) \|$", page(), flags=re.M)
    return {store: set(re.findall(r"`(\w+)`", cell)) for store, cell in rows}


def test_architecture_features_are_each_stores() -> None:
    said = said_features()
    assert set(said) == set(STORES), f"the features table's stores: {sorted(said)}"
    for store in STORES:
        module = importlib.import_module(f"conveyor.backends.{store}.backend")
        assert said[store] == set(module.FEATURES), store
        assert set(module.FEATURES) <= set(protocols.FEATURES), store
