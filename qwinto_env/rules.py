"""The Qwinto score sheet: layout tables, legality and scoring (the rules, in code).

This module is the single source of truth for writing and scoring; both games
(dice and cards), every environment, every bot and every test use it. It is pure:
no state, no randomness.

Two layers:

* The **checked API** takes a sheet as a 3x9 integer array-like (rows orange,
  yellow, purple; fields 0..8 left to right, the gap skipped; ``0`` = empty) and
  raises :class:`ValueError` with a precise message on malformed input:
  :func:`score`, :func:`score_breakdown`, :func:`can_write`, :func:`legal_cells`,
  :func:`full_rows`, :func:`complete_pentagon_columns`, :func:`check_sheet`.
* The **fast layer** (``cells_*`` functions) works on a flat sequence of 27 ints
  (cell ``r * 9 + f``) and trusts its input. Engines call it on their hot path.

The sheet (``P`` = pentagon field, ``X`` = crossed-out gap)::

    grid column:   0  1  2  3  4  5  6  7  8  9 10 11
    orange         .  .  o  P  o  X  o  P  o  o  o  o
    yellow         .  o  o  o  o  o  X  o  P  o  o  .
    purple         o  o  P  o  X  o  o  o  o  P  .  .

Writing: values 1..18; a row strictly increases left to right (fields may be
skipped and filled later); a grid column never holds a number twice.

Scoring: a complete row scores its rightmost number, an incomplete row 1 per
number; each complete 3-field column scores the number in its pentagon; each
misthrow costs 5 (at most 4 count).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

ROW_NAMES: tuple[str, ...] = ("orange", "yellow", "purple")
NUM_ROWS = 3
NUM_FIELDS = 9
NUM_CELLS = NUM_ROWS * NUM_FIELDS
NUM_GRID_COLUMNS = 12
MIN_VALUE = 1
MAX_VALUE = 18
MAX_MISTHROWS = 4
MISTHROW_PENALTY = 5
FULL_ROWS_TO_END = 2

#: Grid column of each field, per row.
FIELD_COLUMNS: tuple[tuple[int, ...], ...] = (
    (2, 3, 4, 6, 7, 8, 9, 10, 11),
    (1, 2, 3, 4, 5, 7, 8, 9, 10),
    (0, 1, 2, 3, 5, 6, 7, 8, 9),
)
#: Grid column of the crossed-out gap, per row.
GAP_COLUMNS: tuple[int, ...] = (5, 6, 4)
#: Pentagon fields as (row, field).
PENTAGON_FIELDS: tuple[tuple[int, int], ...] = ((0, 1), (0, 4), (1, 6), (2, 2), (2, 8))

#: Cell index ``r * 9 + f`` of every field, per grid column.
COLUMN_CELLS: tuple[tuple[int, ...], ...] = tuple(
    tuple(r * NUM_FIELDS + f for r in range(NUM_ROWS) for f in range(NUM_FIELDS)
          if FIELD_COLUMNS[r][f] == col)
    for col in range(NUM_GRID_COLUMNS)
)
#: Grid column of each cell.
CELL_COLUMN: tuple[int, ...] = tuple(
    FIELD_COLUMNS[c // NUM_FIELDS][c % NUM_FIELDS] for c in range(NUM_CELLS)
)
#: The other cells sharing a grid column with each cell (0, 1 or 2 of them).
CELL_PEERS: tuple[tuple[int, ...], ...] = tuple(
    tuple(p for p in COLUMN_CELLS[CELL_COLUMN[c]] if p != c) for c in range(NUM_CELLS)
)
_PENTAGON_CELL_SET = {r * NUM_FIELDS + f for r, f in PENTAGON_FIELDS}
#: The five 3-field columns as (cells of the column, the pentagon cell scored).
PENTAGON_COLUMNS: tuple[tuple[tuple[int, ...], int], ...] = tuple(
    (cells, next(c for c in cells if c in _PENTAGON_CELL_SET))
    for cells in COLUMN_CELLS if len(cells) == 3
)
#: :data:`CELL_PEERS` for array code, ``(NUM_CELLS, 2)``: a cell with fewer than two peers
#: names ``NUM_CELLS``, an empty padding cell the array code appends to a sheet.
CELL_PEER_ARRAY = np.full((NUM_CELLS, 2), NUM_CELLS, dtype=np.int64)
for _cell, _peers in enumerate(CELL_PEERS):
    CELL_PEER_ARRAY[_cell, :len(_peers)] = _peers
CELL_PEER_ARRAY.flags.writeable = False
#: The index into :data:`PENTAGON_COLUMNS` of each cell's column, -1 where it has none.
CELL_PENTAGON_COLUMN: tuple[int, ...] = tuple(
    next((j for j, (cells, _) in enumerate(PENTAGON_COLUMNS) if c in cells), -1)
    for c in range(NUM_CELLS))
#: Cells left and right of each cell within its row.
CELL_LEFT: tuple[tuple[int, ...], ...] = tuple(
    tuple(range(c - c % NUM_FIELDS, c)) for c in range(NUM_CELLS))
CELL_RIGHT: tuple[tuple[int, ...], ...] = tuple(
    tuple(range(c + 1, c - c % NUM_FIELDS + NUM_FIELDS)) for c in range(NUM_CELLS))
#: Bit ``v`` set for every value 1..18.
ALL_VALUES_BITS = ((1 << (MAX_VALUE + 1)) - 1) & ~1


# ---------------------------------------------------------------------------
# Fast layer: flat 27-cell sequences, no validation.
# ---------------------------------------------------------------------------

def cells_allowed_values(cells: Sequence[int]) -> list[int]:
    """For each of the 27 cells, a bitmask of the values that may be written there.

    Bit ``v`` (1..18) is set when writing ``v`` into that cell is legal; a written
    cell has mask 0. Callers test a value with ``(mask >> v) & 1``.
    """
    allowed = [0] * NUM_CELLS
    for r in range(NUM_ROWS):
        base = r * NUM_FIELDS
        # hi[f]: smallest number written right of f (19 if none)
        hi = [MAX_VALUE + 1] * NUM_FIELDS
        smallest = MAX_VALUE + 1
        for f in range(NUM_FIELDS - 1, -1, -1):
            hi[f] = smallest
            v = cells[base + f]
            if v:
                smallest = v
        largest = 0  # largest number written left of f
        for f in range(NUM_FIELDS):
            c = base + f
            v = cells[c]
            if v:
                largest = v
                continue
            bits = ((1 << hi[f]) - 1) & ~((1 << (largest + 1)) - 1)
            for p in CELL_PEERS[c]:
                bits &= ~(1 << cells[p])
            allowed[c] = bits & ALL_VALUES_BITS
    return allowed


def allowed_after_write(allowed: list[int], cell: int, value: int) -> None:
    """Update ``allowed`` (from :func:`cells_allowed_values`) in place for writing
    ``value`` into ``cell``.

    Exact, because the allowed set of a cell is the intersection of one constraint per
    written number: smaller to its left, larger to its right, absent from its column.
    """
    allowed[cell] = 0
    below = (1 << value) - 1            # values < value
    above = ~((1 << (value + 1)) - 1)   # values > value
    for c in CELL_LEFT[cell]:
        allowed[c] &= below
    for c in CELL_RIGHT[cell]:
        allowed[c] &= above
    for c in CELL_PEERS[cell]:
        allowed[c] &= ~(1 << value)


def cells_full_rows(cells: Sequence[int]) -> int:
    """Number of complete rows."""
    return sum(all(cells[r * NUM_FIELDS:(r + 1) * NUM_FIELDS]) for r in range(NUM_ROWS))


def cells_pentagon_columns(cells: Sequence[int]) -> int:
    """Number of complete 3-field columns (each scores its pentagon number)."""
    return sum(all(cells[c] for c in col) for col, _ in PENTAGON_COLUMNS)


def cells_score_breakdown(cells: Sequence[int], misthrows: int) -> dict[str, Any]:
    """Score items of a flat sheet; see :func:`score_breakdown`."""
    rows = []
    for r in range(NUM_ROWS):
        row = cells[r * NUM_FIELDS:(r + 1) * NUM_FIELDS]
        rows.append(int(row[-1]) if all(row) else sum(1 for v in row if v))
    pentagons = [int(cells[pent]) if all(cells[c] for c in col) else 0
                 for col, pent in PENTAGON_COLUMNS]
    penalty = -MISTHROW_PENALTY * min(int(misthrows), MAX_MISTHROWS)
    return {"rows": rows, "pentagons": pentagons, "misthrows": penalty,
            "total": sum(rows) + sum(pentagons) + penalty}


def cells_score(cells: Sequence[int], misthrows: int) -> int:
    """Score of a flat sheet with ``misthrows`` misthrows."""
    total = 0
    for r in range(NUM_ROWS):
        row = cells[r * NUM_FIELDS:(r + 1) * NUM_FIELDS]
        total += row[-1] if all(row) else sum(1 for v in row if v)
    for col, pent in PENTAGON_COLUMNS:
        if cells[col[0]] and cells[col[1]] and cells[col[2]]:
            total += cells[pent]
    return int(total) - MISTHROW_PENALTY * min(int(misthrows), MAX_MISTHROWS)


def cells_violations(cells: Sequence[int]) -> list[str]:
    """Every writing rule a flat sheet breaks, in words (empty when valid)."""
    problems = []
    for r in range(NUM_ROWS):
        written = [(f, cells[r * NUM_FIELDS + f]) for f in range(NUM_FIELDS)
                   if cells[r * NUM_FIELDS + f]]
        for (f1, v1), (f2, v2) in zip(written, written[1:]):
            if v2 <= v1:
                problems.append(f"{ROW_NAMES[r]} row is not strictly increasing: "
                                f"field {f1} holds {v1}, field {f2} holds {v2}")
    for col, members in enumerate(COLUMN_CELLS):
        values = [cells[c] for c in members if cells[c]]
        if len(values) != len(set(values)):
            problems.append(f"grid column {col} holds a number twice: {values}")
    return problems


# ---------------------------------------------------------------------------
# Checked API: 3x9 sheets, clear errors.
# ---------------------------------------------------------------------------

def _as_cells(sheet: Any) -> list[int]:
    """Validate a 3x9 sheet (values 0..18) and flatten it to 27 Python ints."""
    try:
        arr = np.asarray(sheet)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"sheet must be a 3x9 array of integers, got {sheet!r}") from exc
    if arr.shape != (NUM_ROWS, NUM_FIELDS):
        raise ValueError(f"sheet must have shape (3, 9) (rows orange, yellow, purple; "
                         f"9 fields each), got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError("sheet must hold integers, got non-integral numbers")
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"sheet must hold integers, got dtype {arr.dtype}")
    bad = (arr < 0) | (arr > MAX_VALUE)
    if bad.any():
        r, f = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"sheet value {arr[r, f]} in {ROW_NAMES[r]} field {f} is outside "
                         f"0..{MAX_VALUE} (0 means empty)")
    return [int(v) for v in arr.reshape(-1)]


def _check_int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {value}")
    return int(value)


def check_sheet(sheet: Any) -> None:
    """Raise ``ValueError`` unless ``sheet`` is a well-formed sheet obeying the writing rules."""
    problems = cells_violations(_as_cells(sheet))
    if problems:
        raise ValueError("sheet breaks the writing rules: " + "; ".join(problems))


def can_write(sheet: Any, row: int, field: int, value: int) -> bool:
    """Whether ``value`` may be written into ``field`` of ``row`` on ``sheet``.

    ``row`` is 0 (orange), 1 (yellow) or 2 (purple); ``field`` 0..8; ``value`` 1..18.
    False when the field is already written, when the row would stop being strictly
    increasing, or when the value already stands in the field's grid column.
    """
    cells = _as_cells(sheet)
    row = _check_int("row", row, 0, NUM_ROWS - 1)
    field = _check_int("field", field, 0, NUM_FIELDS - 1)
    value = _check_int("value", value, MIN_VALUE, MAX_VALUE)
    return bool((cells_allowed_values(cells)[row * NUM_FIELDS + field] >> value) & 1)


def legal_cells(sheet: Any, value: int, rows: Sequence[int] = (0, 1, 2)) -> np.ndarray:
    """Boolean mask of shape (3, 9): where ``value`` may be written, within ``rows``."""
    cells = _as_cells(sheet)
    value = _check_int("value", value, MIN_VALUE, MAX_VALUE)
    rows = [_check_int("row", r, 0, NUM_ROWS - 1) for r in rows]
    allowed = cells_allowed_values(cells)
    mask = np.zeros((NUM_ROWS, NUM_FIELDS), dtype=bool)
    for r in rows:
        for f in range(NUM_FIELDS):
            mask[r, f] = (allowed[r * NUM_FIELDS + f] >> value) & 1
    return mask


def full_rows(sheet: Any) -> int:
    """Number of complete rows (the game ends once a player has two)."""
    return cells_full_rows(_as_cells(sheet))


def complete_pentagon_columns(sheet: Any) -> int:
    """Number of complete 3-field columns (each scores its pentagon number)."""
    return cells_pentagon_columns(_as_cells(sheet))


def _check_misthrows(misthrows: Any) -> int:
    return _check_int("misthrows", misthrows, 0, MAX_MISTHROWS)


def score(sheet: Any, misthrows: int = 0) -> int:
    """Final score of a sheet with ``misthrows`` misthrows (0..4).

    >>> sheet = [[7, 8, 9, 10, 11, 12, 13, 14, 15],
    ...          [2, 4, 0, 0, 11, 12, 13, 0, 0],
    ...          [2, 5, 8, 0, 10, 11, 0, 14, 15]]
    >>> score(sheet, misthrows=1)
    43
    """
    return cells_score(_as_cells(sheet), _check_misthrows(misthrows))


def score_breakdown(sheet: Any, misthrows: int = 0) -> dict[str, Any]:
    """Score items: ``rows`` (3 ints), ``pentagons`` (5 ints, one per 3-field column
    in grid-column order 2, 3, 7, 8, 9), ``misthrows`` (the penalty, <= 0), ``total``."""
    return cells_score_breakdown(_as_cells(sheet), _check_misthrows(misthrows))
