"""How ``tritonx`` commands print tables: rich tables on a terminal, one plain line per row in a pipe.

Why two renderings: a rich table wraps long cells to fit the terminal, which is what a person wants
to read, but a wrapped pass name (``tritongpu-pipe`` / ``line``) is invisible to ``grep``. When stdout
is not a terminal (a pipe, a file, a CI log) every row is one unwrapped line of aligned columns
without colour or markup, so ``tritonx pipeline | grep tritongpu-pipeline`` finds the pass. Rich's
own terminal detection decides (``FORCE_COLOR``/``TTY_COMPATIBLE`` force the table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table
from rich.text import Text


def console() -> Console:
    """Rich output on the current stdout (made per call: it reads ``COLUMNS`` and a redirected stdout).

    Off a terminal, long lines are not wrapped (``soft_wrap``): a pipe gets each message on one line.
    Errors are plain lines on stderr, so ``--json`` stdout stays parseable.
    """
    con = Console(highlight=False)
    con.soft_wrap = not con.is_terminal
    return con


def plain(cell: str) -> str:
    """A cell as one line of text: rich markup removed, its lines joined with ``"; "``."""
    lines = [line.strip() for line in Text.from_markup(cell).plain.splitlines()]
    return "; ".join(line for line in lines if line)


@dataclass
class Grid:
    """A table as data: a title, column names and rows of cells (cells may hold rich markup and newlines)."""

    columns: Sequence[str]
    rows: list[Sequence[str]] = field(default_factory=list)
    title: str | None = None
    show_header: bool = True
    #: Columns whose long cells fold inside the rich table (instead of squeezing the others).
    fold: Sequence[str] = ()
    #: Columns shown right-aligned.
    right: Sequence[str] = ()
    #: rich styles per column in the terminal table (e.g. ``{"item": "bold"}``).
    styles: dict[str, str] = field(default_factory=dict)
    show_lines: bool = False

    def add_row(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def rich_table(self) -> Table:
        table = Table(title=self.title, show_header=self.show_header, show_lines=self.show_lines)
        for col in self.columns:
            table.add_column(col, overflow="fold" if col in self.fold else "ellipsis",
                             justify="right" if col in self.right else "left", style=self.styles.get(col))
        for row in self.rows:
            table.add_row(*row)
        return table

    def plain_lines(self) -> list[str]:
        """Title, header and one line per row, columns aligned with two spaces, nothing wrapped."""
        body = [[plain(c) for c in row] for row in self.rows]
        table = ([list(self.columns)] if self.show_header else []) + body
        widths = [max((len(r[i]) for r in table if i < len(r)), default=0) for i in range(len(self.columns))]
        lines = [self.title] if self.title else []
        for row in table:
            cells = [c.rjust(w) if col in self.right else c.ljust(w)
                     for c, w, col in zip(row, widths, self.columns, strict=False)]
            lines.append("  ".join(cells).rstrip())
        return lines


def print_grid(grid: Grid, con: Console | None = None) -> None:
    """Print ``grid`` as a rich table on a terminal, else as plain lines (see the module docstring)."""
    con = con or console()
    if con.is_terminal:
        con.print(grid.rich_table())
    else:
        for line in grid.plain_lines():
            con.out(line, highlight=False)
