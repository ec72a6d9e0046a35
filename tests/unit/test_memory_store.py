"""The memory store's URL and names (its behaviour is the contract suite's, where it runs
as one more store), and the core never importing the testing package it runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import conveyor
from conveyor.app import check_url, open_backend
from conveyor.backends.base import JobInsertParams
from conveyor.errors import ConfigurationError

SRC = Path(conveyor.__file__).parent


def test_a_named_store_is_shared_in_the_process_and_a_bare_one_is_private() -> None:
    first, second = open_backend("memory://unit-shared"), open_backend("memory://unit-shared")
    first.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    assert [r.id for r in second.job_get_many(["j1"])] == ["j1"]
    assert open_backend("memory://").job_get_many(["j1"]) == []
    assert "shared" not in first.features  # other processes never see it


def test_memory_urls_are_checked_without_opening() -> None:
    check_url("memory://tests-1.a_b")
    with pytest.raises(ConfigurationError, match="must be memory://NAME"):
        check_url("memory:///tmp/x")


def _imports(path: Path) -> set[str]:
    """Modules ``path`` imports at run time (anywhere, functions included), type-only
    imports (``if TYPE_CHECKING:``) aside."""
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text())]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return found


def test_only_the_package_itself_reaches_the_testing_package() -> None:
    """Issue 22: the core calls conveyor.extensions; ``conveyor/__init__.py`` provides
    them. No other module outside conveyor/testing imports it, not even lazily."""
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "testing" not in path.relative_to(SRC).parts[:1]
        and path != SRC / "__init__.py"
        and any(
            m == "conveyor.testing" or m.startswith("conveyor.testing.") for m in _imports(path)
        )
    ]
    assert offenders == []
