"""agents.lookahead: afterstates against the engine, the chance tables, the lookahead's
arithmetic against a slow reference, legality over random positions, load specs, errors."""

import copy
import itertools
import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import AgentSpecError, load
from agents.lookahead import _SUM_PROBS, LookaheadAgent, sheet_scores
from agents.policy import CheckpointError, PolicyAgent, PolicyNetwork, save_checkpoint
from qwinto_env import rules
from qwinto_env.cards import observation_size as cards_obs_size
from qwinto_env.dice import (CHOOSE, ENTRY, KEEP, PASS, REROLL, REROLL_DECISION, ROLL_FIRST,
                             SEAT, SUBSET_ROWS, DiceGame, observation_size)


@pytest.fixture(scope="module")
def agent():
    """The pure lookahead (no policy prior), whose arithmetic the reference checks."""
    return load("lookahead:pretrained:dice-2p", policy_weight=0.0)


def random_position(seed: int, players: int = 2) -> DiceGame:
    """A dice game advanced by random legal actions to a random point (not over)."""
    rng = random.Random(seed)
    game = DiceGame(num_players=players, seed=seed)
    for _ in range(rng.randrange(0, 150)):
        actions = [rng.choice(game.legal_actions(s)) for s in range(players)]
        game.step(actions)
        if game.done:
            game.reset(seed=seed)
    return game


def observe(game: DiceGame, seat: int) -> tuple[np.ndarray, np.ndarray]:
    mask = np.zeros(37, dtype=np.int8)
    mask[game.legal_actions(seat)] = 1
    return game.features()[game.observation_index(seat)], mask


def entry_position(seed: int) -> DiceGame:
    """A random position at an entry phase."""
    game = random_position(seed)
    rng = random.Random(seed)
    while game.phase != ENTRY:
        game.step([rng.choice(game.legal_actions(s)) for s in range(2)])
        if game.done:
            game.reset(seed=seed + 1)
    return game


@pytest.mark.parametrize("seed", range(12))
def test_afterstates_match_the_engine(agent, seed):
    """Every afterstate of an entry is what the engine shows after that entry (own sheet,
    own misthrows, active seat, phase, roll), and its gain and game end are the engine's."""
    game = entry_position(seed)
    for seat in range(2):
        obs, _ = observe(game, seat)
        a = agent.afterstates(obs[None])
        writes = [(int(c), a.write_states[k], int(a.write_gain[k]), bool(a.write_ends[k]))
                  for k, c in enumerate(a.cell)]
        assert sorted(c for c, *_ in writes) == [x for x in game.legal_actions(seat) if x != PASS]
        for action, state, gain, ends in writes + [(PASS, a.pass_states[0],
                                                     int(a.pass_gain[0]), bool(a.pass_ends[0]))]:
            after = copy.deepcopy(game)
            before = after.scores()[seat]
            # the other seat passes; if it is active its misthrow shows only in its block
            after.step([action if s == seat else PASS for s in range(2)])
            assert after.scores()[seat] - before == gain
            own_ends = rules.cells_full_rows(after.cells[seat]) >= 2 or after.misthrows[seat] >= 4
            assert ends == own_ends
            if after.done:
                continue
            real = torch.as_tensor(after.features()[after.observation_index(seat)])
            own = slice(0, SEAT.size)
            assert torch.equal(state[own], real[own])
            common = slice(2 * SEAT.size, None)
            assert torch.equal(state[common], real[common])
            if game.active == seat:  # the other seat's block is untouched either way
                assert torch.equal(state[SEAT.size:2 * SEAT.size],
                                   real[SEAT.size:2 * SEAT.size])


def test_q_is_reward_plus_discounted_value_of_the_engine_observation(agent):
    game = entry_position(3)
    seat = game.active
    obs, mask = observe(game, seat)
    q_write, q_pass = agent.q_values(obs[None])
    for action in game.legal_actions(seat):
        after = copy.deepcopy(game)
        before = after.scores()[seat]
        after.step([action if s == seat else PASS for s in range(2)])
        if after.done:
            continue
        with torch.no_grad():
            v = agent.network(torch.as_tensor(after.features()[after.observation_index(seat)])
                              [None])[1][0]
        expected = agent.reward_scale * (after.scores()[seat] - before) + agent.gamma * v
        got = q_pass[0] if action == PASS else q_write[0, action, game.value - 1]
        assert float(got) == pytest.approx(float(expected), abs=1e-5)


def test_dice_sum_distributions_match_brute_force():
    assert torch.allclose(_SUM_PROBS.sum(1), torch.ones(7))
    for subset in range(1, 8):
        counts = np.zeros(19)
        n = len(SUBSET_ROWS[subset])
        for faces in itertools.product(range(1, 7), repeat=n):
            counts[sum(faces)] += 1
        assert np.allclose(_SUM_PROBS[subset - 1].numpy(), counts[1:] / 6 ** n)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_sheet_scores_match_the_rules(seed):
    game = random_position(seed, players=3)
    cells = torch.tensor(game.cells)
    misthrows = torch.tensor(game.misthrows)
    assert sheet_scores(cells, misthrows).tolist() == [
        rules.cells_score(c, m) for c, m in zip(game.cells, game.misthrows)]


def reference_scores(agent, obs, phase):
    """The lookahead's roll decisions with plain loops (policy_weight 0)."""
    q_write, q_pass = (x[0].numpy() for x in agent.q_values(obs[None]))
    best = np.full((8, 19), -np.inf)
    for s in range(1, 8):
        for v in range(1, 19):
            best[s, v] = max([q_pass] + [q_write[r * 9 + f, v - 1] for r in SUBSET_ROWS[s]
                                         for f in range(9)])
    probs = _SUM_PROBS.numpy()
    fresh = {s: sum(probs[s - 1, v - 1] * best[s, v] for v in range(1, 19)) for s in range(1, 8)}
    if phase == CHOOSE:
        return {ROLL_FIRST + s - 1: sum(probs[s - 1, v - 1] * max(best[s, v], fresh[s])
                                        for v in range(1, 19)) for s in range(1, 8)}
    game_view = obs[2 * SEAT.size + 2:]
    s = int((game_view[3:6] > 0.5) @ np.array([1, 2, 4]))
    v = int(game_view[6:24].argmax()) + 1
    return {KEEP: best[s, v], REROLL: fresh[s]}


@pytest.mark.parametrize("seed", range(6))
def test_roll_decisions_match_a_slow_reference(agent, seed):
    game = random_position(seed)
    while game.phase == ENTRY:
        game.step([game.legal_actions(s)[-1] for s in range(2)])
        if game.done:
            game.reset(seed=seed)
    for phase in (CHOOSE, REROLL_DECISION):
        if game.phase != phase:
            continue
        obs, mask = observe(game, game.active)
        scores = agent.action_scores(obs[None], mask[None])[0]
        for action, value in reference_scores(agent, obs, phase).items():
            assert float(scores[action]) == pytest.approx(value, abs=1e-5)
        if phase == CHOOSE:  # roll all three dice, then check the re-roll decision
            game.step([ROLL_FIRST + 6 if s == game.active else PASS for s in range(2)])


@pytest.mark.parametrize("kwargs", [{}, {"policy_weight": 0.0}, {"lookahead": "entry"}])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_only_legal_actions(kwargs, seed):
    bot = load("lookahead:pretrained:dice-2p", **kwargs)
    games = [random_position(seed + i) for i in range(3)]
    obs, masks = zip(*(observe(g, s) for g in games for s in range(2)))
    picks = bot.act_batch(np.stack(obs), np.stack(masks))
    for pick, mask in zip(picks, masks):
        assert mask[pick] == 1
    # one observation alone scores as in the batch (up to float rounding of the matmuls)
    alone = bot.action_scores(np.stack(obs[:1]), np.stack(masks[:1]))
    assert torch.allclose(alone, bot.action_scores(np.stack(obs), np.stack(masks))[:1],
                          atol=1e-5)
    assert masks[0][bot.act(obs[0], masks[0])] == 1


@pytest.mark.parametrize("seed", range(8))
def test_a_heavy_policy_prior_plays_the_policy(seed):
    """With a prior that outweighs every Q, each decision (dice, re-roll, entry) is the
    policy head's: the prior reaches every kind of decision with the right indices."""
    bot = load("lookahead:pretrained:dice-2p", policy_weight=1e6)
    policy = load("pretrained:dice-2p")
    game = random_position(seed)
    rng = random.Random(seed)
    for _ in range(9):
        for seat in range(2):
            obs, mask = observe(game, seat)
            if mask.sum() > 1:
                assert bot.act(obs, mask) == policy.act(obs, mask)
        game.step([rng.choice(game.legal_actions(s)) for s in range(2)])
        if game.done:
            break


def test_load_specs(tmp_path, agent):
    assert isinstance(agent, LookaheadAgent) and agent.name == "lookahead:pretrained:dice-2p"
    assert load("lookahead:pretrained:dice-2p").policy_weight == 0.1  # the default
    assert (agent.reward_scale, agent.gamma) == (0.05, 0.999)  # from the training config
    assert isinstance(load("pretrained:dice-2p"), PolicyAgent)  # the default is unchanged
    path = tmp_path / "mine.pt"
    net = PolicyNetwork(observation_size(3), 37, hidden=(16,))
    save_checkpoint(path, net, "dice", 3, observation_size(3), 37,
                    metadata={"config": {"env": {"reward": "score"},
                                         "ppo": {"reward_scale": 0.1, "gamma": 0.9}}})
    bot = load(f"lookahead:{path}", num_players=3, lookahead="entry")
    assert (bot.name, bot.num_players, bot.reward_scale, bot.gamma, bot.lookahead) == (
        f"lookahead:{path}", 3, 0.1, 0.9, "entry")
    assert load(f"lookahead:{path}", num_players=3, gamma=0.5).gamma == 0.5


def test_errors(tmp_path):
    path = tmp_path / "cards.pt"
    size = cards_obs_size(2)
    save_checkpoint(path, PolicyNetwork(size, 88, hidden=(8,)), "cards", 2, size, 88)
    with pytest.raises(AgentSpecError, match="dice game only"):
        load(f"lookahead:{path}", game="cards", num_players=2)
    with pytest.raises(AgentSpecError, match="plays a checkpoint"):
        load("lookahead:expert")
    with pytest.raises(CheckpointError, match="is for the dice game with 2 players"):
        load("lookahead:pretrained:dice-2p", num_players=3)
    with pytest.raises(AgentSpecError, match="unknown lookahead"):
        load("lookahead:pretrained:dice-2p", lookahead="deep")
    win = tmp_path / "win.pt"
    save_checkpoint(win, PolicyNetwork(observation_size(2), 37, hidden=(8,)), "dice", 2,
                    observation_size(2), 37, metadata={"config": {"env": {"reward": "win"}}})
    with pytest.raises(CheckpointError, match="env.reward 'win'"):
        load(f"lookahead:{win}")
