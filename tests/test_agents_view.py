"""qwinto_env.view: the decoded observation equals the engine's own state."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwinto_env.cards import CardGame
from qwinto_env.dice import SUBSET_ROWS, DiceGame
from qwinto_env.view import ObservationLayoutError, decode, decode_cards, decode_sheets


def seat_order(seat, n):
    return [(seat + k) % n for k in range(n)]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), players=st.integers(1, 6))
def test_dice_view_matches_engine(seed, players):
    game = DiceGame(num_players=players, seed=seed)
    rng = random.Random(seed)
    while True:
        feats = game.features()
        batch = np.stack([feats[game.observation_index(s)] for s in range(players)])
        batch_view = decode(batch)
        for seat in range(players):
            view = decode(batch[seat])
            order = seat_order(seat, players)
            assert view.num_players == players
            assert (view.cells == np.array([game.cells[o] for o in order])).all()
            assert view.sheets.shape == (players, 3, 9)
            assert list(view.misthrows) == [game.misthrows[o] for o in order]
            assert view.active == (game.active - seat) % players
            assert view.phase == game.phase
            assert view.subset == game.subset and view.value == game.value
            assert view.rows == SUBSET_ROWS[game.subset]
            assert view.reroll_available == game.reroll_left
            cells, misthrows = decode_sheets(batch[seat])
            assert (cells == view.cells).all() and (misthrows == view.misthrows).all()
            # the batched decode agrees with the single one
            assert (batch_view.cells[seat] == view.cells).all()
            assert batch_view.phase[seat] == view.phase
            assert batch_view.value[seat] == view.value
            assert batch_view.active[seat] == view.active
            assert batch_view.subset[seat] == view.subset
            assert batch_view.reroll_available[seat] == view.reroll_available
        if game.done:
            assert view.phase_name == "over"
            break
        game.step([rng.choice(game.legal_actions(s)) for s in range(players)])


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), players=st.integers(1, 4))
def test_cards_view_matches_engine(seed, players):
    game = CardGame(num_players=players, seed=seed)
    rng = random.Random(seed)
    while True:
        feats = game.features()
        for seat in range(players):
            view = decode_cards(feats[game.observation_index(seat)])
            order = seat_order(seat, players)
            assert (view.cells == np.array([game.cells[o] for o in order])).all()
            assert list(view.misthrows) == [game.misthrows[o] for o in order]
            assert list(view.hand_sizes) == [len(game.hands[o]) for o in order]
            cells, misthrows = decode_sheets(feats[game.observation_index(seat)], "cards")
            assert (cells == view.cells).all() and (misthrows == view.misthrows).all()
            assert view.hand == tuple(game.hands[seat])
            assert view.tops == tuple(game.tops())
            assert view.pile_size == len(game.draw_pile())
            assert sorted(np.flatnonzero(view.covered)) == game.covered_cards()
            assert view.active == (game.active - seat) % players
            assert view.phase == game.phase
            assert list(np.flatnonzero(view.played)) == sorted({t for _, t in game.played})
            if game.played:
                assert view.value == game.value and view.colours == game.colours
                assert view.counting_stack == game.played[-1][1]
            else:
                assert view.value == 0 and view.counting_stack == -1
        if game.done:
            break
        game.step([rng.choice(game.legal_actions(s)) for s in range(players)])


def test_bad_layouts():
    with pytest.raises(ObservationLayoutError, match="not a dice-game observation"):
        decode(np.zeros(90))
    with pytest.raises(ObservationLayoutError, match="1-D"):
        decode(np.zeros((2, 2, 89)))
    with pytest.raises(ObservationLayoutError, match="not a card-game observation"):
        decode_cards(np.zeros(89))
    with pytest.raises(ValueError, match="unknown game 'chess'"):
        decode_sheets(np.zeros(89), "chess")
    assert isinstance(ObservationLayoutError("x"), ValueError)
