"""Rendering context tables within token budgets.

A context section looks like this (the layout Microsoft GraphRAG's prompts and users know)::

    -----Entities-----
    id|entity|description|number of relationships
    3|SCROOGE|A miser who ...|12

Cells are written as they are (trimmed), so a report's markdown keeps its lines; ``None`` is an
empty cell and floats are written without trailing zeros. A table is filled row by row until the
next row would exceed the budget: whole rows only, and the first row that does not fit ends the
section (later, smaller rows are not squeezed in, so what is kept is always a prefix of the
ranking). A row may offer a shorter form to use when it does not fit whole. Tokens are counted per line (header line, column line, each row with its newline);
this is what the budget is measured in.

Counting needs the tokenizer, whose loading is most of a cold query's time (0.6 s for
cl100k_base), while most tables fit their budget with room to spare. So when the counter can bound
a text cheaply (``at_most``, e.g. :class:`graphrag_assets.core.tokens.TokenCounter`: a token is at
least one byte), a table is first filled from bounds: a row whose upper bound fits is kept, a row
whose lower bound does not fit is cut, and only when a row's bounds straddle the budget are the
tokens counted. The rows kept are therefore exactly those of counting every line; the table's
``tokens`` is then the upper bound, and ``counted`` says which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphrag_assets.query.model_calls import TokenCounter

SECTION_SEPARATOR = "\n\n"


def format_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}" if value == value else ""
    return str(value).strip()


def format_row(values: Sequence[Any]) -> str:
    return "|".join(format_cell(v) for v in values)


def section_header(name: str) -> str:
    return f"-----{name}-----"


class SizedRow(tuple):
    """A row that knows its size in tokens (its line and newline), so a budget need not count it.

    The long cell's count is stored; the short cells around it (``rest``) are counted on first
    use of ``tokens``, so a table filled from bounds never counts them.
    """

    long_tokens: int
    rest: str  # the line without the long cell, with its newline
    _count: TokenCounter
    _tokens: int | None

    def __new__(cls, cells: Sequence[Any], long_tokens: int, rest: str, count: TokenCounter) -> SizedRow:
        row = super().__new__(cls, cells)
        row.long_tokens, row.rest, row._count, row._tokens = long_tokens, rest, count, None
        return row

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = self._count(self.rest) + self.long_tokens
        return self._tokens


def sized_row(cells: Sequence[Any], long_cell: int, long_tokens: int | None, count: TokenCounter) -> tuple[Any, ...]:
    """``cells`` sized from the stored token count of one long cell (a report's text) plus the other
    cells counted here, so the long text is not tokenized per query; unsized when none is stored.

    The sum of the parts is at most a token or two away from counting the joined line, and the
    same for every row, which a budget of thousands of tokens absorbs.
    """
    if long_tokens is None:
        return tuple(cells)
    rest = [None if index == long_cell else value for index, value in enumerate(cells)]
    return SizedRow(cells, long_tokens, format_row(rest) + "\n", count)


def row_tokens(row: Sequence[Any], count: TokenCounter) -> int:
    """Tokens of a row's line with its newline: stored on a :class:`SizedRow`, counted otherwise."""
    return row.tokens if isinstance(row, SizedRow) else count(format_row(row) + "\n")


def _row_bounds(row: Sequence[Any], at_most: Callable[[str], int]) -> tuple[int, int]:
    """(at least, at most) tokens of a row's line with its newline, without counting."""
    if isinstance(row, SizedRow):
        return row.long_tokens + 1, row.long_tokens + at_most(row.rest)
    return 1, at_most(format_row(row) + "\n")


@dataclass
class BudgetedTable:
    """A rendered table and which of the offered rows it holds (a prefix of them)."""

    name: str
    columns: Sequence[str] = ()
    text: str = ""  # "" when not even one row fitted
    rows_used: int = 0
    tokens: int = 0
    rows_offered: int = 0
    shortened: list[int] = field(default_factory=list)  # rows written in their shorter form
    counted: bool = True  # False: filled from bounds, ``tokens`` is an upper bound
    lines: list[Sequence[Any]] = field(default_factory=list, repr=False)  # rows written, to count them later

    @property
    def cut(self) -> int:
        """How many offered rows the budget left out."""
        return self.rows_offered - self.rows_used

    def exact_tokens(self, count: TokenCounter) -> int:
        """``tokens``, counted now if the table was filled from bounds."""
        if not self.counted:
            head = _head(self.name, self.columns)
            self.tokens = (
                count(head + "\n") + sum(row_tokens(row, count) for row in self.lines) if self.rows_used else 0
            )
            self.counted = True
        return self.tokens


def fill_table(
    name: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    budget: int,
    count: TokenCounter,
    shorter: Sequence[Sequence[Any] | None] | None = None,
    spent: Sequence[BudgetedTable] = (),
) -> BudgetedTable:
    """Render ``rows`` under a ``-----name-----`` header, keeping the longest prefix within ``budget``.

    ``shorter`` optionally gives, per row, a shorter version used when the row itself does not fit
    (a report's summary instead of its full text); the table stops at the first row for which
    neither fits. ``spent`` are tables already written into the same ``budget``.
    """
    at_most = getattr(count, "at_most", None)
    if at_most is not None:
        bounded = _fill_from_bounds(name, columns, rows, budget, at_most, shorter, spent)
        if bounded is not None:
            return bounded
    budget -= sum(t.exact_tokens(count) for t in spent)
    table = BudgetedTable(name=name, rows_offered=len(rows), columns=columns)
    head = _head(name, columns)
    used = count(head + "\n")
    lines = [head]
    for index, row in enumerate(rows):
        line = format_row(row)
        size = row_tokens(row, count)
        if used + size > budget and shorter is not None and shorter[index] is not None:
            line = format_row(shorter[index])
            size = count(line + "\n")
            table.shortened.append(index)
        if used + size > budget:
            if table.shortened and table.shortened[-1] == index:
                table.shortened.pop()
            break
        lines.append(line)
        used += size
        table.rows_used += 1
    if table.rows_used:
        table.text = "\n".join(lines)
        table.tokens = used
    return table


def _fill_from_bounds(
    name: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    budget: int,
    at_most: Callable[[str], int],
    shorter: Sequence[Sequence[Any] | None] | None,
    spent: Sequence[BudgetedTable],
) -> BudgetedTable | None:
    """The table :func:`fill_table` would make, decided from token bounds; None when a row's bounds
    straddle the budget (then only counting can decide)."""
    head = _head(name, columns)
    low_left = budget - sum(t.tokens for t in spent)  # a spent table's tokens are exact or an upper bound
    high_left = budget - sum(t.tokens if t.counted else 0 for t in spent)
    low, high = 1, at_most(head + "\n")
    table = BudgetedTable(name=name, rows_offered=len(rows), columns=columns, counted=False)
    for index, row in enumerate(rows):
        written = row
        row_low, row_high = _row_bounds(row, at_most)
        if low + row_low > high_left and shorter is not None and shorter[index] is not None:
            written = shorter[index]
            row_low, row_high = _row_bounds(written, at_most)
            table.shortened.append(index)
        elif high + row_high > low_left and low + row_low <= high_left:
            return None  # may or may not fit (or need its shorter form): count
        if high + row_high <= low_left:
            table.lines.append(written)
            low, high = low + row_low, high + row_high
            continue
        if low + row_low <= high_left:
            return None
        if table.shortened and table.shortened[-1] == index:
            table.shortened.pop()
        break
    table.rows_used = len(table.lines)
    if table.rows_used:
        table.text = "\n".join([head, *(format_row(row) for row in table.lines)])
        table.tokens = high
    return table


@dataclass
class TableBatches:
    """Rows packed into consecutive groups whose tables each fit a budget."""

    row_indexes: list[list[int]] = field(default_factory=list)  # offered-row positions per batch
    too_large: list[int] = field(default_factory=list)  # rows that do not fit even alone


def pack_batches(
    name: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    budget: int,
    count: TokenCounter,
) -> TableBatches:
    """Group rows, in order, so that each group's table is at most ``budget`` tokens (header included).

    Only the row sizes matter, so a group may be re-ordered before :func:`render_table` without
    changing its size. A row that cannot fit even in an empty table is left out and reported in
    ``too_large``.
    """
    batches = TableBatches()
    head_size = count(_head(name, columns) + "\n")
    current: list[int] = []
    used = head_size
    for index, row in enumerate(rows):
        size = row_tokens(row, count)
        if head_size + size > budget:
            batches.too_large.append(index)
            continue
        if used + size > budget:
            batches.row_indexes.append(current)
            current, used = [], head_size
        current.append(index)
        used += size
    if current:
        batches.row_indexes.append(current)
    return batches


def render_table(name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A table with all its rows (no budget)."""
    return "\n".join([_head(name, columns), *(format_row(r) for r in rows)])


def _head(name: str, columns: Sequence[str]) -> str:
    return f"{section_header(name)}\n{format_row(columns)}"


def join_sections(sections: Sequence[str]) -> str:
    """Non-empty sections separated by a blank line."""
    return SECTION_SEPARATOR.join(s for s in sections if s)
