"""Bad input to the batched engines: unvalidated steps stay inside their own game and the
rules; refused calls (steps, resets, constructors) change nothing."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from qwinto_env import rules
from qwinto_env.batched import BatchedCardGame, BatchedDiceGame, uniform_legal
from qwinto_env.batched.cards import DECK
from qwinto_env.batched.cards import ENTRY as CARD_ENTRY
from qwinto_env.batched.dice import ENTRY as DICE_ENTRY
from qwinto_env.batched.dice import REROLL_DECISION
from qwinto_env.game import IllegalActionError

ENGINES = {"dice": BatchedDiceGame, "cards": BatchedCardGame}
ENTRY = {"dice": DICE_ENTRY, "cards": CARD_ENTRY}
BACKENDS = ["numpy", "torch"]
INT64 = np.iinfo(np.int64)
CASES = [(game, backend, players) for game, engine in ENGINES.items()
         for backend in BACKENDS for players in range(2, engine.max_players + 1)]


def to_np(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def legal_actions(games, gen=None) -> np.ndarray:
    """Uniform legal actions, drawn from ``gen`` (default: the engine's generator)."""
    gen = games.gen if gen is None else gen
    return to_np(uniform_legal(games.backend, games.legal_bits(), gen, games.num_actions))


def chance_for(games, rng: np.random.Generator):
    """Chance that fixes every draw of the next step but the deals of restarting card games."""
    if isinstance(games, BatchedDiceGame):
        return rng.integers(1, 7, size=(games.num_games, 3))
    orders = np.tile(np.arange(DECK), (games.num_games, 1))
    for n in np.flatnonzero(to_np(games.will_reshuffle())):
        covered = games.covered_cards(int(n))
        orders[n, :len(covered)] = rng.permutation(covered)
    return orders


def wrong_id(rng: np.random.Generator, mask: np.ndarray) -> int:
    """An action id that is not legal for a seat with legal-action ``mask``."""
    kind = rng.integers(4)
    if kind == 0:
        return -int(rng.integers(1, 1000))
    if kind == 1:
        return len(mask) + int(rng.integers(0, 1000))
    if kind == 2:
        return int(rng.choice(np.flatnonzero(mask == 0)))
    return int(rng.choice([INT64.max, INT64.min, INT64.min + 1, 1 << 62, -(1 << 40)]))


def per_game(games, out) -> dict[str, np.ndarray]:
    """Everything a step leaves per game (leading axis: game)."""
    state = {"sheets": games.sheets(), "misthrows": games.misthrows, "scores": games.scores(),
             "active": games.active, "turn": games.turn, "observations": games.observations(),
             "masks": games.action_masks(), "rewards": out.rewards,
             "terminated": out.terminated}
    return {k: to_np(v) for k, v in state.items()}


def finals(out) -> dict[int, tuple]:
    """Game -> (final scores, returns, turns) of the games that ended in a step."""
    done = to_np(out.done_index).tolist()
    scores, returns = to_np(out.final_scores), to_np(out.final_returns)
    turns = to_np(out.final_turns)
    return {g: (scores[j].tolist(), returns[j].tolist(), int(turns[j]))
            for j, g in enumerate(done)}


def check_rules(games, game_ids) -> None:
    """The rules' invariants hold for ``game_ids``: valid sheets, consistent legal cells
    and scores, an end not overdue, every mask with a legal action (every card once)."""
    sheets, misthrows = to_np(games.sheets()), to_np(games.misthrows)
    allowed, scores = to_np(games.allowed_values()), to_np(games.scores())
    masks = to_np(games.action_masks())
    for n in game_ids:
        for s in range(games.num_players):
            cells = sheets[n, s].tolist()
            assert rules.cells_violations(cells) == [], (n, s, cells)
            assert allowed[n, s].tolist() == rules.cells_allowed_values(cells), (n, s)
            assert scores[n, s] == rules.cells_score(cells, int(misthrows[n, s])), (n, s)
            assert rules.cells_full_rows(cells) < rules.FULL_ROWS_TO_END, (n, s)
            assert 0 <= misthrows[n, s] < rules.MAX_MISTHROWS, (n, s)
            assert masks[n, s].sum() > 0, (n, s)
        if isinstance(games, BatchedCardGame):
            check_cards(games, n)
        elif games.phase in (REROLL_DECISION, DICE_ENTRY):
            dice = to_np(games.dice)[n]
            assert 1 <= to_np(games.subset)[n] <= 7 and to_np(games.value)[n] == dice.sum()


def check_cards(games: BatchedCardGame, n: int) -> None:
    tops, covered, hands = to_np(games.tops)[n], to_np(games.covered)[n], to_np(games.hands)[n]
    pos, end = int(to_np(games.pile_pos)[n]), int(to_np(games.pile_end)[n])
    cards = (tops.tolist() + np.flatnonzero(covered).tolist()
             + [c for c in hands.reshape(-1) if c < DECK] + to_np(games.pile)[n, pos:end].tolist())
    assert sorted(cards) == list(range(DECK)), n


def clone(games):
    """An independent copy of an engine (its stateless backend shared)."""
    return copy.deepcopy(games, {id(games.backend): games.backend})


def same_as_a_legal_choice(before, actions, chance, n: int, got: dict) -> bool:
    """Whether game ``n`` of ``got`` is what one of its active seat's legal actions makes
    of ``before`` (the other actions as in ``actions``): the non-entry phases, where only
    the active seat chooses."""
    active = int(to_np(before.active)[n])
    for choice in np.flatnonzero(to_np(before.action_masks())[n, active]):
        alt, joint = clone(before), actions.copy()
        joint[n, active] = choice
        out = alt.step(joint, chance)
        want = per_game(alt, out)
        if all(np.array_equal(got[key][n], want[key][n]) for key in got):
            return True
    return False


@pytest.mark.parametrize("game,backend,players", CASES)
def test_unvalidated_wrong_ids_stay_in_their_game_and_the_rules(game, backend, players):
    """Random wrong ids (negative, past the last action, in range but illegal now, int64
    extremes) in random games at every phase of random games, stepped with
    validate=False: every other game ends exactly as in a twin stepped with legal actions
    only; a game with wrong ids ends as after some legal choice (entry phases: with valid
    sheets); the rules' invariants hold and the batch plays on."""
    rng = np.random.default_rng(players)
    num_games = 6
    for case in range(8):
        games = ENGINES[game](num_games, players, backend=backend,
                              seed=int(rng.integers(1 << 30)), final_observations=True)
        per_turn = games.steps_per_turn  # every phase in turn, at random points of games
        for _ in range(per_turn * int(rng.integers(0, 40)) + case % per_turn):
            games.step(legal_actions(games))
        before, twin = clone(games), clone(games)
        pick = games.backend.generator(case)  # leaves the twins' generators in step
        masks, actions = to_np(games.action_masks()), legal_actions(games, pick)
        bad = actions.copy()
        dirty = rng.random((num_games, players)) < 0.3
        dirty[rng.integers(num_games), rng.integers(players)] = True
        for n, s in zip(*np.nonzero(dirty)):
            bad[n, s] = wrong_id(rng, masks[n, s])
        chance = chance_for(twin, rng)
        B = games.backend
        out = games.step(B.asarray(bad, B.int64), chance, validate=False)
        ref = twin.step(actions, chance)
        clean = [n for n in range(num_games) if not dirty[n].any()]
        got, want = per_game(games, out), per_game(twin, ref)
        # A card game deals each restarting game a deck from the shared generator in
        # order: when a dirty game ends differently, later deals shift legitimately.
        same_deals = game == "dice" or finals(out).keys() == finals(ref).keys()
        for key in got:
            rows = [n for n in clean if same_deals or n not in finals(ref)
                    or key not in ("observations", "masks")]
            assert np.array_equal(got[key][rows], want[key][rows]), (case, key)
        assert {n: v for n, v in finals(out).items() if n in clean} == \
            {n: v for n, v in finals(ref).items() if n in clean}, case
        if before.phase != ENTRY[game]:
            for n in np.flatnonzero(dirty.any(1)):
                assert same_as_a_legal_choice(before, actions, chance, n, got), (case, n)
        check_rules(games, range(num_games))
        for _ in range(2 * games.steps_per_turn):
            games.step(legal_actions(games))  # validated: legal play goes on
            check_rules(games, range(num_games))
