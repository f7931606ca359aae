"""Text drawing of score sheets, laid out on the sheet's 12-column grid.

Empty fields show as ``__``, pentagon fields in angle brackets ``<..>``, the
crossed-out gap as ``XX``. The compact form (``render_sheet(cells, compact=True)``, 38 columns, so
that two sheets fit side by side in 80) gives each grid column 3 characters, names each
row by its initial and marks a pentagon field by a ``<`` before it.
"""

from __future__ import annotations

from typing import Sequence

from . import rules

_PENTAGONS = {r * rules.NUM_FIELDS + f for r, f in rules.PENTAGON_FIELDS}


def render_sheet(cells: Sequence[int], compact: bool = False) -> list[str]:
    """Three lines, one per row, of one flat 27-cell sheet; ``compact``: 38 columns at
    most (the compact form of the module docstring)."""
    width = 3 if compact else 4
    lines = []
    for r, name in enumerate(rules.ROW_NAMES):
        slots = [" " * width] * rules.NUM_GRID_COLUMNS
        slots[rules.GAP_COLUMNS[r]] = " XX".ljust(width)
        for f, col in enumerate(rules.FIELD_COLUMNS[r]):
            c = r * rules.NUM_FIELDS + f
            text = f"{cells[c]:2d}" if cells[c] else "__"
            if c in _PENTAGONS:
                text = "<" + text + ("" if compact else ">")
            slots[col] = text.rjust(width) if compact else text.center(width)
        lines.append((f"{name[0]} " if compact else f"{name:<7}") + "".join(slots).rstrip())
    return lines


def render_sheets(all_cells: Sequence[Sequence[int]], misthrows: Sequence[int],
                  scores: Sequence[int]) -> str:
    """Every player's sheet with misthrows and current score."""
    out = []
    for seat, (cells, m, s) in enumerate(zip(all_cells, misthrows, scores)):
        boxes = "".join("X" if i < m else "." for i in range(rules.MAX_MISTHROWS))
        out.append(f"player {seat}: score {s:3d}, misthrows [{boxes}]")
        out.extend("  " + line for line in render_sheet(cells))
    return "\n".join(out)
