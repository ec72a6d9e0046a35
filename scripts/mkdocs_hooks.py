"""MkDocs hooks (``hooks:`` in mkdocs.yml): the pages of the site that live outside docs/.

The site is built from docs/, but its home page is the README, and the repository's
pages link to each other by their paths in a checkout (``docs/tasks.md`` from the
README, ``../README.md#configuration`` from docs/). Here the README, the changelog and
RELIABILITY.md become pages of the site, and every relative link is rewritten from the
repository path it names to that file's page. A link to a repository file the site does
not show (``BENCHMARKS.md``, ``examples/``) keeps its text and loses the link: the
project has no public host to point it at. ``mkdocs build --strict`` then fails on any
link that names neither.

Example (the rewrite, as seen from the README):
    >>> rewrite_links("[Tasks](docs/tasks.md#types), [figures](BENCHMARKS.md)", "README.md")
    '[Tasks](tasks.md#types), figures'
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = "docs/"
#: Repository file -> its page in the site, for the pages that are not under docs/.
EXTRA_PAGES = {
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
    "RELIABILITY.md": "reliability.md",
}
_LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def site_path(repo_path: str) -> str | None:
    """The site's file for a repository path, or None when the site does not have it."""
    if repo_path in EXTRA_PAGES:
        return EXTRA_PAGES[repo_path]
    if repo_path.startswith(DOCS):
        return repo_path[len(DOCS) :]
    return None


def _rewrite_one(match: re.Match[str], page_repo_path: str) -> str:
    target = match.group("target")
    if target.startswith("#") or _SCHEME.match(target):
        return match.group(0)  # an anchor on the same page, or an absolute URL
    path, hash_, fragment = target.partition("#")
    repo_target = posixpath.normpath(posixpath.join(posixpath.dirname(page_repo_path), path))
    site_target = site_path(repo_target)
    if site_target is None:
        return match.group("text")
    here = posixpath.dirname(site_path(page_repo_path) or "")
    relative = posixpath.relpath(site_target, here or ".")
    return f"{match.group('bang')}[{match.group('text')}]({relative}{hash_}{fragment})"


def rewrite_links(markdown: str, page_repo_path: str) -> str:
    """Every relative link of a page, from repository paths to the site's (not in code)."""
    lines = markdown.split("\n")
    fence: str | None = None
    for i, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            lines[i] = _LINK.sub(lambda m: _rewrite_one(m, page_repo_path), line)
    return "\n".join(lines)


def on_files(files: Any, config: Any) -> Any:
    """Add the pages kept outside docs/ (README, changelog, RELIABILITY.md) to the site."""
    from mkdocs.structure.files import File

    for repo_path, uri in EXTRA_PAGES.items():
        content = (ROOT / repo_path).read_text(encoding="utf-8")
        files.append(File.generated(config, uri, content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Point the page's links at the site's pages instead of the repository's files."""
    uri = page.file.src_uri
    repo_path = next((k for k, v in EXTRA_PAGES.items() if v == uri), DOCS + uri)
    return rewrite_links(markdown, repo_path)
