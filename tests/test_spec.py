"""The games' specs (qwinto_env/spec/): the facts, the layouts, and what derives from them."""

from __future__ import annotations

import numpy as np
import pytest

from qwinto_env import rules
from qwinto_env.spec import SPECS, cards, dice
from qwinto_env.spec.base import PASS, SHEET, Layout, decode_sheet_blocks


def test_a_layout_names_consecutive_pieces_and_nests():
    inner = Layout(a=2, b=3)
    outer = Layout(x=4, inner=inner, y=1)
    assert (outer.x, outer.y, outer.size) == (slice(0, 4), slice(9, 10), 10)
    assert (outer.inner.a, outer.inner.b, outer.inner.start) == (slice(4, 6), slice(6, 9), 4)
    moved = outer.at(100)
    assert (moved.x, moved.inner.b, moved.stop, moved.size) == (slice(100, 104), slice(106, 109),
                                                               110, 10)
    with pytest.raises(ValueError, match="cannot be called 'size'"):
        Layout(size=3)


def test_the_specs_hold_the_documented_facts():
    assert (PASS, dice.NUM_ACTIONS, cards.NUM_ACTIONS) == (27, 37, 88)
    assert (list(dice.ROLLS), dice.KEEP, dice.REROLL) == (list(range(28, 35)), 35, 36)
    assert (cards.SINGLE_FIRST, cards.DOUBLE_FIRST) == (28, 40)
    assert {name: (s.min_players, s.max_players, s.num_actions, s.steps_per_turn)
            for name, s in SPECS.items()} == {"dice": (1, 6, 37, 3), "cards": (1, 4, 88, 2)}


@pytest.mark.parametrize("game, per_player, fixed", [("dice", 32, 25), ("cards", 33, 149)])
def test_observation_sizes_and_their_inverse(game, per_player, fixed):
    spec = SPECS[game]
    for n in spec.player_counts:
        assert spec.observation_size(n) == per_player * n + fixed
        assert spec.players_for_size(per_player * n + fixed) == n
    assert spec.players_for_size(per_player * (spec.max_players + 1) + fixed) is None


@pytest.mark.parametrize("module", [dice, cards])
def test_every_seat_sees_a_permutation_of_its_share_of_the_features(module):
    for n in SPECS[module.SPEC.name].player_counts:
        size = module.observation_size(n)
        for seat, index in enumerate(module.observation_indices(n)):
            assert len(index) == size == len(set(index.tolist()))
            assert index[:SHEET.size].tolist() == list(range(seat * module.SEAT.size,
                                                             seat * module.SEAT.size + SHEET.size))


def test_the_legal_play_tables_cover_the_plays():
    assert cards.SINGLE_PLAYS[cards.HAND_SIZE] == tuple(range(cards.SINGLE_FIRST,
                                                              cards.DOUBLE_FIRST))
    doubles = sorted(a for plays in cards.DOUBLE_PLAYS for a in plays)
    assert doubles == list(range(cards.DOUBLE_FIRST, cards.NUM_ACTIONS))
    for pair, plays in zip(cards.SLOT_PAIRS, cards.DOUBLE_PLAYS):
        assert all(cards.PLAYS[a][0] == pair for a in plays)


def test_sheet_blocks_decode_exactly():
    rng = np.random.default_rng(0)
    cells = rng.integers(0, rules.MAX_VALUE + 1, (5, rules.NUM_CELLS))
    misthrows = rng.integers(0, rules.MAX_MISTHROWS + 1, 5)
    blocks = np.zeros((5, SHEET.size), dtype=np.float32)
    blocks[:, SHEET.cells] = cells / rules.MAX_VALUE
    blocks[:, SHEET.misthrows] = np.arange(rules.MAX_MISTHROWS) < misthrows[:, None]
    got_cells, got_misthrows = decode_sheet_blocks(blocks)
    assert np.array_equal(got_cells, cells) and np.array_equal(got_misthrows, misthrows)


def test_a_bad_player_count_is_refused_by_name():
    with pytest.raises(ValueError, match=r"1\.\.4 for the card game"):
        cards.SPEC.check_num_players(5)
    assert not dice.SPEC.is_player_count(True) and dice.SPEC.check_num_players(np.int64(6)) == 6
