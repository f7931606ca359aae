"""Agents: only legal actions over many games (both games), seeding, batches, behaviour."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import load
from agents.base import Agent, IllegalMaskError, InputShapeError
from agents.expert import ExpertAgent, ExpertParams
from agents.scripted import GreedyAgent, RandomAgent
from qwinto_env import rules
from qwinto_env.dice import ENTRY, KEEP, PASS, REROLL, REROLL_DECISION
from qwinto_env.parallel import GAMES

PLAYERS = {"dice": [1, 2, 4, 6], "cards": [1, 2, 3, 4]}


def play_checked(game_name, specs, seed):
    """Play one game with the given agents, asserting every action is in its mask."""
    engine = GAMES[game_name](num_players=len(specs))
    agents = [load(s, game=game_name, num_players=len(specs)) for s in specs]
    for i, agent in enumerate(agents):
        agent.reset(seed=seed * 10 + i)
    engine.reset(seed=seed)
    steps = 0
    while not engine.done:
        feats = engine.features()
        actions = []
        for s, agent in enumerate(agents):
            legal = engine.legal_actions(s)
            mask = np.zeros(engine.num_actions, dtype=np.int8)
            mask[legal] = 1
            a = agent.act(feats[engine.observation_index(s)], mask)
            assert isinstance(a, int) and a in legal, (agent, a, legal)
            actions.append(a)
        engine.step(actions)
        steps += 1
        assert steps < 5000
    return engine


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), game=st.sampled_from(["dice", "cards"]),
       data=st.data())
def test_agents_only_choose_legal_actions(seed, game, data):
    players = data.draw(st.sampled_from(PLAYERS[game]))
    specs = data.draw(st.lists(st.sampled_from(["random", "greedy", "expert"]),
                               min_size=players, max_size=players))
    engine = play_checked(game, specs, seed)
    for s in range(players):
        rules.check_sheet(engine.sheet(s))


@pytest.mark.parametrize("spec", ["random", "greedy", "expert"])
@pytest.mark.parametrize("game", ["dice", "cards"])
def test_act_batch_matches_act(spec, game):
    engine = GAMES[game](num_players=2, seed=3)
    agent = load(spec, game=game, num_players=2)
    obs, masks = [], []
    rng = np.random.default_rng(0)
    while not engine.done and len(obs) < 60:
        feats = engine.features()
        legal = engine.legal_actions(engine.active)
        mask = np.zeros(engine.num_actions, dtype=np.int8)
        mask[legal] = 1
        obs.append(feats[engine.observation_index(engine.active)])
        masks.append(mask)
        engine.step([int(rng.choice(engine.legal_actions(s))) for s in range(2)])
    obs, masks = np.stack(obs), np.stack(masks)
    agent.reset(seed=1)
    batch = agent.act_batch(obs, masks)
    assert batch.dtype == np.int64 and batch.shape == (len(obs),)
    assert masks[np.arange(len(obs)), batch].all()
    if spec != "random":  # deterministic agents decide the same one at a time
        assert list(batch) == [agent.act(o, m) for o, m in zip(obs, masks)]


def test_random_agent_is_seeded_and_uniform():
    mask = np.zeros(37, dtype=np.int8)
    mask[[3, 9, 27]] = 1
    obs = np.zeros(89, dtype=np.float32)
    a, b = RandomAgent(), RandomAgent()
    a.reset(seed=5)
    b.reset(seed=5)
    picks = [a.act(obs, mask) for _ in range(3000)]
    assert picks == [b.act(obs, mask) for _ in range(3000)]
    counts = np.bincount(picks, minlength=37)[[3, 9, 27]]
    assert counts.min() > 900  # about 1000 each
    batch = a.act_batch(np.zeros((3000, 89)), np.tile(mask, (3000, 1)))
    assert set(batch.tolist()) == {3, 9, 27}


def test_empty_mask_is_an_error():
    for agent in (RandomAgent(), GreedyAgent(), ExpertAgent()):
        with pytest.raises(IllegalMaskError):
            agent.act(np.zeros(89, dtype=np.float32), np.zeros(37, dtype=np.int8))
    with pytest.raises(IllegalMaskError):
        RandomAgent().act_batch(np.zeros((2, 89)), np.zeros((2, 37), dtype=np.int8))


@pytest.mark.parametrize("spec", ["random", "greedy", "expert", "pretrained:dice-2p",
                                  "lookahead:pretrained:dice-2p",
                                  "search[samples=2]:pretrained:dice-2p"])
def test_inputs_of_another_shape_are_refused_naming_the_shapes(spec):
    """A card mask, a cut mask, another player count's observation, batches of unequal
    length: an InputShapeError with the shapes the agent takes (they were IndexErrors,
    torch's 'mat1 and mat2 shapes', 'no legal action', or a random pick from the wrong
    mask), for one decision and for a batch."""
    agent = load(spec, game="dice", num_players=2)
    obs, mask = np.zeros(89, dtype=np.float32), np.ones(37, dtype=np.int8)
    for o, m in ((obs, np.ones(88, dtype=np.int8)), (obs, mask[:10]), (np.zeros(107), mask)):
        with pytest.raises(InputShapeError, match=r"plays the dice game with 2 players: its "
                                                  r"observations and masks are \(89,\) and "
                                                  r"\(37,\), got "):
            agent.act(o, m)
        with pytest.raises(InputShapeError, match=r"are \(B, 89\) and \(B, 37\)"):
            agent.act_batch(o[None], m[None])
    with pytest.raises(InputShapeError, match=r"got \(3, 89\) and \(2, 37\)"):
        agent.act_batch(np.zeros((3, 89), dtype=np.float32), np.ones((2, 37), dtype=np.int8))
    with pytest.raises(InputShapeError):
        agent.act_batch(obs, mask)  # one decision given as a batch


def entry_observation(cells_me, value, subset, active_me, phase=ENTRY):
    """A 2-player dice observation, built from the documented layout (own sheet
    ``cells_me``, empty opponent sheet), and the matching entry mask."""
    obs = np.zeros(2 * 31 + 2 + 25, dtype=np.float32)
    obs[:27] = np.array(cells_me) / 18
    obs[62 + (0 if active_me else 1)] = 1          # active player, relative seat
    obs[64 + phase] = 1                           # phase
    obs[88] = phase == REROLL_DECISION            # re-roll available
    for r in range(3):
        obs[67 + r] = subset >> r & 1             # rolled colours
    obs[70 + value - 1] = 1                       # rolled value
    sheet = np.array(cells_me).reshape(3, 9)
    rows = [r for r in range(3) if subset >> r & 1]
    mask = np.zeros(37, dtype=np.int8)
    mask[np.flatnonzero(rules.legal_cells(sheet, value, rows))] = 1
    mask[PASS] = 1
    return obs, mask


@pytest.mark.parametrize("agent", [GreedyAgent(), ExpertAgent()])
def test_active_player_writes_rather_than_misthrow(agent):
    # Orange nearly full and tight: the only legal field for 2 is a poor fit.
    cells = [0] * 27
    cells[0:9] = [1, 0, 4, 5, 6, 7, 8, 9, 10]
    obs, mask = entry_observation(cells, value=2, subset=1, active_me=True)
    assert agent.act(obs, mask) == 1


def test_greedy_bystander_passes_on_a_poor_fit():
    obs, mask = entry_observation([0] * 27, value=18, subset=1, active_me=False)
    # 18 fits orange's last field (natural value 18) exactly: greedy writes it ...
    assert GreedyAgent().act(obs, mask) == 8
    obs, mask = entry_observation([0] * 27, value=1, subset=1, active_me=False)
    # ... but 1 is far from every orange field (natural values 4.1 and up): it passes.
    assert GreedyAgent().act(obs, mask) == PASS


def test_expert_rerolls_a_useless_roll_and_keeps_a_good_one():
    cells = [0] * 27
    cells[0:9] = [1, 2, 3, 4, 0, 6, 7, 8, 9]   # orange lacks only field 4, which needs 5
    cells[9:27] = list(range(1, 10)) + list(range(2, 11))  # yellow and purple: full
    rules.check_sheet(np.reshape(cells, (3, 9)))
    mask = np.zeros(37, dtype=np.int8)
    mask[[KEEP, REROLL]] = 1
    expert = ExpertAgent()
    obs, _ = entry_observation(cells, value=2, subset=1, active_me=True, phase=REROLL_DECISION)
    assert expert.act(obs, mask) == REROLL     # 2 fits nowhere: keeping it is a misthrow
    obs, _ = entry_observation(cells, value=5, subset=1, active_me=True, phase=REROLL_DECISION)
    assert expert.act(obs, mask) == KEEP


def test_expert_params():
    assert ExpertAgent(tau=0.2).params.tau == 0.2
    assert ExpertAgent(params=ExpertParams(w_pent=0.5)).params.w_pent == 0.5
    with pytest.raises(ValueError, match="unknown expert parameter"):
        ExpertAgent(tua=0.2)


def test_agent_interface_is_abstract():
    with pytest.raises(TypeError):
        Agent()  # act() is abstract
