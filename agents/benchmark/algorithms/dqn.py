"""Masked DQN in the style of CleanRL's ``dqn.py``: one file read top to bottom.

No well-kept library with a masked DQN is installed: Stable-Baselines3's ``DQN`` takes no
action mask, and Tianshou (whose DQN reads ``obs.mask``) is not a dependency. So this is
our own, with the mask honoured in every place a DQN picks or scores an action:

* **acting**: epsilon-greedy over the legal actions only (the random branch draws
  uniformly among them, the greedy branch takes the best legal Q-value);
* **learning**: the replay buffer stores the next state's mask, and the TD target's max
  runs over the next state's legal actions only (:func:`td_target`); illegal actions
  never get a target of their own, they are simply never chosen;
* **Double DQN**: the online network picks the next action (among the legal ones), the
  target network scores it; it removes the max's upward bias that Qwinto's noisy dice
  rewards otherwise feed.

The envs are ``config.num_envs`` copies of ``task.make_env()`` in a ``SyncVectorEnv``
with Gymnasium's **same-step** autoreset (Gymnasium >= 1.1): the observation returned
with ``terminated`` is already the next episode's, the finished one's last observation is
in ``infos["final_obs"]``. Every vector step is then ``num_envs`` real learner decisions,
which is what the budget counts (the default next-step mode spends one step call per
finished episode on the reset). A run takes ``ceil(steps / num_envs)`` vector steps, so
it may overshoot ``steps`` by less than ``num_envs``.

Hyperparameters (:class:`Config`; the defaults are the benchmark's: CleanRL's values with
the exploration, warm-up and target period scaled down for a CPU budget, one gradient step
of 128 per 8 new transitions; they were set when that budget was 200,000 steps and kept
on the tasks' 50,000-step CPU budget, where the table's rows ran: the warm-up is then a
tenth of the run and epsilon falls over its first 20,000 steps):

==============================  ==========  ============================================
field                           default     meaning
==============================  ==========  ============================================
``num_envs``                    8           envs stepped together (one action each)
``buffer_size``                 100,000     transitions kept in the replay buffer
``learning_rate``               2.5e-4      Adam's step size
``gamma``                       0.99        discount
``hidden``                      256         width of the Q-network's two hidden layers
``batch_size``                  128         transitions per gradient step
``learning_starts``             5,000       learner steps of pure exploration first
``train_frequency``             1           vector steps between gradient steps
``target_network_frequency``    250         gradient steps between target updates
``start_e``, ``end_e``          1.0, 0.05   epsilon's linear schedule ...
``exploration_fraction``        0.4         ... over this fraction of the budget
``double``                      ``True``    Double DQN target
==============================  ==========  ============================================

Reproducibility: the network's initial weights come from ``torch.manual_seed(seed)``
(inside ``torch.random.fork_rng``, so the caller's torch generator is left alone), every
other draw (exploration, replay sampling) from ``numpy.random.default_rng(seed)``, and
the envs from ``reset(seed=seed)``. Same seed, same thread count: the same agent.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from . import Progress
from .common import ModuleAgent

__all__ = ["FAMILY", "MASKS", "LIBRARY", "min_steps", "Config", "QNetwork", "ReplayBuffer",
           "td_target", "epsilon", "act", "train"]

FAMILY = "value-based"
MASKS = ("Q-values masked: epsilon-greedy over legal actions, "
         "target max over the next state's legal actions")
LIBRARY = "own (CleanRL-style dqn.py; SB3's DQN takes no masks)"


@dataclasses.dataclass(frozen=True)
class Config:
    """DQN's hyperparameters; see the module's table."""

    num_envs: int = 8
    buffer_size: int = 100_000
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    hidden: int = 256
    batch_size: int = 128
    learning_starts: int = 5_000
    train_frequency: int = 1
    target_network_frequency: int = 250
    start_e: float = 1.0
    end_e: float = 0.05
    exploration_fraction: float = 0.4
    double: bool = True


class QNetwork(nn.Module):
    """Observation ``(B, obs)`` -> one Q-value per action ``(B, A)``."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int):
        super().__init__()
        self.network = nn.Sequential(
            nn.Linear(obs_size, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, num_actions))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


class ReplayBuffer:
    """A ring of transitions ``(obs, action, reward, next_obs, next_mask, done)``, numpy
    arrays allocated up front; ``next_mask`` is the next state's legal actions (bool)."""

    def __init__(self, size: int, obs_size: int, num_actions: int):
        self.obs = np.zeros((size, obs_size), np.float32)
        self.next_obs = np.zeros((size, obs_size), np.float32)
        self.next_mask = np.zeros((size, num_actions), bool)
        self.action = np.zeros(size, np.int64)
        self.reward = np.zeros(size, np.float32)
        self.done = np.zeros(size, np.float32)
        self.size, self.pos, self.full = size, 0, False

    def add(self, obs, action, reward, next_obs, next_mask, done) -> None:
        """Append a batch of transitions (one per env), overwriting the oldest."""
        idx = (self.pos + np.arange(len(action))) % self.size
        self.obs[idx], self.action[idx], self.reward[idx] = obs, action, reward
        self.next_obs[idx], self.next_mask[idx], self.done[idx] = next_obs, next_mask, done
        self.full = self.full or self.pos + len(action) >= self.size
        self.pos = int(idx[-1] + 1) % self.size

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
        idx = rng.integers(self.size if self.full else self.pos, size=batch_size)
        return {name: torch.as_tensor(getattr(self, name)[idx])
                for name in ("obs", "action", "reward", "next_obs", "next_mask", "done")}


def min_steps(task: Any) -> int:
    """The first gradient step comes after ``learning_starts`` steps of exploration."""
    return Config().learning_starts + 1


def td_target(reward: torch.Tensor, done: torch.Tensor, next_mask: torch.Tensor,
              next_q_target: torch.Tensor, next_q_online: torch.Tensor | None,
              gamma: float) -> torch.Tensor:
    """``r + gamma * (1 - done) * Q_target(s', a*)``, ``a*`` the best **legal** action of
    ``s'`` by ``next_q_online`` (Double DQN) or, when it is ``None``, by ``next_q_target``
    itself (plain DQN: the max over the legal actions). A terminal ``s'`` (``done``) adds
    nothing, whatever its mask."""
    chooser = next_q_target if next_q_online is None else next_q_online
    best = chooser.masked_fill(~next_mask, -torch.inf).argmax(1, keepdim=True)
    value = next_q_target.gather(1, best).squeeze(1)
    return reward + gamma * (1.0 - done) * value


def epsilon(config: Config, steps_done: int, steps: int) -> float:
    """CleanRL's linear schedule: ``start_e`` to ``end_e`` over the first
    ``exploration_fraction`` of the budget, then flat."""
    duration = max(1.0, config.exploration_fraction * steps)
    slope = (config.end_e - config.start_e) / duration
    return max(config.end_e, config.start_e + slope * steps_done)


def act(q_network: QNetwork, obs: np.ndarray, mask: np.ndarray, eps: float,
        rng: np.random.Generator) -> np.ndarray:
    """Epsilon-greedy over the legal actions: each row explores with probability ``eps``
    (a uniform legal action: the argmax of uniform noise on the legal entries), else plays
    its best legal Q-value."""
    legal = mask.astype(bool)
    with torch.no_grad():
        q = q_network(torch.as_tensor(obs)).masked_fill(~torch.as_tensor(legal), -torch.inf)
    greedy = q.argmax(1).numpy()
    explore = np.where(legal, rng.random(legal.shape), -1.0).argmax(1)
    return np.where(rng.random(len(obs)) < eps, explore, greedy)


def train(task: Any, seed: int, steps: int, workdir: str | os.PathLike,
          progress: Progress, config: Config = Config()) -> ModuleAgent:
    """Train a masked DQN on ``task`` for ``steps`` learner steps (see the module
    docstring); writes the final Q-network's weights to ``workdir/q_network.pt``."""
    envs = gym.vector.SyncVectorEnv([task.make_env] * config.num_envs,
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    obs_size = envs.single_observation_space["observation"].shape[0]
    num_actions = int(envs.single_action_space.n)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        q_network = QNetwork(obs_size, num_actions, config.hidden)
    target_network = copy.deepcopy(q_network)
    optimizer = torch.optim.Adam(q_network.parameters(), lr=config.learning_rate)
    buffer = ReplayBuffer(config.buffer_size, obs_size, num_actions)
    rng = np.random.default_rng(seed)

    def make_agent() -> ModuleAgent:
        return ModuleAgent(copy.deepcopy(q_network).eval(), task.game, task.num_players, "dqn")

    obs, _ = envs.reset(seed=seed)
    steps_done, updates = 0, 0
    for iteration in range(-(-steps // config.num_envs)):
        eps = epsilon(config, steps_done, steps)
        actions = act(q_network, obs["observation"], obs["action_mask"], eps, rng)
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        real_next = _final_observations(next_obs, infos, terminations | truncations)
        buffer.add(obs["observation"], actions, rewards, real_next["observation"],
                   real_next["action_mask"].astype(bool), terminations)
        obs, steps_done = next_obs, steps_done + config.num_envs

        if steps_done > config.learning_starts and iteration % config.train_frequency == 0:
            _gradient_step(q_network, target_network, optimizer,
                           buffer.sample(config.batch_size, rng), config)
            updates += 1
            if updates % config.target_network_frequency == 0:
                target_network.load_state_dict(q_network.state_dict())
        progress.update(steps_done, make_agent)
    envs.close()
    torch.save(q_network.state_dict(), os.path.join(workdir, "q_network.pt"))
    return make_agent()


def _final_observations(next_obs: dict[str, np.ndarray], infos: dict[str, Any],
                        ended: np.ndarray) -> dict[str, np.ndarray]:
    """``next_obs`` with each finished env's row replaced by its episode's last
    observation (same-step autoreset already put the next episode's first one there)."""
    real = {key: value.copy() for key, value in next_obs.items()}
    for i in np.flatnonzero(ended):
        for key in real:
            real[key][i] = infos["final_obs"][i][key]
    return real


def _gradient_step(q_network: QNetwork, target_network: QNetwork,
                   optimizer: torch.optim.Optimizer, batch: dict[str, torch.Tensor],
                   config: Config) -> None:
    """One Adam step on the mean squared TD error of a replay batch."""
    with torch.no_grad():
        next_q_online = q_network(batch["next_obs"]) if config.double else None
        target = td_target(batch["reward"], batch["done"], batch["next_mask"],
                           target_network(batch["next_obs"]), next_q_online, config.gamma)
    predicted = q_network(batch["obs"]).gather(1, batch["action"][:, None]).squeeze(1)
    loss = nn.functional.mse_loss(predicted, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
