"""The batched card engine against the ParallelEnv (game="cards"): identical at every step.

As for the dice game: a batch of games on the batched engine (numpy or torch-CPU), one
ParallelEnv per game, the same deals (each ParallelEnv is reset with the deck the
batched engine dealt), the same reshuffled piles and the same random legal actions;
observations (bit for bit), masks, rewards, terminations, final scores, returns and
lengths must agree at every step, for every ``empty_pile`` rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from tqdm import tqdm

import qwinto_env
from qwinto_env.batched import get_backend, pack_masks, uniform_legal
from qwinto_env.batched.cards import ENTRY, PLAY, BatchedCardGame
from qwinto_env.game import IllegalActionError
from tests.differential import StepCheck, assert_same_views, to_np

BACKENDS = ["numpy", "torch"]
PASS = 27



class FixedShuffle:
    """Stands in for a CardGame's ``random.Random``: a reshuffle gets the test's order."""

    def __init__(self):
        self.orders: list[list[int]] = []

    def shuffle(self, cards):
        cards[:] = self.orders.pop(0)


def deal_of(games: BatchedCardGame, i: int) -> list[int]:
    """The deck that deals game ``i``'s current (fresh) state: tops, hands, pile."""
    hands = to_np(games.hands)[i]
    pos, end = int(to_np(games.pile_pos)[i]), int(to_np(games.pile_end)[i])
    assert pos == 0 and (hands < 32).all(), "not a fresh deal"
    return (to_np(games.tops)[i].tolist() + hands.reshape(-1).tolist()
            + to_np(games.pile)[i, :end].tolist())


IDEAL = 2 * (np.arange(27) % 9 + 1)


def choose_actions(masks: np.ndarray, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random legal actions, writing (where the value fits the field's ideal) far more
    often than passing, so games also end by full rows and reshuffles happen."""
    n, p, _ = masks.shape
    actions = np.empty((n, p), dtype=np.int64)
    for i in range(n):
        fit = np.abs(values[i] - IDEAL)
        for s in range(p):
            legal = np.flatnonzero(masks[i, s])
            writes = legal[legal < PASS]
            if len(writes) and rng.random() < 0.9:
                actions[i, s] = writes[np.argmin(fit[writes] + 3 * rng.random(len(writes)))]
            else:
                actions[i, s] = rng.choice(legal)
    return actions


def run_differential(backend: str, num_players: int, reward: str, empty_pile: str,
                     num_games: int, batch: int = 16, seed: int = 0,
                     progress: bool = False) -> dict:
    rng = np.random.default_rng(seed)
    games = BatchedCardGame(batch, num_players, backend=backend, seed=seed, reward=reward,
                            random_start=True, empty_pile=empty_pile, final_observations=True)
    envs = [qwinto_env.parallel_env(game="cards", num_players=num_players, reward=reward,
                                    empty_pile=empty_pile) for _ in range(batch)]
    shufflers = [FixedShuffle() for _ in range(batch)]
    agents = envs[0].possible_agents

    def restart(i):
        obs = envs[i].reset(options={"start_player": int(to_np(games.active)[i]),
                                     "deck": deal_of(games, i)})[0]
        envs[i].game.rng = shufflers[i]
        return obs

    observations = [restart(i) for i in range(batch)]
    returns = np.zeros((batch, num_players))
    counts = {"finished": 0, "reshuffles": 0, "full_row_ends": 0, "steps": 0}
    bar = tqdm(total=num_games, disable=not progress,
               desc=f"{backend} {num_players}p {reward} {empty_pile}")
    while counts["finished"] < num_games:
        obs_b, masks_b = to_np(games.observations()), to_np(games.action_masks())
        assert_same_views(obs_b, masks_b, observations, agents, counts)
        actions = choose_actions(masks_b, to_np(games.value), rng)
        chance = np.zeros((batch, 32), dtype=np.int64)
        for i in np.flatnonzero(to_np(games.will_reshuffle())):
            order = rng.permutation(games.covered_cards(i)).tolist()
            assert sorted(order) == envs[i].game.covered_cards()
            chance[i, :len(order)] = order
            shufflers[i].orders = [order]
            counts["reshuffles"] += 1
        check = StepCheck(games.step(actions, chance=chance), returns)
        for i, env in enumerate(envs):
            obs, rew, terms, _, _ = env.step(dict(zip(agents, map(int, actions[i]))))
            assert not shufflers[i].orders, "the reference did not reshuffle when expected"
            observations[i] = obs
            if check.game(i, env, obs, rew, terms):
                counts["finished"] += 1
                counts["full_row_ends"] += env.game.game_over() and max(env.game.misthrows) < 4
                bar.update(1)
                observations[i] = restart(i)
        counts["steps"] += 1
    bar.close()
    return counts


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_players,reward,empty_pile", [
    (2, "win", "reshuffle"), (3, "margin", "reshuffle"), (4, "score", "end"),
    (1, "score", "no_draw"), (2, "margin", "no_draw")])
def test_matches_parallel_env(backend, num_players, reward, empty_pile):
    counts = run_differential(backend, num_players, reward, empty_pile, num_games=30,
                              seed=num_players)
    if empty_pile == "reshuffle":
        assert counts["reshuffles"] > 0, "no reshuffle happened: the test is too weak"


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_parallel_env_10000_games(backend):
    done = 0
    for num_players, reward, empty_pile, games in [
            (2, "win", "reshuffle", 5000), (3, "margin", "reshuffle", 2000),
            (4, "score", "end", 1000), (1, "score", "no_draw", 1000),
            (2, "win", "no_draw", 1000)]:
        counts = run_differential(backend, num_players, reward, empty_pile, num_games=games,
                                  batch=256, seed=11, progress=True)
        done += counts["finished"]
    assert done >= 10_000


@pytest.mark.parametrize("backend", BACKENDS)
def test_turns_are_two_steps_and_games_restart(backend):
    games = BatchedCardGame(128, 2, backend=backend, seed=1)
    ended = 0
    for step in range(400):
        assert games.phase == (PLAY, ENTRY)[step % 2]
        out = games.step(uniform_legal(games.backend, games.legal_bits(), games.gen, 88))
        ended += int(out.done_index.shape[0])
    assert ended > 128
    # Every card is somewhere exactly once: tops, covered, hands, pile.
    tops, covered, hands = to_np(games.tops), to_np(games.covered), to_np(games.hands)
    pile, pos, end = to_np(games.pile), to_np(games.pile_pos), to_np(games.pile_end)
    for i in range(128):
        cards = (tops[i].tolist() + np.flatnonzero(covered[i]).tolist()
                 + [c for c in hands[i].reshape(-1) if c < 32] + pile[i, pos[i]:end[i]].tolist())
        assert sorted(cards) == list(range(32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_reproduces_trajectory(backend):
    def run(seed):
        games = BatchedCardGame(32, 3, backend=backend, seed=seed)
        trace = [to_np(games.step(uniform_legal(games.backend, games.legal_bits(), games.gen,
                                                88)).rewards).copy() for _ in range(120)]
        return np.stack(trace), to_np(games.observations())
    (r1, o1), (r2, o2), (_, o3) = run(5), run(5), run(6)
    assert np.array_equal(r1, r2) and np.array_equal(o1, o2)
    assert not np.array_equal(o1, o3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_input_raises_and_changes_nothing(backend):
    games = BatchedCardGame(4, 2, backend=backend, seed=0)
    before = to_np(games.observations()).copy()
    actions = np.full((4, 2), PASS)
    actions[np.arange(4), to_np(games.active)] = 28
    actions[1, 1 - int(to_np(games.active)[1])] = 28  # only the active seat plays
    with pytest.raises(IllegalActionError, match="game 1 seat"):
        games.step(actions)
    actions[1, 1 - int(to_np(games.active)[1])] = 88
    with pytest.raises(IllegalActionError, match="out of range"):
        games.step(actions)
    assert np.array_equal(to_np(games.observations()), before)
    with pytest.raises(ValueError, match="deck"):
        games.reset(deck=np.zeros((4, 32), dtype=int))
    with pytest.raises(ValueError, match="num_players"):
        BatchedCardGame(2, 5, backend=backend)
    with pytest.raises(ValueError, match="empty_pile"):
        BatchedCardGame(2, 2, backend=backend, empty_pile="stop")


def test_fixed_deck_deals_like_the_single_engine():
    deck = np.stack([np.random.default_rng(k).permutation(32) for k in range(3)])
    games = BatchedCardGame(3, 2, seed=0)
    games.reset(deck=deck)
    for k in range(3):
        env = qwinto_env.parallel_env(game="cards", num_players=2)
        obs, _ = env.reset(options={"deck": deck[k].tolist()})
        for s, agent in enumerate(env.possible_agents):
            assert np.array_equal(games.observations()[k, s], obs[agent]["observation"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampler_and_masks_over_two_words(backend):
    B = get_backend(backend)
    masks = np.zeros((3, 88), dtype=np.int8)
    masks[0, [27, 63, 64, 87]] = 1
    masks[1, 80:88] = 1
    masks[2, 5] = 1
    legal = pack_masks(B, B.asarray(np.repeat(masks[None], 4000, 0), B.int8))
    assert tuple(legal.shape) == (4000, 3, 2)
    draws = to_np(uniform_legal(B, legal, B.generator(0), 88))
    for j in range(3):
        values, counts = np.unique(draws[:, j], return_counts=True)
        assert set(values) == set(np.flatnonzero(masks[j]))
        assert counts.min() > 0.7 * 4000 / len(values)
    unpacked = to_np(B.unpack_bits(legal[0], 64)).reshape(3, 128)[:, :88]
    assert np.array_equal(unpacked, masks)
