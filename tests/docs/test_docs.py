"""README.md and docs/*.md run as written.

Each page runs top to bottom in a fresh temporary directory as one user session (see
``tests/docs/blocks.py`` for how blocks are read and marked): files are written, Python
blocks share one interpreter, shell commands run in one bash with this venv first on
PATH, workers the text starts are started (in the background) and stopped with SIGTERM.
A block that cannot run must say so with ``<!-- not-run: why -->``; any other block that
fails fails this test. Assertions are on exit status and on values the page itself shows
(``pycon`` output), never on the layout of CLI tables.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import PageError, parse
from tests.docs.sessions import BlockFailed, run_page
from tests.with_django.requires import require_django

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Pages whose every block needs what the default venv lacks: the requirement skips
#: (saying why) or fails where it must run. docs/django.md runs in .ci/django312.
NEEDS = {"django.md": require_django}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    if page.name in NEEDS:
        NEEDS[page.name]()
    blocks = parse(page.read_text(encoding="utf-8"))
    run_page(blocks, tmp_path, page=str(page.relative_to(ROOT)))


def test_every_page_has_its_runnable_blocks_counted() -> None:
    # Guards against the runner silently skipping everything (a parse that finds no
    # blocks, or a marker that swallowed them): the README's quick start must run.
    blocks = parse((ROOT / "README.md").read_text(encoding="utf-8"))
    run = [b for b in blocks if b.skip is None and b.kind != "other"]
    assert {b.kind for b in run} >= {"file", "python", "pycon", "shell"}
    assert any(b.background and "conveyor worker" in b.text for b in run)


def test_an_unmarked_block_that_fails_fails_the_page(tmp_path: Path) -> None:
    page = "```bash\nconveyor no-such-command\n```\n"
    with pytest.raises(BlockFailed, match=r"page:1: `conveyor no-such-command` exited 2"):
        run_page(parse(page), tmp_path)


def test_a_marked_block_is_skipped(tmp_path: Path) -> None:
    page = "<!-- not-run: needs a systemd host -->\n```bash\nsystemctl reboot\n```\n"
    run_page(parse(page), tmp_path)


def test_a_pycon_block_checks_the_values_it_shows(tmp_path: Path) -> None:
    page = "```python\nx = 6\n```\n\n```pycon\n>>> x * 7\n41\n```\n"
    with pytest.raises(BlockFailed, match="Expected:\n    41\nGot:\n    42"):
        run_page(parse(page), tmp_path)


def test_a_file_block_is_written_and_importable(tmp_path: Path) -> None:
    page = "```python\n# greet.py\nWORD = 'hi'\n```\n\n```pycon\n>>> import greet\n>>> greet.WORD\n'hi'\n```\n"
    run_page(parse(page), tmp_path)
    assert (tmp_path / "greet.py").read_text().startswith("# greet.py")


def test_a_background_block_must_stop_cleanly_on_sigterm(tmp_path: Path) -> None:
    page = "<!-- background: ignores TERM -->\n```bash\nbash -c 'trap \"exit 3\" TERM; sleep 30 & wait'\n```\n"
    with pytest.raises(BlockFailed, match="exited 3 after SIGTERM"):
        run_page(parse(page), tmp_path)


def test_a_fence_without_a_language_is_refused() -> None:
    with pytest.raises(PageError, match="line 1: a fence without a language"):
        parse("```\nconveyor worker\n```\n")


def test_a_marker_needs_a_reason() -> None:
    with pytest.raises(PageError, match="needs a reason"):
        parse("<!-- not-run: -->\n```bash\nls\n```\n")


def test_an_exit_marker_runs_an_error_example_and_checks_its_status(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run_page(
        parse("<!-- exit: 2 -->\n```console\n$ conveyor no-such-command\n```\n"), tmp_path / "a"
    )
    with pytest.raises(BlockFailed, match=r"exited 2 \(the page says it exits 1\)"):
        run_page(
            parse("<!-- exit: 1 -->\n```bash\nconveyor no-such-command\n```\n"), tmp_path / "b"
        )


def test_a_python_block_that_hangs_fails_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tests.docs.sessions.BLOCK_TIMEOUT", 0.5)
    with pytest.raises(BlockFailed, match="page:1: still running after"):
        run_page(parse("```python\nimport time\ntime.sleep(5)\n```\n"), tmp_path)
