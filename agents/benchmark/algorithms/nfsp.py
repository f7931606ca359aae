"""NFSP (Heinrich and Silver, 2016): the benchmark's multi-agent baseline, by self-play.

OpenSpiel's own PyTorch NFSP (:mod:`open_spiel.python.pytorch.nfsp`) plays every seat of
the task's game as an OpenSpiel game (:mod:`qwinto_env.openspiel`, ``random_start=True``)
in ``open_spiel.python.rl_environment.Environment``. It trains by self-play, not against the
task's opponents (the task's ``opponents`` are what it is evaluated against).

=========================  ===================================================================
choice                     value
=========================  ===================================================================
seats                      one NFSP agent per seat, networks not shared (OpenSpiel's NFSP
                           as published); the seats are alike (ego-centric observation,
                           random start player), and seat 0's average policy is returned
steps                      decisions: a seat with one legal action (pass) is played for it
                           and not counted, and its agent is not called; the rewards of
                           such steps are added to its next decision's reward
reward                     the task's (``score``: the change of the own score each step)
returned agent             :class:`~agents.benchmark.algorithms.common.ModuleAgent` over the
                           average-policy network (the policy NFSP plays at test time),
                           greedy: the legal action with the highest logit
hyperparameters            :data:`HYPERPARAMETERS` (OpenSpiel's Leduc example, with Adam,
                           two hidden layers and faster target updates, set for a
                           200,000-step budget and kept on the tasks' 50,000-step CPU
                           budget, where the table's rows ran: epsilon's decay, 100,000
                           steps, outlasts it)
=========================  ===================================================================

OpenSpiel's NFSP draws from numpy's and torch's global generators: ``train`` seeds both
(same seed, same agent). ``workdir`` receives ``nfsp_average_policy.pt`` (the state dict).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..tasks import Task
from . import Progress
from .common import ModuleAgent

FAMILY = "multi-agent (neural fictitious self-play)"
MASKS = "logits masked (OpenSpiel's NFSP and DQN mask illegal actions)"
LIBRARY = "OpenSpiel NFSP (open_spiel.python.pytorch.nfsp)"
NEEDS = ("open_spiel", "benchmark")

#: Keyword arguments of OpenSpiel's ``nfsp.NFSP`` (the inner DQN takes the last five).
HYPERPARAMETERS: dict[str, Any] = {
    "hidden_layers_sizes": [256, 256],
    "reservoir_buffer_capacity": 200_000,
    "anticipatory_param": 0.1,
    "batch_size": 128,
    "rl_learning_rate": 1e-3,
    "sl_learning_rate": 1e-3,
    "min_buffer_size_to_learn": 1_000,
    "learn_every": 16,
    "optimizer_str": "adam",
    "replay_buffer_capacity": 100_000,
    "update_target_network_every": 1_000,
    "epsilon_start": 0.06,
    "epsilon_end": 0.001,
    "epsilon_decay_duration": 100_000,
}


def min_steps(task: Task) -> int:
    """Each seat's agent learns once its buffer holds ``min_buffer_size_to_learn``
    decisions and then every ``learn_every``; the seats share the steps about equally."""
    h = HYPERPARAMETERS
    return task.num_players * (h["min_buffer_size_to_learn"] + h["learn_every"])


def _agents(env: Any, seed: int) -> list:
    from open_spiel.python.pytorch import nfsp

    size = env.observation_spec()["info_state"][0]
    actions = env.action_spec()["num_actions"]
    return [nfsp.NFSP(p, size, actions, seed=seed + 100 * p, **HYPERPARAMETERS)
            for p in range(env.num_players)]


def _for_seat(time_step: Any, seat: int, reward: float) -> Any:
    """``time_step`` with ``seat``'s reward replaced by what it earned since its last decision."""
    rewards = list(time_step.rewards or [0.0] * len(time_step.observations["legal_actions"]))
    rewards[seat] = float(reward)
    return time_step._replace(rewards=rewards)


def _episode(env: Any, agents: list) -> int:
    """One self-play game (every agent learning); the number of decisions in it."""
    time_step = env.reset()
    earned = np.zeros(len(agents))
    decisions = 0
    while not time_step.last():
        joint = []
        for seat, agent in enumerate(agents):
            legal = time_step.observations["legal_actions"][seat]
            if len(legal) == 1:
                joint.append(legal[0])
                continue
            joint.append(agent.step(_for_seat(time_step, seat, earned[seat])).action)
            earned[seat] = 0.0
            decisions += 1
        time_step = env.step(joint)
        earned += time_step.rewards
    for seat, agent in enumerate(agents):
        agent.step(_for_seat(time_step, seat, earned[seat]))
    return decisions


def _policy(nfsp_agent: Any, task: Task) -> ModuleAgent:
    """The average-policy network as it is now (a copy: training goes on without it)."""
    network = copy.deepcopy(nfsp_agent._avg_network).eval()
    return ModuleAgent(network, game=task.game, num_players=task.num_players, name="nfsp")


def train(task: Task, seed: int, steps: int, workdir: str | Path,
          progress: Progress | None = None) -> ModuleAgent:
    """NFSP self-play on ``task`` for ``steps`` decisions (all seats); see the module."""
    from open_spiel.python import rl_environment

    from qwinto_env import openspiel

    progress = progress or Progress()
    np.random.seed(seed)
    torch.manual_seed(seed)
    game = openspiel.load(task.game, num_players=task.num_players, reward=task.reward,
                          random_start=True)
    env = rl_environment.Environment(
        game, observation_type=rl_environment.ObservationType.OBSERVATION)
    env.seed(seed)
    agents = _agents(env, seed)
    done = 0
    while done < steps:
        done += _episode(env, agents)
        progress.update(done, lambda: _policy(agents[0], task))
    agent = _policy(agents[0], task)
    torch.save(agent.scores.state_dict(), Path(workdir) / "nfsp_average_policy.pt")
    return agent
