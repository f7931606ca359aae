"""The batched ``greedy`` and ``random`` bots: ``act_batch`` on numpy and torch.

``greedy``'s batched decisions must equal its scalar ``act`` (the readable reference) on
every row of many real positions of both games, ties included; on torch they must not
wait for the device (no host sync). ``random`` on torch draws legal, seeded actions on
the masks' device, also without a sync.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.base import IllegalMaskError
from agents.scripted import GreedyAgent, RandomAgent
from qwinto_env import rules
from qwinto_env.batched import BATCHED_GAMES
from qwinto_env.view import allowed_values
from tests.syncs import SyncCounter

#: (game, players): both games, every player-count regime (solo, two, many).
GAMES = [("dice", 1), ("dice", 2), ("dice", 4), ("dice", 6),
         ("cards", 1), ("cards", 2), ("cards", 3), ("cards", 4)]


def _positions(game: str, players: int, seed: int, steps: int = 150,
               games: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Every seat's observation and mask along batched games in which each decision is
    the greedy bot's or a random one (half each): positions both bots reach."""
    engine = BATCHED_GAMES[game](games, players, backend="numpy", seed=seed)
    bot, rng = GreedyAgent(game, players), np.random.default_rng(seed)
    observations, masks = [], []
    for _ in range(steps):
        obs, mask = engine.observations(), engine.action_masks()
        observations.append(obs.reshape(-1, obs.shape[-1]))
        masks.append(mask.reshape(-1, mask.shape[-1]))
        greedy = bot.act_batch(observations[-1], masks[-1]).reshape(mask.shape[:2])
        keys = np.where(mask > 0, rng.random(mask.shape), -1.0)
        engine.step(np.where(rng.random(mask.shape[:2]) < 0.5, keys.argmax(-1), greedy))
    return np.concatenate(observations), np.concatenate(masks)


@pytest.mark.parametrize("game,players", GAMES)
def test_batched_greedy_equals_scalar_greedy(game, players):
    """On thousands of positions with two or more legal actions, numpy and torch
    ``act_batch`` give the scalar ``act``'s action on every row; forced rows play
    their only action."""
    obs, masks = _positions(game, players, seed=players)
    bot = GreedyAgent(game, players)
    expected = np.array([bot.act(o, m) for o, m in zip(obs, masks)])
    chosen = bot.act_batch(obs, masks)
    on_torch = bot.act_batch(torch.as_tensor(obs), torch.as_tensor(masks) > 0)
    assert chosen.dtype == np.int64 and on_torch.dtype == torch.int64
    decided = (masks > 0).sum(1) > 1
    assert decided.sum() >= 2000
    assert (chosen == expected).all(), np.flatnonzero(chosen != expected)[:10]
    assert (on_torch.numpy() == expected).all()
    forced = ~decided
    assert (chosen[forced] == masks[forced].argmax(1)).all()


@pytest.mark.parametrize("tolerance", [0.0, 0.5, 3.0])
def test_batched_greedy_follows_its_tolerance(tolerance):
    """Other tolerances move the entry, re-roll and roll thresholds; still equal."""
    for game in ("dice", "cards"):
        obs, masks = _positions(game, 3, seed=11, steps=60, games=16)
        bot = GreedyAgent(game, 3, tolerance=tolerance)
        expected = np.array([bot.act(o, m) for o, m in zip(obs, masks)])
        assert (bot.act_batch(obs, masks) == expected).all()


@pytest.mark.parametrize("game,players", [("dice", 3), ("cards", 2)])
def test_batched_greedy_makes_no_host_sync(game, players):
    obs, masks = _positions(game, players, seed=5, steps=40, games=8)
    obs, masks = torch.as_tensor(obs), torch.as_tensor(masks)
    bot = GreedyAgent(game, players)
    bot.act_batch(obs, masks)  # the tables go to the device once, outside the count
    with SyncCounter() as syncs:
        bot.act_batch(obs, masks)
    assert syncs.count == 0, syncs.calls


def test_batched_greedy_rejects_an_empty_numpy_mask():
    obs, masks = _positions("dice", 2, seed=0, steps=2, games=2)
    masks[1] = 0
    with pytest.raises(IllegalMaskError):
        GreedyAgent("dice", 2).act_batch(obs, masks)


def test_allowed_values_equal_the_rules():
    """The array form of ``rules.cells_allowed_values``, numpy and torch, on real sheets."""
    engine = BATCHED_GAMES["dice"](32, 3, backend="numpy", seed=2)
    rng = np.random.default_rng(2)
    for _ in range(200):
        mask = engine.action_masks()
        engine.step(np.where(mask > 0, rng.random(mask.shape), -1.0).argmax(-1))
    sheets = np.asarray(engine.sheets())
    expected = np.array([rules.cells_allowed_values([int(c) for c in sheet])
                         for sheet in sheets.reshape(-1, rules.NUM_CELLS)]).reshape(sheets.shape)
    assert (allowed_values(sheets) == expected).all()
    assert (allowed_values(torch.as_tensor(sheets)).numpy() == expected).all()


def test_random_on_torch_is_legal_seeded_and_sync_free():
    obs, masks = _positions("cards", 3, seed=4, steps=40, games=8)
    obs, masks = torch.as_tensor(obs), torch.as_tensor(masks)
    bot = RandomAgent("cards", 3)
    bot.reset(seed=9)
    first = bot.act_batch(obs, masks)
    with SyncCounter() as syncs:
        second = bot.act_batch(obs, masks > 0)
    assert syncs.count == 0, syncs.calls
    for actions in (first, second):
        assert actions.dtype == torch.int64
        assert (masks.gather(1, actions[:, None]) > 0).all()
    assert (first != second).any()  # the generator moves on
    bot.reset(seed=9)
    assert torch.equal(bot.act_batch(obs, masks), first)
    many = torch.stack([bot.act_batch(obs, masks) for _ in range(50)])
    legal_counts = (masks > 0).sum(1)
    row = int(torch.argmax(legal_counts))
    assert len(set(many[:, row].tolist())) > 1  # random, not a fixed pick


def test_random_numpy_draws_are_unchanged_by_torch():
    """numpy batches draw the agent's ``rng.random(mask.shape)`` keys, as before."""
    obs, masks = _positions("dice", 2, seed=6, steps=30, games=4)
    bot = RandomAgent("dice", 2)
    bot.reset(seed=3)
    rng = np.random.default_rng(3)
    keys = np.where(masks > 0, rng.random(masks.shape), -1.0)
    assert (bot.act_batch(obs, masks) == keys.argmax(1)).all()
