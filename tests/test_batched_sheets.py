"""The batched sheets (qwinto_env/batched/sheets.py) against rules.py, write by write."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwinto_env import rules
from qwinto_env.batched import get_backend
from qwinto_env.batched.sheets import PASS, Sheets
from tests.differential import to_np


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@settings(max_examples=40, deadline=None)
@given(moves=st.lists(st.tuples(st.integers(0, 27), st.integers(1, 18)), max_size=60))
def test_sheet_follows_the_rules(backend, moves):
    """Random entries on 3 games x 2 seats (legal ones applied, illegal ones turned into
    passes, as the masks would): allowed values, scores, full rows and the end condition
    agree with rules.py after every entry."""
    B = get_backend(backend)
    sheets = Sheets(B, 3, 2, "score")
    cells = [[[0] * 27 for _ in range(2)] for _ in range(3)]
    misthrows = [[0, 0] for _ in range(3)]
    active = B.asarray([0, 1, 0], B.int64)
    for step, (cell, value) in enumerate(moves):
        actions = np.full((3, 2), PASS)
        for n in range(3):
            for s in range(2):
                c = (cell + 5 * n + 11 * s) % 28  # different cells per seat and game
                allowed = rules.cells_allowed_values(cells[n][s])
                if c < 27 and allowed[c] >> value & 1:
                    actions[n, s] = c
        values = B.asarray([value] * 3, B.int64)
        writes = sheets.legal_writes(values, B.asarray([7, 7, 7], B.int64))
        legal = to_np(writes)
        for n in range(3):
            for s in range(2):
                assert legal[n, s] >> actions[n, s] & 1
        rewards = B.zeros((3, 2), B.float32)
        ended = to_np(sheets.enter(B.asarray(actions, B.int64), values,
                                   sheets.base_game + active, writes))
        sheets.entry_rewards(rewards)
        for n in range(3):
            a = int(to_np(active)[n])
            for s in range(2):
                if actions[n, s] != PASS:
                    cells[n][s][actions[n, s]] = value
                elif s == a:
                    misthrows[n][s] += 1
        allowed_b, scores_b = to_np(sheets.allowed_values()), to_np(sheets.current_scores())
        for n in range(3):
            for s in range(2):
                assert allowed_b[n, s].tolist() == rules.cells_allowed_values(cells[n][s])
                assert scores_b[n, s] == rules.cells_score(cells[n][s], misthrows[n][s])
                assert to_np(sheets.full_rows)[n, s] == rules.cells_full_rows(cells[n][s])
            over = any(rules.cells_full_rows(c) >= 2 for c in cells[n]) or \
                max(misthrows[n]) >= rules.MAX_MISTHROWS
            assert bool(ended[n]) == over
            if over:  # start that game afresh, as the engines do
                sheets.restart(B.rows(B.arange(3) == n))
                cells[n] = [[0] * 27 for _ in range(2)]
                misthrows[n] = [0, 0]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_sheet_scores_count_at_most_four_misthrows_as_the_rules_do(backend):
    from qwinto_env.batched import sheet_scores
    B = get_backend(backend)
    rng = np.random.default_rng(0)
    cells = np.zeros((40, rules.NUM_CELLS), dtype=np.int64)
    cells[:, 0] = rng.integers(1, 10, size=40)
    misthrows = rng.integers(0, 9, size=40)
    got = to_np(sheet_scores(B.asarray(cells, B.int64), B.asarray(misthrows, B.int64)))
    assert (misthrows > rules.MAX_MISTHROWS).any()
    assert got.tolist() == [rules.cells_score(c.tolist(), m) for c, m in zip(cells, misthrows)]
