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


def _random_observations(game_name: str, players: int, seed: int, steps: int) -> np.ndarray:
    """Every seat's observation at each step of random batched games (numpy engine)."""
    from qwinto_env.batched import BATCHED_GAMES

    engine = BATCHED_GAMES[game_name](16, players, backend="numpy", seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        obs, masks = engine.observations(), engine.action_masks()
        out.append(obs.reshape(-1, obs.shape[-1]))
        keys = np.where(masks > 0, rng.random(masks.shape), -1.0)
        engine.step(keys.argmax(-1))
    return np.concatenate(out)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("game_name,players", [("dice", 1), ("dice", 2), ("dice", 5),
                                               ("cards", 1), ("cards", 2), ("cards", 4)])
def test_batch_view_matches_single_views(game_name, players, backend):
    """decode_batch (numpy and torch) equals decode / decode_cards row by row, and
    play_announcements equals play_result for every play of a full hand."""
    from qwinto_env.spec import cards
    from qwinto_env.view import decode_batch, play_announcements

    obs = _random_observations(game_name, players, seed=players, steps=120)
    batch = obs
    if backend == "torch":
        torch = pytest.importorskip("torch")
        batch = torch.as_tensor(obs)
    view = decode_batch(batch, game_name)
    fields = {k: np.asarray(getattr(view, k)) for k in
              ("cells", "misthrows", "active", "phase", "value", "colours", "reroll", "hand",
               "tops") if getattr(view, k) is not None}
    announced = [np.asarray(x) for x in play_announcements(view)] if game_name == "cards" \
        else None
    for i, row in enumerate(obs):
        single = decode(row) if game_name == "dice" else decode_cards(row)
        assert (fields["cells"][i] == single.cells).all()
        assert (fields["misthrows"][i] == single.misthrows).all()
        assert fields["active"][i] == single.active and fields["phase"][i] == single.phase
        assert fields["value"][i] == single.value
        if game_name == "dice":
            assert fields["colours"][i] == single.subset
            assert fields["reroll"][i] == single.reroll_available
            continue
        assert fields["colours"][i] == single.colours and not fields["reroll"][i]
        hand = [c for c in fields["hand"][i] if c >= 0]
        assert tuple(hand) == single.hand and tuple(fields["tops"][i]) == single.tops
        if len(hand) == cards.HAND_SIZE:
            for a in range(cards.SINGLE_FIRST, cards.NUM_ACTIONS):
                value, colours = cards.play_result(single.hand, single.tops, a)
                col = a - cards.SINGLE_FIRST
                assert (announced[0][i, col], announced[1][i, col]) == (value, colours)
