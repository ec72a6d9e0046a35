"""SQLite's search index (FTS5, schema_008.sql): searches are answered by it (no scan),
it stays consistent through inserts, finishes and deletes (FTS5's own integrity
check), and it can be turned off (searches then scan, writes skip it) and on again
(every job indexed once more)."""

from __future__ import annotations

from pathlib import Path

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams
from conveyor.backends.sqlite.search import build_index, drop_index
from conveyor.states import FinishKind


def test_index_answers_follows_writes_and_turns_off_and_on(tmp_path: Path) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="media.resize")
    def resize(path: str) -> None: ...

    jobs = [resize.enqueue(f"photo_{i}.png") for i in range(20)]
    backend = app.backend
    (claimed,) = backend.job_claim(JobClaimParams("w1", [("default", 1)], 1))
    backend.job_finish_many(
        [
            JobFinishParams(
                claimed.id,
                claimed.token,
                FinishKind.SUCCEEDED,
                result='"thumb_ready"',
                started_at=claimed.claimed_at,
            )
        ]
    )
    backend.job_delete_many([jobs[5].id])
    page = app.search("photo_7")
    assert [j.id for j in page.jobs] == [jobs[7].id] and page.scanned is None  # the index
    assert [j.id for j in app.search("result:thumb_ready").jobs] == [claimed.id]
    assert app.search("photo_5").jobs == ()
    with backend._write() as conn:  # type: ignore[attr-defined]
        conn.execute("INSERT INTO job_search (job_search) VALUES ('integrity-check')")
        drop_index(conn)
    assert not backend.search_index_enabled()  # type: ignore[attr-defined]
    later = resize.enqueue("photo_99.png")  # written without an index
    page = app.search("photo_99")
    assert [j.id for j in page.jobs] == [later.id] and page.scanned == 20  # a scan
    with backend._write() as conn:  # type: ignore[attr-defined]
        build_index(conn)
        conn.execute("INSERT INTO job_search (job_search) VALUES ('integrity-check')")
    page = app.search("photo_99 OR photo_7")  # OR is a word here: nothing has it
    assert page.jobs == () and page.scanned is None
    assert [j.id for j in app.search("photo_99").jobs] == [later.id]
    app.close()
