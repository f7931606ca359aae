"""The batched ``expert``: ``act_batch`` against the scalar ``act``, on both of its paths.

A numpy batch goes to the compiled kernel (:mod:`agents.expert_numba`), a torch batch to
the array code (:mod:`agents.expert_batched`). The scalar :meth:`ExpertAgent.act
<agents.expert.ExpertAgent.act>` is the reference. On thousands of real positions (random
games and the expert's own games, both games, 1 to 6 players) each path's decision must
be the scalar one on every row with two or more legal actions, except where the scalar
values of the two choices tie within ``TIE`` (float sums in another order may then pick
either); such rows must be rare. On torch the batch must not wait for the device (no
host sync).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents import expert_batched, expert_numba
from agents.base import IllegalMaskError
from agents.chance_tables import SUBSET_DISTRIBUTIONS
from agents.expert import ExpertAgent
from qwinto_env import rules
from qwinto_env.batched import BATCHED_GAMES, uniform_legal
from qwinto_env.spec import cards, dice
from qwinto_env.spec.base import PASS
from qwinto_env.view import decode, decode_cards
from tests.syncs import SyncCounter

#: Scalar values closer than this are a tie: either choice is the expert's.
TIE = 1e-9
#: (game, players): both games, solo, two and many players.
GAMES = [("dice", 1), ("dice", 2), ("dice", 4), ("dice", 6),
         ("cards", 2), ("cards", 3), ("cards", 4)]


def _positions(game: str, players: int, seed: int, by_expert: bool, rows: int = 1500,
               games: int = 32, steps: int = 240) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` decisions (two or more legal actions) sampled from every seat along
    batched games played at random or by the (batched) expert itself."""
    engine = BATCHED_GAMES[game](games, players, backend="numpy", seed=seed)
    bot = ExpertAgent(game, players)
    observations, masks = [], []
    for _ in range(steps):
        obs, mask = engine.observations(), engine.action_masks()
        observations.append(obs.reshape(-1, obs.shape[-1]))
        masks.append(mask.reshape(-1, mask.shape[-1]))
        if by_expert:
            actions = bot.act_batch(observations[-1], masks[-1]).reshape(mask.shape[:2])
        else:
            actions = uniform_legal(engine.backend, engine.legal_bits(), engine.gen,
                                    engine.num_actions)
        engine.step(actions)
    obs, mask = np.concatenate(observations), np.concatenate(masks)
    decided = np.flatnonzero((mask > 0).sum(1) > 1)
    pick = np.random.default_rng(seed).choice(decided, min(rows, decided.size), replace=False)
    return obs[pick], mask[pick]


def _scalar_values(bot: ExpertAgent, obs: np.ndarray, mask: np.ndarray) -> dict[int, float]:
    """What the scalar ``act`` maximises, per legal action of one decision (read from
    its own evaluation, so a tie is judged by the reference's numbers)."""
    view = decode_cards(obs) if bot.game == "cards" else decode(obs)
    table, row_best, misthrow = bot._analyse(view)
    legal = [int(a) for a in np.flatnonzero(mask)]
    margin = bot.params.reroll_margin
    if bot.game == "cards" and view.phase == cards.PLAY:
        out = {}
        for a in legal:
            value, colours = cards.play_result(view.hand, view.tops, a)
            rows = cards.COLOUR_ROWS[colours] if 1 <= value <= rules.MAX_VALUE else ()
            out[a] = max([misthrow] + [float(row_best[r, value]) for r in rows])
        return out
    if bot.game == "dice" and view.phase == dice.CHOOSE:
        out = {}
        for a in legal:
            vals = bot._subset_values(row_best, misthrow, a - PASS)
            dist = SUBSET_DISTRIBUTIONS[a - PASS]
            out[a] = float(dist @ np.maximum(vals, float(dist @ vals) + margin))
        return out
    if bot.game == "dice" and view.phase == dice.REROLL_DECISION:
        vals = bot._subset_values(row_best, misthrow, view.subset)
        return {dice.KEEP: vals[view.value] + margin,
                dice.REROLL: float(SUBSET_DISTRIBUTIONS[view.subset] @ vals)}
    passing = misthrow if view.active == 0 else bot.params.pass_margin
    return {a: (passing if a == PASS else float(table[a, view.value])) for a in legal}


def _compare(game: str, players: int, obs: np.ndarray, masks: np.ndarray,
             chosen: np.ndarray) -> tuple[list[int], int]:
    """Rows where ``chosen`` is not the scalar choice and not tied with it, and the
    number of tied rows."""
    bot = ExpertAgent(game, players)
    wrong, ties = [], 0
    for i, (o, m) in enumerate(zip(obs, masks)):
        expected = bot.act(o, m)
        if chosen[i] == expected:
            continue
        values = _scalar_values(bot, o, m)
        if chosen[i] in values and math.isclose(values[chosen[i]], values[expected],
                                                rel_tol=0.0, abs_tol=TIE):
            ties += 1
        else:
            wrong.append(i)
    return wrong, ties


@pytest.mark.parametrize("game,players", GAMES)
@pytest.mark.parametrize("by_expert", [False, True], ids=["random", "expert"])
def test_batched_expert_equals_scalar_expert(game, players, by_expert):
    """Both paths of ``act_batch``, numpy (compiled) and torch (array code), make the
    scalar expert's decision on every row of 1,500 positions, up to ties within 1e-9
    (under 1% of the rows)."""
    obs, masks = _positions(game, players, seed=10 * players + by_expert, by_expert=by_expert)
    bot = ExpertAgent(game, players)
    chosen = bot.act_batch(obs, masks)
    on_torch = bot.act_batch(torch.as_tensor(obs), torch.as_tensor(masks) > 0)
    assert chosen.dtype == np.int64 and on_torch.dtype == torch.int64
    assert len(obs) >= 1000
    for path, got in (("compiled (numpy)", chosen), ("array code (torch)", on_torch.numpy())):
        wrong, ties = _compare(game, players, obs, masks, got)
        assert not wrong, f"{path}: rows {wrong[:10]} differ from the scalar expert"
        assert ties <= len(obs) // 100, f"{path}: {ties} tied rows of {len(obs)}"


def test_numpy_batches_take_the_compiled_path_and_torch_the_array_code(monkeypatch):
    """``decide_batch`` hands numpy views to :mod:`agents.expert_numba` and torch views to
    :mod:`agents.expert_batched` (which the equality test above then checks)."""
    calls = []
    for module in (expert_numba, expert_batched):
        monkeypatch.setattr(module, "decide", lambda tables, game, view, legal,
                            name=module.__name__: calls.append(name) or legal.sum(1) * 0)
    obs, masks = _positions("dice", 2, seed=0, by_expert=False, rows=4, games=4, steps=8)
    bot = ExpertAgent("dice", 2)
    bot.act_batch(obs, masks)
    bot.act_batch(torch.as_tensor(obs), torch.as_tensor(masks))
    assert calls == ["agents.expert_numba", "agents.expert_batched"]


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_batched_expert_plays_forced_rows_and_stays_legal(game):
    """Every row, forced ones included (the engines' real masks), gets a legal action;
    a row with one legal action gets that one; an empty numpy row raises."""
    engine = BATCHED_GAMES[game](16, 3, backend="numpy", seed=5)
    bot = ExpertAgent(game, 3)
    for _ in range(60):
        obs = engine.observations().reshape(48, -1)
        masks = engine.action_masks().reshape(48, -1)
        chosen = bot.act_batch(obs, masks)
        assert (masks[np.arange(48), chosen] > 0).all()
        forced = (masks > 0).sum(1) == 1
        assert (chosen[forced] == masks[forced].argmax(1)).all()
        engine.step(chosen.reshape(16, 3))
    masks[0] = 0
    with pytest.raises(IllegalMaskError):
        bot.act_batch(obs, masks)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_batched_expert_makes_no_host_sync_on_torch(game):
    """A torch batch of real positions (every phase, forced rows too) is decided
    without one host sync, and the answer stays on the device as int64."""
    engine = BATCHED_GAMES[game](32, 4, backend="torch", seed=3)
    bot = ExpertAgent(game, 4)
    for _ in range(40):
        obs = engine.observations().reshape(128, -1)
        masks = engine.action_masks().reshape(128, -1)
        with SyncCounter() as syncs:
            chosen = bot.act_batch(obs, masks)
        assert syncs.count == 0, syncs.calls
        assert isinstance(chosen, torch.Tensor) and chosen.dtype == torch.int64
        engine.step(chosen.reshape(32, 4))


@pytest.mark.parametrize("game", ["dice", "cards"])
@pytest.mark.parametrize("bot", ["expert", "greedy"])
def test_batched_bots_answer_an_empty_batch_in_its_kind(game, bot):
    """A trainer's pool asks every opponent for all its seats, also when a small batch
    leaves it none: zero rows give zero int64 actions, a tensor for a tensor."""
    from agents import load
    engine = BATCHED_GAMES[game](4, 2, backend="torch", seed=0)
    obs = engine.observations().reshape(8, -1)[:0]
    masks = engine.action_masks().reshape(8, -1)[:0]
    player = load(bot, game=game, num_players=2)
    chosen = player.act_batch(obs, masks)
    assert isinstance(chosen, torch.Tensor) and chosen.dtype == torch.int64
    assert chosen.shape == (0,)
    chosen = player.act_batch(obs.numpy(), masks.numpy())
    assert isinstance(chosen, np.ndarray) and chosen.dtype == np.int64 and chosen.shape == (0,)
