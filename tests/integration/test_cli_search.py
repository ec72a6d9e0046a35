"""``conveyor jobs --search`` through pipes: the same language as ``app.search`` (the
contract suite runs it on every store), ANDed with the other filter options, the
next page's id; a query the language refuses is a usage error in one line."""

from __future__ import annotations

import json
from pathlib import Path

import conveyor
from tests.integration.cli_run import conveyor as run


def test_jobs_search_through_a_pipe(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    app = conveyor.App(url)
    on = run("search-index", "--url", url, "on", cwd=tmp_path)  # off by default
    assert on.returncode == 0, on.stderr

    @app.task(name="mail.send_welcome", queue="mail")
    def send_welcome(user_id: int) -> None: ...

    ids = [send_welcome.enqueue(i).id for i in range(3)]
    app.close()
    done = run(
        "jobs", "--url", url, "--search", "send_welcome", "--limit", "2", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert [j["id"] for j in page["jobs"]] == [ids[2], ids[1]]
    assert page["complete"] is True and page["scanned"] is None  # the index answered
    assert page["next_after"] == ids[1]  # --after it: the next page (contract-tested)
    assert (page["count"], page["count_exact"]) == (3, True)  # every match, not the page
    table = run("jobs", "--url", url, "--search", "send_w*", "--limit", "2", cwd=tmp_path)
    assert table.returncode == 0 and "\n3 matches\n" in table.stdout
    assert "\x1b" not in table.stdout  # a pipe: the matched words are not styled
    narrowed = run(
        "jobs", "--url", url, "--queue", "other", "--search", "send_welcome", cwd=tmp_path
    )
    assert narrowed.returncode == 0 and narrowed.stdout.strip() == "no jobs match"
    bad = run("jobs", "--url", url, "--search", "colour:red", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "Error: Invalid value for --search: colour:red: unknown field 'colour' (known: task, "
        "queue, args, result, error, headers, logs, state, finished, created, args.NAME, header.NAME)"
    ]


def test_matched_words_are_marked_on_a_terminal(tmp_path: Path) -> None:
    import io

    from conveyor.backends.search_match import highlight_spans
    from conveyor.cli.output import Column, Output
    from conveyor.search_query import parse_search

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    out = Output(stream=stream)
    out.console.force_terminal = True  # rich styles what it writes to a "terminal"
    terms = parse_search("timeout").terms
    out.marks = lambda cell: highlight_spans(cell, terms)
    out.table([Column("error")], [["TimeoutError: gave up"]], empty="none")
    assert "\x1b[1;7mTimeoutError" not in stream.getvalue()  # a word is a whole word
    stream = Tty()
    out = Output(stream=stream)
    out.console.force_terminal = True
    terms = parse_search("timeouterror").terms
    out.marks = lambda cell: highlight_spans(cell, terms)
    out.table([Column("error")], [["TimeoutError: gave up"]], empty="none")
    assert "\x1b[1;7mTimeoutError\x1b[0m" in stream.getvalue()


def test_bulk_actions_by_search_act_on_every_match(tmp_path: Path) -> None:
    """``conveyor retry|cancel|delete --search``: every match (more than a search page),
    after a confirmation with the count (refused: nothing changes), audited."""
    import subprocess

    from conveyor.backends.base import ActionLogListParams
    from conveyor.cli import jobs_search
    from tests.integration.cli_run import CONVEYOR, clean_env

    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    app = conveyor.App(url)  # the index off (the default): the search scans

    @app.task(name="billing.charge", queue="billing")
    def charge(user_id: int) -> None: ...

    n = jobs_search.SEARCH_PAGE + 20  # more than one page of the search
    charge.enqueue_many([{"user_id": i} for i in range(n)])
    other = charge.enqueue(10**6)
    app.close()
    query = "task:charge -1000000"
    asked = subprocess.run(
        [str(CONVEYOR), "cancel", "--url", url, "--search", query],
        input="n\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
        timeout=60,
    )
    assert asked.returncode == 1 and f"Cancel {n} job(s) matching the search?" in asked.stderr
    done = run("cancel", "--url", url, "--search", query, "--yes", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"action": "cancel", "matched": n, "changed": n}
    app = conveyor.App(url)
    assert app.backend.job_get_many([other.id])[0].state.value == "queued"
    (entry,) = app.backend.action_log_list(ActionLogListParams())
    assert (entry.action, entry.count) == ("cancel", n) and query in entry.detail
    app.close()
    gone = run("delete", "--url", url, "--search", "state:cancelled", "--yes", cwd=tmp_path)
    assert gone.returncode == 0 and gone.stdout.strip() == f"delete: {n} of {n} job(s) changed"
    both = run("retry", "--url", url, "--search", "x", "01ABC", cwd=tmp_path)
    assert both.returncode == 2 and "not both" in both.stderr
