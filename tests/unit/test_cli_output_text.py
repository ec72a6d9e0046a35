"""The pure helpers of ``conveyor.cli.output``: escaping and time formatting."""

from __future__ import annotations

import io
import time

import pytest

from conveyor.cli.output import Column, Output, iso_time, literal


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain [bold]x[/]", "plain [bold]x[/]"),  # markup characters are just text
        ("esc \x1b[31m", "esc \\x1b[31m"),
        ("cr\rlf\ntab\t", "cr\\rlf\\ntab\\t"),
        ("nul\x00 del\x7f csi\x9b", "nul\\x00 del\\x7f csi\\x9b"),
        ("bidi \u202e evil", "bidi \\u202e evil"),
        ("ünïcode ✓", "ünïcode ✓"),
    ],
)
def test_literal_escapes_control_characters(raw: str, shown: str) -> None:
    assert literal(raw) == shown


def test_literal_block_keeps_newlines_only() -> None:
    assert literal("a\nb\r\x1b", multiline=True) == "a\nb\\r\\x1b"
    assert literal(None) == "-"


def test_iso_time_utc_and_local(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1796094970 = 20788 days + 3 h 16 min 10 s after the epoch.
    assert iso_time(1796094970.87, utc=True) == "2026-12-01T03:16:10Z"
    assert iso_time(None) == "-"
    monkeypatch.setenv("TZ", "XYZ-05:30")  # POSIX rule: 5:30 east of Greenwich
    time.tzset()
    try:
        assert iso_time(1796094970.87) == "2026-12-01T08:46:10+05:30"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_plain_table_aligns_whole_values() -> None:
    stream = io.StringIO()
    Output(stream=stream).table(
        [Column("id", key=True), Column("n", right=True), Column("note", preview=3)],
        [["a" * 30, 7, "long note\x1b"], ["b", 12, "-"]],
        empty="nothing",
    )
    assert stream.getvalue().splitlines() == [
        "id                               n  note",
        "a" * 30 + "   7  long note\\x1b",
        "b                               12  -",
    ]
