"""How every CLI command prints: one table writer, literal text, ISO 8601 times.

Rules (see docs/operations.md, "Reading the output"):

- **Terminal** (stdout is a tty): rich tables. Key columns (ids, names, counts) are never
  shortened; other columns wrap or fold. When even that cannot fit the width, each row is
  shown as a block of ``field value`` lines instead, so no value is ever cut.
- **Pipe** (stdout is not a tty): plain text aligned in columns, every value whole, no
  colours or box characters, so ``grep``, ``awk`` and ``cut`` work.
- **Literal text**: whatever comes from jobs, queues, tasks, errors, logs or progress is
  never read as rich markup, control characters are shown escaped (``\\x1b``), and a
  lone surrogate (text no terminal can encode) shows as U+FFFD.
- **Times**: ISO 8601 to the second in the local zone, or UTC (``Z``) with ``--utc``;
  machine-readable output (``--json``, ``export``) has ISO 8601 in UTC to the
  microsecond, or epoch seconds with ``--epoch``.
- **Progress** is a percentage (``13%``) wherever a person reads it; ``--json`` keeps
  the fraction the task reported.
- **Empty results** print one line saying so (``no jobs match``), in both modes.

Example::

    out = Output()
    out.table(
        [Column("id", key=True), Column("task", key=True), Column("payload", preview=60)],
        [[job.id, job.task, job.payload] for job in found],
        title="jobs",
        empty="no jobs match",
    )
    out.line(f"created {iso_time(job.created_at, utc=True)}")
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from conveyor.text import literal

if TYPE_CHECKING:  # rich is imported when a terminal is printed to (issue 25)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

F = TypeVar("F", bound=Callable[..., Any])

#: Narrowest a wrapping column is squeezed to before rows become blocks instead (a
#: column whose values are all shorter needs only their width).
MIN_OTHER_WIDTH = 16
#: Narrowest a preview column (payload, error) is squeezed to, after every preview is at
#: MIN_OTHER_WIDTH and before the other columns (times) start to wrap.
MIN_PREVIEW_WIDTH = 8
#: Space between columns (rich's padding of one each side, outer edges unpadded).
_GAP = 2


def iso_time(ts: float | None, *, utc: bool = False) -> str:
    """An epoch timestamp as ISO 8601 to the second: local zone with its offset, or UTC
    written with ``Z``; ``-`` for no time.

    >>> iso_time(0, utc=True)
    '1970-01-01T00:00:00Z'
    """
    if ts is None:
        return "-"
    try:
        moment = dt.datetime.fromtimestamp(ts, dt.UTC)
        if not utc:
            moment = moment.astimezone()
    except (ValueError, OverflowError, OSError):  # out of range (a row written by hand)
        return f"{ts!r} (not a time)"
    if utc:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.isoformat(timespec="seconds")


def iso_json(ts: float | None) -> str | float | None:
    """An epoch timestamp for machine-readable output (``--json``, ``export``): ISO 8601
    in UTC to the microsecond, written with ``Z``; None stays None. A value out of range
    (a row written by hand) is kept as the number it is.

    >>> iso_json(1.5)
    '1970-01-01T00:00:01.500000Z'
    """
    if ts is None:
        return None
    try:
        moment = dt.datetime.fromtimestamp(ts, dt.UTC)
    except (ValueError, OverflowError, OSError, TypeError):
        return ts
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def percent(fraction: float | None) -> str:
    """Progress as shown to a user everywhere: ``40%``, or ``-`` when none was reported.

    >>> percent(0.1333333)
    '13%'
    """
    return "-" if fraction is None else f"{fraction * 100:.0f}%"


def epoch_option(fn: F) -> F:
    """``--epoch``: times in machine-readable output as epoch seconds, as stored."""
    return click.option(
        "--epoch",
        is_flag=True,
        help="Times as epoch seconds (default: ISO 8601 in UTC, e.g. 2030-01-31T09:00:00.000000Z).",
    )(fn)


def utc_option(fn: F) -> F:
    """``--utc``: show times in UTC instead of the local zone."""
    return click.option(
        "--utc", is_flag=True, help="Show times in UTC (default: the local time zone)."
    )(fn)


@dataclass(frozen=True)
class Column:
    """One column of a table.

    ``key``: an id, name or count, never shortened or wrapped in a terminal.
    ``right``: right-aligned (numbers). ``preview``: in a terminal, show at most this
    many characters (ending in ``…``); a pipe always gets the whole value.
    """

    header: str
    key: bool = False
    right: bool = False
    preview: int | None = None


def is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Output:
    """Prints tables, field lists, text blocks and lines to stdout in the mode that
    suits it (rich in a terminal, aligned plain text in a pipe).

    ``sections``: the command prints several tables, so a pipe gets each table's title
    as a heading line too (a terminal always shows titles).
    """

    def __init__(self, *, sections: bool = False, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.terminal = is_terminal(self.stream)
        self.sections = sections
        #: where a cell's text is marked in a terminal (a search's matched words: a
        #: function of the cell giving (start, end) spans); a pipe gets plain text
        self.marks: Callable[[str], list[tuple[int, int]]] | None = None
        self._printed = False
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        """rich's console on :attr:`stream`, made (and rich imported: about 50 modules,
        a third of a status command's imports) on first use: a pipe never needs it."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=self.stream, markup=False, highlight=False, emoji=False, soft_wrap=False
            )
        return self._console

    # -- building blocks ----------------------------------------------------------

    def line(self, text: str) -> None:
        """One line; ``text`` is printed literally (escaped, never markup)."""
        self._write(literal(text))

    def table(
        self,
        columns: Sequence[Column],
        rows: Sequence[Sequence[object]],
        *,
        empty: str,
        title: str | None = None,
    ) -> None:
        """A table, or the one line ``empty`` when there are no rows."""
        if not rows:
            if self._printed:
                self._write("")
            self._write(literal(empty))
            return
        cells = [[literal(v) for v in row] for row in rows]
        if not self.terminal:
            self._plain_table(columns, cells, title)
            return
        shown = [
            [_preview(cell, col.preview) for cell, col in zip(row, columns, strict=True)]
            for row in cells
        ]
        widths = self._plan(columns, shown)
        if widths is None:
            self._rich_records(columns, shown, title)
        else:
            self._rich_table(columns, shown, title, widths)

    def fields(self, pairs: Sequence[tuple[str, object]], *, title: str | None = None) -> None:
        """``name: value`` lines (one record in full); values are whole in both modes."""
        items = [(name, literal(value)) for name, value in pairs]
        if not self.terminal:
            self._heading(title)
            for name, value in items:
                self._write(f"{name}: {value}")
            return
        from rich.panel import Panel

        grid = _grid(items)
        self._rich(Panel(grid, title=_text(title), title_align="left", expand=False))

    def block(self, text: str, *, title: str) -> None:
        """A multi-line block (a traceback): newlines kept, other controls escaped."""
        body = literal(text.rstrip(), multiline=True)
        if not self.terminal:
            self._heading(title, always=True)
            for row in body.splitlines():
                self._write(row)
            return
        from rich.panel import Panel
        from rich.text import Text

        self._rich(Panel(Text(body), title=_text(title), title_align="left", expand=False))

    # -- pipe mode ---------------------------------------------------------------

    def _heading(self, title: str | None, always: bool = False) -> None:
        if self._printed:
            self._write("")
        if title and (self.sections or always):
            self._write(literal(title))

    def _plain_table(
        self, columns: Sequence[Column], cells: list[list[str]], title: str | None
    ) -> None:
        self._heading(title)
        # Headers become single words so that `awk` counts the same fields on every line.
        headers = [c.header.replace(" ", "_") for c in columns]
        widths = [
            max(cell_len(h), *(cell_len(row[i]) for row in cells)) for i, h in enumerate(headers)
        ]
        for row in [headers, *cells]:
            parts = [
                _pad(value, width, col.right)
                for value, width, col in zip(row, widths, columns, strict=True)
            ]
            self._write("  ".join(parts).rstrip())

    # -- terminal mode -----------------------------------------------------------

    def _plan(self, columns: Sequence[Column], cells: list[list[str]]) -> list[int] | None:
        """Column widths for the terminal, or None when the table cannot fit.

        Key columns get their full width. The others start at theirs and, when the
        terminal is too narrow, give way: previews (payload, error) first, down to
        MIN_OTHER_WIDTH and then to MIN_PREVIEW_WIDTH, then the rest evenly, none below
        its narrowest readable width (MIN_OTHER_WIDTH, or its longest value if shorter,
        never less than the longest word of its header).
        """
        natural = [
            max(cell_len(col.header), *(cell_len(row[i]) for row in cells))
            for i, col in enumerate(columns)
        ]

        def floor_of(least: int) -> list[int]:
            return [
                n
                if col.key
                else max(
                    max(cell_len(w) for w in col.header.split() or [""]),
                    min(max(cell_len(row[i]) for row in cells), least),
                )
                for i, (col, n) in enumerate(zip(columns, natural, strict=True))
            ]

        floor, low = floor_of(MIN_OTHER_WIDTH), floor_of(MIN_PREVIEW_WIDTH)
        previews = [i for i, c in enumerate(columns) if c.preview is not None]
        others = [i for i, c in enumerate(columns) if not c.key and c.preview is None]
        # Previews may go below the common floor, so that times stay whole for longer.
        last = [low[i] if i in previews else floor[i] for i in range(len(columns))]
        room = self.console.width - _GAP * (len(columns) - 1)
        if sum(last) > room:
            return None
        widths = list(natural)
        for group, least in ((previews, floor), (previews, low), (others, floor)):
            _shrink(widths, least, group, sum(widths) - room)
        return widths

    def _rich_table(
        self,
        columns: Sequence[Column],
        cells: list[list[str]],
        title: str | None,
        widths: list[int],
    ) -> None:
        from rich.table import Table
        from rich.text import Text

        table = Table(
            title=_text(title),
            title_justify="left",
            box=None,
            padding=(0, 1),
            pad_edge=False,
            header_style="bold underline",
        )
        for col, width in zip(columns, widths, strict=True):
            table.add_column(
                Text(col.header),
                justify="right" if col.right else "left",
                # Fixed widths that fit: rich collapses nothing, keys show whole.
                width=width,
                no_wrap=col.key,
                overflow="fold",
            )
        for row in cells:
            table.add_row(*[self._marked(cell) for cell in row])
        self._rich(table)

    def _marked(self, cell: str) -> Text:
        from rich.text import Text

        text = Text(cell)
        for start, end in self.marks(cell) if self.marks is not None else ():
            text.stylize("bold reverse", start, end)
        return text

    def _rich_records(
        self, columns: Sequence[Column], cells: list[list[str]], title: str | None
    ) -> None:
        """Too narrow for a table: each row as a block of ``field value`` lines."""
        from rich.text import Text

        if self._printed:
            self._write("")
        if title:
            self.console.print(Text(literal(title), style="bold"))
        for n, row in enumerate(cells):
            if n:
                self.console.print()
            self.console.print(_grid([(c.header, v) for c, v in zip(columns, row, strict=True)]))
        self._printed = True

    def _rich(self, renderable: object) -> None:
        if self._printed:
            self.console.print()
        self.console.print(renderable)
        self._printed = True

    def _write(self, text: str) -> None:
        click.echo(text, file=self.stream)
        self._printed = True


def _shrink(widths: list[int], floor: list[int], group: list[int], excess: int) -> None:
    """Take ``excess`` columns of width from ``group``, widest first, none below its
    floor (in place)."""
    while excess > 0:
        able = [i for i in group if widths[i] > floor[i]]
        if not able:
            return
        widest = max(able, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1


def cell_len(text: str) -> int:
    """Columns ``text`` takes in a terminal: its length when it is ASCII (every value
    has been through :func:`~conveyor.text.literal`, so no control character is left),
    else rich's measure (wide and combining characters), imported only then."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len as measured

    return measured(text)


def _grid(items: Sequence[tuple[str, str]]) -> Table:
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for name, value in items:
        grid.add_row(Text(name), Text(value))
    return grid


def _text(title: str | None) -> Text | None:
    from rich.text import Text

    return None if title is None else Text(literal(title))


def _preview(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _pad(value: str, width: int, right: bool) -> str:
    fill = " " * (width - cell_len(value))
    return fill + value if right else value + fill
