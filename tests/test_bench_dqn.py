"""The benchmark's masked DQN: trains end to end, plays legal moves, is reproducible, and
its TD target never looks at an illegal next action."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.benchmark.algorithms import Progress, get_algorithm
from agents.benchmark.tasks import get_task
from agents.evaluate import play

dqn = get_algorithm("dqn")

#: small enough for a test, large enough that gradient steps and a target update happen
TINY = dqn.Config(num_envs=4, buffer_size=512, batch_size=32, learning_starts=64,
                  target_network_frequency=10, hidden=32)
STEPS = 256


class Recorder(Progress):
    """Remembers every curve point's step count and agent."""

    def __init__(self, points):
        super().__init__(points)
        self.seen = []

    def on_point(self, steps_done, agent):
        self.seen.append((steps_done, agent))


def observation_batch(task, games: int = 16, seed: int = 123):
    """Observations and masks of the learner's first decisions in ``games`` fresh games."""
    env = task.make_env()
    rows = [env.reset(seed=seed + g)[0] for g in range(games)]
    return (np.stack([r["observation"] for r in rows]),
            np.stack([r["action_mask"] for r in rows]))


def train(task_id: str, seed: int, workdir, progress=None):
    workdir.mkdir(exist_ok=True)
    return dqn.train(get_task(task_id), seed, STEPS, workdir, progress or Progress(), TINY)


@pytest.mark.parametrize("task_id", ["dice-2p-v0", "cards-2p-v0"])
def test_a_tiny_run_returns_an_agent_that_plays_legal_moves(task_id, tmp_path):
    task = get_task(task_id)
    progress = Recorder([STEPS // 2, STEPS])
    agent = train(task_id, 0, tmp_path, progress)
    assert [s for s, _ in progress.seen] == [STEPS // 2, STEPS]
    assert progress.steps == STEPS
    assert (tmp_path / "q_network.pt").exists()
    obs, masks = observation_batch(task)
    actions = agent.act_batch(obs, masks)
    assert actions.dtype == np.int64 and masks[np.arange(len(actions)), actions].all()
    res = play([agent, "random"], game=task.game, num_players=task.num_players, games=20,
               seed=0, progress=False)
    assert res.games == 20 and res.entrants[0] == "dqn"


def test_the_same_seed_gives_the_same_agent(tmp_path):
    task = get_task("dice-2p-v0")
    obs, masks = observation_batch(task)
    first, again, other = (train("dice-2p-v0", seed, tmp_path / str(i))
                           for i, seed in enumerate([7, 7, 8]))
    q = [agent.scores(torch.as_tensor(obs)) for agent in (first, again, other)]
    assert torch.equal(q[0], q[1])
    assert np.array_equal(first.act_batch(obs, masks), again.act_batch(obs, masks))
    assert not torch.allclose(q[0], q[2])  # the seed matters, so the test can fail


def test_the_target_takes_the_max_over_the_next_states_legal_actions_only():
    # Action 0 has the highest next Q-value but is illegal in the next state.
    next_q = torch.tensor([[10.0, 2.0, 3.0], [10.0, 2.0, 3.0]])
    mask = torch.tensor([[False, True, True], [True, True, True]])
    reward, done = torch.tensor([1.0, 1.0]), torch.tensor([0.0, 0.0])
    target = dqn.td_target(reward, done, mask, next_q, None, gamma=0.5)
    assert target.tolist() == [1.0 + 0.5 * 3.0, 1.0 + 0.5 * 10.0]


def test_double_dqn_picks_a_legal_action_by_the_online_net_and_scores_it_by_the_target():
    next_q_target = torch.tensor([[10.0, 2.0, 3.0]])
    next_q_online = torch.tensor([[9.0, 5.0, 1.0]])  # best legal by the online net: 1
    mask = torch.tensor([[False, True, True]])
    target = dqn.td_target(torch.tensor([0.0]), torch.tensor([0.0]), mask, next_q_target,
                           next_q_online, gamma=1.0)
    assert target.tolist() == [2.0]


def test_a_terminal_next_state_adds_nothing():
    target = dqn.td_target(torch.tensor([4.0]), torch.tensor([1.0]),
                           torch.tensor([[True, False]]), torch.tensor([[7.0, 99.0]]),
                           None, gamma=0.9)
    assert target.tolist() == [4.0]


def test_exploration_draws_legal_actions_only_and_all_of_them():
    q_network = dqn.QNetwork(5, 6, hidden=8)
    mask = np.tile(np.array([0, 1, 0, 1, 1, 0], np.int8), (2000, 1))
    actions = dqn.act(q_network, np.zeros((2000, 5), np.float32), mask, 1.0,
                      np.random.default_rng(0))
    assert set(actions.tolist()) == {1, 3, 4}
