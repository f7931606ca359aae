"""``set_positions`` of the batched engines: a copied position plays on exactly as the
original (what search bots rely on), and a position no running game has is refused.

Property test: many batches of random games, stopped after random numbers of steps, are
copied into fresh engines through ``set_positions``; observations, masks and every derived
sheet array must match, and both engines, given the same actions and the same chance,
must give the same observations, rewards, endings and scores for the rest of the games.
(The batched engines equal the ParallelEnv step for step: tests/test_batched_*.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

from qwinto_env.batched import BatchedCardGame, BatchedDiceGame, uniform_legal
from qwinto_env.batched.cards import ENTRY as CARD_ENTRY
from qwinto_env.batched.cards import PLAY
from qwinto_env.spec.dice import CHOOSE, ENTRY, REROLL_DECISION
from qwinto_env.view import decode_batch
from tests.differential import to_np

BACKENDS = ["numpy", "torch"]
N = 48
DERIVED = ("cells", "legal_cells", "row_count", "full_rows", "misthrows", "scores")


def advance(games, steps: int, bits: int) -> None:
    for _ in range(steps):
        games.step(uniform_legal(games.backend, games.legal_bits(), games.gen, bits),
                   validate=False)


def pile_of(games) -> np.ndarray:
    """Each game's draw pile in draw order, -1 after its last card."""
    pile, pos, end = map(to_np, (games.pile, games.pile_pos, games.pile_end))
    out = np.full(pile.shape, -1)
    for n in range(len(pile)):
        out[n, :end[n] - pos[n]] = pile[n, pos[n]:end[n]]
    return out


def copy_position(src):
    """A fresh engine of src's kind at src's positions (its generator in src's state)."""
    kind = type(src)
    dst = kind(src.num_games, src.num_players, backend=src.backend.name, seed=12345,
               reward="score")
    sheet = src.sheet_state
    cells, misthrows = to_np(sheet.cells)[:, :, :27], to_np(sheet.misthrows)
    if kind is BatchedDiceGame:
        dst.set_positions(cells, misthrows, to_np(src.active), src.phase, to_np(src.subset),
                          to_np(src.value))
    else:
        hands = to_np(src.hands)
        dst.set_positions(cells, misthrows, to_np(src.active), src.phase,
                          np.where(hands == 32, -1, hands), to_np(src.tops),
                          to_np(src.covered), pile_of(src), to_np(src.value),
                          to_np(src.colours), to_np(src.played), to_np(src.counting))
    if src.backend.name == "numpy":
        dst.gen.bit_generator.state = src.gen.bit_generator.state
    else:
        dst.gen.set_state(src.gen.get_state())
    return dst


def assert_same(a, b) -> None:
    assert a.phase == b.phase
    np.testing.assert_array_equal(to_np(a.observations()), to_np(b.observations()))
    np.testing.assert_array_equal(to_np(a.action_masks()), to_np(b.action_masks()))
    for name in DERIVED:  # not the scratch column 27 of cells, where passes "write"
        np.testing.assert_array_equal(to_np(getattr(a.sheet_state, name))[..., :27],
                                      to_np(getattr(b.sheet_state, name))[..., :27],
                                      err_msg=name)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind,bits", [(BatchedDiceGame, 37), (BatchedCardGame, 88)])
def test_copied_positions_play_on_identically(kind, bits, backend):
    rng = np.random.default_rng(7)
    for trial in range(12):
        players = int(rng.integers(2, 5))
        src = kind(N, players, backend=backend, seed=trial, reward="score")
        advance(src, int(rng.integers(0, 150)), bits)
        dst = copy_position(src)
        assert_same(src, dst)
        ended, pick = 0, src.backend.generator(trial)  # not the engines' generators
        for _ in range(60):
            actions = uniform_legal(src.backend, src.legal_bits(), pick, bits)
            chance = None
            if kind is BatchedDiceGame and src.phase != ENTRY:
                chance = rng.integers(1, 7, size=(N, 3))
            out_a = src.step(actions, chance)
            out_b = dst.step(actions, chance)
            np.testing.assert_array_equal(to_np(out_a.rewards), to_np(out_b.rewards))
            np.testing.assert_array_equal(to_np(out_a.terminated), to_np(out_b.terminated))
            np.testing.assert_array_equal(to_np(out_a.scores_at_end),
                                          to_np(out_b.scores_at_end))
            ended += int(to_np(out_a.terminated).sum())
            assert_same(src, dst)
        assert ended > 0 or trial > 0  # the first trial plays some games to their end


@pytest.mark.parametrize("phase", [CHOOSE, REROLL_DECISION, ENTRY])
def test_a_position_read_from_an_observation_shows_that_observation(phase):
    """Seats relative to the observer, as a search bot loads them: seat 0's observation of
    the loaded engine is the observation it was read from, for every seat's view."""
    src = BatchedDiceGame(N, 3, seed=3)
    while not (src.phase == phase and int(to_np(src.turn).min()) > 4):
        advance(src, 1, 37)
    for seat in range(3):
        obs = to_np(src.observations())[:, seat]
        view = decode_batch(obs)
        dst = BatchedDiceGame(N, 3)
        dst.set_positions(view.cells, view.misthrows, view.active, phase, view.colours,
                          view.value)
        np.testing.assert_array_equal(to_np(dst.observations())[:, 0], obs)
        np.testing.assert_array_equal(to_np(dst.action_masks())[:, 0],
                                      to_np(src.action_masks())[:, seat])


def dice_position(n: int = 2):
    cells = np.zeros((n, 2, 27), dtype=np.int64)
    cells[:, 0, :3] = [3, 5, 9]
    return cells, np.zeros((n, 2), dtype=np.int64)


@pytest.mark.parametrize("change,message", [
    (lambda a: a["cells"].__setitem__((1, 0, 3), 4), "game 1 seat 0.*orange row is not "
                                                     "strictly increasing"),
    (lambda a: a["cells"].__setitem__((0, 1, [0, 10]), 3),
     "game 0 seat 1.*holds a number twice"),
    (lambda a: a["cells"].__setitem__((0, 1, 0), 19), "outside 0..18"),
    (lambda a: a["misthrows"].__setitem__((1, 1), 4), "misthrows must be in 0..3"),
    (lambda a: a.__setitem__("active", [0, 2]), "active must be seats in 0..1"),
    (lambda a: a.__setitem__("phase", 3), "phase must be CHOOSE, REROLL_DECISION or ENTRY"),
    (lambda a: a.__setitem__("value", [5, 0]), "subset and value must be 0 before the roll"),
    (lambda a: a.update(phase=ENTRY, subset=[1, 3], value=[7, 5]), "a sum the rolled dice"),
    (lambda a: a.update(phase=ENTRY, subset=[0, 3], value=[7, 5]), "subset must be rolled"),
    (lambda a: a["cells"].__setitem__((0, 0, slice(0, 18)), np.arange(1, 19)),
     "2 complete rows end the game"),
    (lambda a: a.__setitem__("active", [0.7, 1.2]), "active must hold integers, got dtype "
                                                    "float64"),
    (lambda a: a.update(phase=ENTRY, subset=2.5, value=4), "subset must hold integers"),
    (lambda a: a.update(phase=ENTRY, subset=2, value=4.9), "value must hold integers"),
    (lambda a: a.__setitem__("active", "a"), "active must hold integers"),
    (lambda a: a.__setitem__("active", [0, 1, 0]), r"active must have shape \(2,\), got "
                                                   r"\(3,\)"),
])
def test_bad_dice_positions_raise_and_change_nothing(change, message):
    games = BatchedDiceGame(2, 2, seed=0)
    advance(games, 7, 37)
    before = to_np(games.observations()).copy()
    cells, misthrows = dice_position()
    args = {"cells": cells, "misthrows": misthrows, "active": [0, 1], "phase": CHOOSE,
            "subset": 0, "value": 0}
    change(args)
    with pytest.raises(ValueError, match=message):
        games.set_positions(**args)
    np.testing.assert_array_equal(to_np(games.observations()), before)


def card_position():
    """A legal two-player position at the play (one game): every card placed once."""
    deck = np.arange(32)
    return {"cells": np.zeros((1, 2, 27), dtype=np.int64),
            "misthrows": np.zeros((1, 2), dtype=np.int64), "active": [0], "phase": PLAY,
            "hands": deck[4:10].reshape(1, 2, 3), "tops": deck[None, :4],
            "covered": np.zeros((1, 32), dtype=bool), "pile": deck[None, 10:]}


#: The announcement of a double play on stacks 0 and 1 (value 5, orange): an entry.
ENTRY_PLAY = {"phase": CARD_ENTRY, "value": 5, "colours": 1, "played": [[1, 1, 0, 0]],
              "counting": 1}


@pytest.mark.parametrize("change,message", [
    (lambda a: a["hands"].__setitem__((0, 1, 2), 4), "exactly one of the hands"),
    (lambda a: a["covered"].__setitem__((0, 31), True), "exactly one of the hands"),
    (lambda a: a.__setitem__("pile", np.r_[-1, np.arange(10, 32)][None]),
     "pile must list its cards first"),
    (lambda a: a.__setitem__("phase", CARD_ENTRY), "an entry needs the play's announcement"),
    (lambda a: a.update(ENTRY_PLAY, value=-7), r"announcement: value must be in -6\.\.18"),
    (lambda a: a.update(ENTRY_PLAY, colours=8), "announcement: colours must be"),
    (lambda a: a.update(ENTRY_PLAY, played=[[1, 1, 1, 0]]),
     r"announcement: played must mark one stack or two neighbouring ones, got \[True, True, "
     r"True, False\] in game 0"),
    (lambda a: a.update(ENTRY_PLAY, played=[[1, 0, 0, 1]]), "played must mark one stack"),
    (lambda a: a.update(ENTRY_PLAY, counting=3), r"announcement: counting must be a played "
                                                 r"stack, got \[3\]"),
    (lambda a: a.__setitem__("phase", 2), "phase must be PLAY or ENTRY"),
    (lambda a: a.__setitem__("tops", np.array([[0, 1, 2, 40]])), "card ids must be in"),
    (lambda a: a.update(hands=np.array([[[-1, -1, -1], [7, 8, 9]]]),
                        pile=np.r_[4, 5, 6, 10:32][None]),
     "hands: game 0's active seat 0 holds no card to play"),
    (lambda a: a.__setitem__("hands", a["hands"].astype(float)), "hands must hold integers"),
    (lambda a: a.__setitem__("active", [0.7]), "active must hold integers"),
    (lambda a: a.__setitem__("value", 5.5), "value must hold integers"),
    (lambda a: a.__setitem__("covered", np.full((1, 32), 2)), "covered must hold bools"),
    (lambda a: a.__setitem__("tops", a["tops"][:, :3]), r"tops must have shape \(1, 4\)"),
    (lambda a: a.__setitem__("hands", a["hands"].reshape(1, 6)), "hands must have shape"),
    (lambda a: a.__setitem__("active", [0, 1, 0]), r"active must have shape \(1,\)"),
])
def test_bad_card_positions_raise_and_change_nothing(change, message):
    games = BatchedCardGame(1, 2, seed=0)
    advance(games, 5, 88)
    before = to_np(games.observations()).copy()
    args = card_position()
    games.set_positions(**args)  # the unchanged position is accepted, and at the entry
    games.set_positions(**{**args, **ENTRY_PLAY})
    games = BatchedCardGame(1, 2, seed=0)
    advance(games, 5, 88)
    change(args)
    with pytest.raises(ValueError, match=message):
        games.set_positions(**args)
    np.testing.assert_array_equal(to_np(games.observations()), before)
