"""The Python side of a docs page: one interpreter whose names persist from block to block.

Run as a script (``python pysession.py``) in the page's directory. Reads one JSON request
per line on stdin, ``{"kind": "python" | "pycon", "code": ..., "name": ...}``, runs it in
the session's namespace and answers one JSON line ``{"ok": bool, "output": str}`` on the
file descriptor it was started with as stdout. Everything the code itself prints (and any
child process it starts) goes to stderr, so it can never be mistaken for an answer.

Example (the protocol, as ``sessions.PythonSession`` speaks it):
    >>> import json
    >>> json.loads('{"ok": true, "output": ""}')["ok"]
    True
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import os
import sys
import traceback
from typing import Any


def run(kind: str, code: str, name: str, namespace: dict[str, Any]) -> tuple[bool, str]:
    """Run one block in ``namespace``; return (succeeded, what it printed or why not)."""
    out = io.StringIO()
    if kind == "pycon":
        test = doctest.DocTestParser().get_doctest(code, namespace, name, name, 0)
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        runner = doctest.DocTestRunner(optionflags=flags)
        with contextlib.redirect_stdout(out):
            runner.run(test, out=out.write, clear_globs=False)
        namespace.update(test.globs)  # the doctest ran on a copy; keep what it defined
        return runner.failures == 0, out.getvalue()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, name, "exec"), namespace)
    except BaseException:
        return False, out.getvalue() + traceback.format_exc()
    return True, out.getvalue()


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what blocks print goes to stderr from now on
    sys.stdout = sys.stderr
    sys.path.insert(0, os.getcwd())  # `from tasks import ...` finds the page's files
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for line in sys.stdin:
        request = json.loads(line)
        ok, output = run(request["kind"], request["code"], request["name"], namespace)
        answers.write(json.dumps({"ok": ok, "output": output}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
