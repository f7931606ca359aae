"""Rule tests for qwinto_env.rules: layout, writing, scoring, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwinto_env import rules

EXAMPLE_43 = [[7, 8, 9, 10, 11, 12, 13, 14, 15],
              [2, 4, 0, 0, 11, 12, 13, 0, 0],
              [2, 5, 8, 0, 10, 11, 0, 14, 15]]


def empty():
    return np.zeros((3, 9), dtype=int)


# -- layout ---------------------------------------------------------------------

def test_layout_matches_rules_md():
    assert sum(len(c) for c in rules.COLUMN_CELLS) == 27
    sizes = [len(c) for c in rules.COLUMN_CELLS]
    assert [col for col, s in enumerate(sizes) if s == 3] == [2, 3, 7, 8, 9]
    assert [col for col, s in enumerate(sizes) if s == 1] == [0, 11]
    rows_of = {col: sorted({c // 9 for c in cells}) for col, cells in enumerate(rules.COLUMN_CELLS)}
    assert rows_of[1] == [1, 2] and rows_of[4] == [0, 1] and rows_of[5] == [1, 2]
    assert rows_of[6] == [0, 2] and rows_of[10] == [0, 1]
    assert rows_of[0] == [2] and rows_of[11] == [0]
    # one pentagon per 3-field column: col 2 purple, 3 orange, 7 orange, 8 yellow, 9 purple
    pent_rows = [pent // 9 for _, pent in rules.PENTAGON_COLUMNS]
    assert pent_rows == [2, 0, 0, 1, 2]
    for r in range(3):  # the gap column is never a field of that row
        assert rules.GAP_COLUMNS[r] not in rules.FIELD_COLUMNS[r]
        assert list(rules.FIELD_COLUMNS[r]) == sorted(rules.FIELD_COLUMNS[r])


# -- scoring --------------------------------------------------------------------

def test_worked_example_scores_43():
    assert rules.score(EXAMPLE_43, 1) == 43
    parts = rules.score_breakdown(EXAMPLE_43, 1)
    assert parts == {"rows": [15, 5, 7], "pentagons": [8, 0, 0, 13, 0], "misthrows": -5,
                     "total": 43}
    assert rules.full_rows(EXAMPLE_43) == 1
    assert rules.complete_pentagon_columns(EXAMPLE_43) == 2


def test_incomplete_rows_score_one_per_number():
    sheet = empty()
    sheet[0, [0, 4, 8]] = [3, 9, 17]
    sheet[1, 3] = 5
    assert rules.score(sheet) == 4


def test_full_row_scores_rightmost_number():
    sheet = empty()
    sheet[1] = [1, 2, 3, 5, 6, 8, 10, 11, 18]
    assert rules.score(sheet) == 18


def test_pentagon_column_needs_all_three_fields():
    sheet = empty()
    # grid column 8: orange field 5, yellow field 6 (pentagon), purple field 7
    sheet[0, 5], sheet[1, 6] = 4, 9
    assert rules.score(sheet) == 2
    sheet[2, 7] = 12
    assert rules.score(sheet) == 3 + 9


def test_misthrows_cost_five_each_capped_at_four():
    assert [rules.score(empty(), m) for m in range(5)] == [0, -5, -10, -15, -20]


# -- writing --------------------------------------------------------------------

def test_row_must_strictly_increase_with_skips_allowed():
    sheet = empty()
    sheet[0, 2] = 10
    assert rules.can_write(sheet, 0, 0, 9)
    assert not rules.can_write(sheet, 0, 0, 10)   # equal is not increasing
    assert not rules.can_write(sheet, 0, 1, 11)
    assert rules.can_write(sheet, 0, 8, 11)
    assert not rules.can_write(sheet, 0, 3, 10)
    sheet[0, 8] = 12
    assert rules.can_write(sheet, 0, 5, 11)       # fill a skipped field later
    assert not rules.can_write(sheet, 0, 5, 12)


def test_gap_is_ignored_within_row():
    sheet = empty()
    sheet[0, 2] = 5   # orange field 2 at grid column 4, just left of the gap (column 5)
    assert rules.can_write(sheet, 0, 3, 6)  # field 3 at grid column 6, right of the gap


def test_written_field_never_changes():
    sheet = empty()
    sheet[2, 0] = 3
    assert not rules.can_write(sheet, 2, 0, 3)
    assert not rules.can_write(sheet, 2, 0, 2)


@pytest.mark.parametrize("col", [c for c in range(12) if len(rules.COLUMN_CELLS[c]) >= 2])
def test_no_number_twice_in_two_and_three_field_columns(col):
    first, *others = rules.COLUMN_CELLS[col]
    sheet = empty()
    sheet[first // 9, first % 9] = 7
    for cell in others:
        assert not rules.can_write(sheet, cell // 9, cell % 9, 7)
        assert rules.can_write(sheet, cell // 9, cell % 9, 8)  # its own row is still empty


def test_single_field_columns_have_no_column_constraint():
    sheet = empty()
    sheet[0, 0] = 1      # orange, grid column 2
    sheet[1, 0] = 1      # yellow, grid column 1
    assert rules.can_write(sheet, 2, 0, 1)  # purple field 0 is alone in grid column 0


def test_legal_cells_restricts_rows():
    sheet = empty()
    mask = rules.legal_cells(sheet, 5, rows=[1])
    assert mask[1].all() and not mask[0].any() and not mask[2].any()


def test_check_sheet_names_violations():
    rules.check_sheet(EXAMPLE_43)
    bad = empty()
    bad[0, 0], bad[0, 1] = 5, 5
    with pytest.raises(ValueError, match="orange row is not strictly increasing"):
        rules.check_sheet(bad)
    bad = empty()
    bad[0, 2], bad[1, 3] = 4, 4  # both in grid column 4
    with pytest.raises(ValueError, match="grid column 4 holds a number twice"):
        rules.check_sheet(bad)


# -- bad input ------------------------------------------------------------------

@pytest.mark.parametrize("sheet, message", [
    (np.zeros((3, 8)), "shape"),
    (np.zeros(27), "shape"),
    ([[0] * 9, [0] * 9], "shape"),
    (np.full((3, 9), 19), "outside 0..18"),
    (np.full((3, 9), -1), "outside 0..18"),
    (np.full((3, 9), 1.5), "integers"),
    (np.full((3, 9), "a"), "integers"),
])
def test_bad_sheets_raise(sheet, message):
    with pytest.raises(ValueError, match=message):
        rules.score(sheet)
    with pytest.raises(ValueError, match=message):
        rules.can_write(sheet, 0, 0, 1)


@pytest.mark.parametrize("row, field, value, message", [
    (3, 0, 1, "row must be in 0..2"), (-1, 0, 1, "row"), (0, 9, 1, "field must be in 0..8"),
    (0, 0, 0, "value must be in 1..18"), (0, 0, 19, "value"), (0, 0, 2.0, "integer"),
    (True, 0, 1, "row must be an integer"),
])
def test_bad_can_write_arguments_raise(row, field, value, message):
    with pytest.raises(ValueError, match=message):
        rules.can_write(empty(), row, field, value)


@pytest.mark.parametrize("misthrows", [-1, 5, 1.0])
def test_bad_misthrows_raise(misthrows):
    with pytest.raises(ValueError, match="misthrows"):
        rules.score(empty(), misthrows)


# -- properties over random legal sheets -----------------------------------------

def reference_can_write(cells, cell, value):
    """Writing rules straight from RULES.md, by brute force over the grid."""
    if cells[cell]:
        return False
    r, f = divmod(cell, 9)
    row = cells[r * 9:(r + 1) * 9]
    if any(row[g] and row[g] >= value for g in range(f)):
        return False
    if any(row[g] and row[g] <= value for g in range(f + 1, 9)):
        return False
    col = rules.FIELD_COLUMNS[r][f]
    for r2 in range(3):
        for f2 in range(9):
            if (r2, f2) != (r, f) and rules.FIELD_COLUMNS[r2][f2] == col and cells[r2 * 9 + f2] == value:
                return False
    return True


def reference_score(cells, misthrows):
    total = 0
    for r in range(3):
        row = cells[r * 9:(r + 1) * 9]
        total += row[8] if all(row) else sum(v > 0 for v in row)
    pentagons = {rules.FIELD_COLUMNS[r][f]: (r, f) for r, f in rules.PENTAGON_FIELDS}
    for col, (pr, pf) in pentagons.items():
        members = [r * 9 + f for r in range(3) for f in range(9) if rules.FIELD_COLUMNS[r][f] == col]
        if len(members) == 3 and all(cells[c] for c in members):
            total += cells[pr * 9 + pf]
    return total - 5 * misthrows


@st.composite
def random_sheets(draw):
    """A sheet built by a random sequence of legal writes, with its allowed masks kept
    incrementally, as the engines keep them."""
    cells = [0] * 27
    allowed = rules.cells_allowed_values(cells)
    for _ in range(draw(st.integers(0, 40))):
        cell = draw(st.integers(0, 26))
        value = draw(st.integers(1, 18))
        if allowed[cell] >> value & 1:
            cells[cell] = value
            rules.allowed_after_write(allowed, cell, value)
    return cells, allowed


@settings(max_examples=300, deadline=None)
@given(random_sheets(), st.integers(0, 4))
def test_allowed_masks_match_the_written_rules(sheet, misthrows):
    cells, incremental = sheet
    assert incremental == rules.cells_allowed_values(cells)
    assert rules.cells_violations(cells) == []
    grid = np.array(cells).reshape(3, 9)
    for cell in range(27):
        for value in range(1, 19):
            expected = reference_can_write(cells, cell, value)
            assert bool(incremental[cell] >> value & 1) == expected
            assert rules.can_write(grid, cell // 9, cell % 9, value) == expected
    assert rules.score(grid, misthrows) == reference_score(cells, misthrows)
    assert rules.score_breakdown(grid, misthrows)["total"] == rules.score(grid, misthrows)
