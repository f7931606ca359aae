"""The batched engines step on torch without host syncs, and their two ways of reporting
the games that ended agree.

A GPU trainer calls ``observations()``, ``action_masks()`` and ``step(actions,
validate=False)`` every step and reads ``rewards``, ``terminated`` and the full-batch
``*_at_end`` fields: none of that may make the device wait for the host, also in steps
where games end and restart and card games reshuffle. :class:`~tests.syncs.SyncCounter`
counts the syncs on CPU. The listed ``done_index`` / ``final_*`` fields are computed from
the full-batch ones on first read (a sync on torch, when a caller asks).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qwinto_env.batched import BatchedCardGame, BatchedDiceGame
from qwinto_env.spec.cards import DECK_SIZE, PASS
from tests.syncs import SyncCounter
from tests.differential import to_np

ENGINES = {"dice": BatchedDiceGame, "cards": BatchedCardGame}
CASES = [(game, players) for game in ENGINES for players in (1, 2, 4)]


def random_legal(masks: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A uniform legal action per seat: the argmax of random keys over the legal ones."""
    keys = torch.rand(masks.shape, generator=gen, device=masks.device)
    return torch.where(masks.bool(), keys, -1.0).argmax(-1)


@pytest.mark.parametrize("game,players", CASES)
def test_torch_steps_make_no_host_sync(game, players):
    games = ENGINES[game](64, players, backend="torch", seed=players, random_start=True,
                          final_observations=True)
    gen = torch.Generator().manual_seed(players)
    ended = torch.zeros((), dtype=torch.int64)
    reshuffles = torch.zeros((), dtype=torch.int64)
    checksum = torch.zeros(())
    syncs: list[tuple[str, str]] = []
    for _ in range(150 * games.steps_per_turn):
        with SyncCounter() as counter:
            games.observations()
            masks = games.action_masks()
        syncs += counter.calls
        actions = random_legal(masks, gen)
        if game == "cards":
            reshuffles += games.will_reshuffle().sum()
        with SyncCounter() as counter:
            out = games.step(actions, validate=False)
            checksum += out.rewards.sum() + out.terminated.sum() + out.scores_at_end.sum() \
                + out.returns_at_end.sum() + out.turns_at_end.sum()
            if out.observations_at_end is not None:
                checksum += out.observations_at_end.sum()
        syncs += counter.calls
        ended += out.terminated.sum()
    assert not syncs, f"{len(syncs)} host syncs, the first ones:\n" + "\n".join(
        f"{name} at {where}" for name, where in syncs[:10])
    assert int(ended) > 64, "too few games ended and restarted: the test is too weak"
    if game == "cards":
        assert int(reshuffles) > 0, "no reshuffle happened: the test is too weak"
    assert torch.isfinite(checksum)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("game,players", CASES)
def test_listed_finals_are_the_full_batch_ones_at_the_ended_rows(backend, game, players):
    games = ENGINES[game](32, players, backend=backend, seed=7, random_start=True,
                          final_observations=True)
    rng = np.random.default_rng(players)
    ended = 0
    for _ in range(120 * games.steps_per_turn):
        masks = to_np(games.action_masks())
        keys = np.where(masks > 0, rng.random(masks.shape), -1.0)
        out = games.step(keys.argmax(-1), validate=False)
        terminated = to_np(out.terminated)
        done = np.flatnonzero(terminated)
        assert to_np(out.done_index).tolist() == done.tolist()
        for listed, full in [("final_scores", "scores_at_end"),
                             ("final_returns", "returns_at_end"),
                             ("final_turns", "turns_at_end")]:
            full_batch = to_np(getattr(out, full))
            assert np.array_equal(to_np(getattr(out, listed)), full_batch[done]), listed
            assert not full_batch[~terminated].any(), f"{full} is not 0 where not terminated"
        if out.observations_at_end is None:
            assert out.final_observation is None and not done.size
        else:
            assert np.array_equal(to_np(out.final_observation),
                                  to_np(out.observations_at_end)[done])
        ended += done.size
    assert ended > 32


def test_dice_engines_agree_across_backends_given_the_dice():
    """Given the same actions and dice (and fixed start seats), numpy and torch play the
    same games, including the endings and the restarts."""
    rng = np.random.default_rng(0)
    twins = [BatchedDiceGame(48, 3, backend=b, seed=0, final_observations=True)
             for b in ("numpy", "torch")]
    ended = 0
    for _ in range(150 * 3):
        views = [(to_np(g.observations()), to_np(g.action_masks())) for g in twins]
        assert all(np.array_equal(a, b) for a, b in zip(*views))
        keys = np.where(views[0][1] > 0, rng.random(views[0][1].shape), -1.0)
        actions, faces = keys.argmax(-1), rng.integers(1, 7, size=(48, 3))
        outs = [g.step(actions, chance=faces, validate=False) for g in twins]
        for field in ("rewards", "terminated", "scores_at_end", "returns_at_end",
                      "turns_at_end", "done_index", "final_scores", "final_turns"):
            assert np.array_equal(*(to_np(getattr(o, field)) for o in outs)), field
        if outs[0].observations_at_end is not None:
            assert np.array_equal(*(to_np(o.final_observation) for o in outs))
        ended += len(outs[0].done_index)
    assert ended > 48


def test_card_engines_agree_across_backends_given_the_deck_and_reshuffles():
    """Given the same decks, actions and reshuffled orders, numpy and torch play the same
    games until they end (the next deals come from each backend's generator)."""
    rng = np.random.default_rng(1)
    decks = np.stack([rng.permutation(DECK_SIZE) for _ in range(48)])
    twins = [BatchedCardGame(48, 2, backend=b, seed=0, final_observations=True)
             for b in ("numpy", "torch")]
    for g in twins:
        g.reset(deck=decks, start_player=0)
    same = np.ones(48, dtype=bool)  # games still in their first deal
    reshuffles = 0
    for step in range(300):
        views = [(to_np(g.observations()), to_np(g.action_masks())) for g in twins]
        assert all(np.array_equal(a[same], b[same]) for a, b in zip(*views))
        keys = np.where(views[0][1] > 0, rng.random(views[0][1].shape), -1.0)
        keys[..., PASS] *= 0.1  # write more than pass: games last, piles run out
        orders = [np.tile(np.arange(DECK_SIZE), (48, 1)) for _ in twins]
        for g, order in zip(twins, orders):
            for n in np.flatnonzero(to_np(g.will_reshuffle())):
                covered = g.covered_cards(int(n))
                order[n, :len(covered)] = np.random.default_rng([step, n]).permutation(covered)
                reshuffles += bool(same[n])
        outs = [g.step(keys.argmax(-1), chance=o, validate=False) for g, o in zip(twins, orders)]
        ended = to_np(outs[0].terminated)
        for field in ("rewards", "terminated", "scores_at_end", "returns_at_end",
                      "turns_at_end", "observations_at_end"):
            rows = same & ended if field == "observations_at_end" else same
            if getattr(outs[0], field) is not None:
                a, b = (to_np(getattr(o, field)) for o in outs)
                assert np.array_equal(a[rows], b[rows]), field
        same &= ~ended
    assert reshuffles > 0 and not same.all()
