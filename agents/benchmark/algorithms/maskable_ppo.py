"""sb3-contrib's MaskablePPO, stock: the baseline a Stable-Baselines3 user would write.

==================  ================================================================
environment         4 x the task's ``Qwinto-v0`` (:meth:`Task.make_env`) in a
                    ``DummyVecEnv``, the observation only (``FilterObservation`` +
                    ``FlattenObservation``: a flat ``Box``, so ``"MlpPolicy"``; the
                    mask is not an input)
masks               the env's ``action_masks()``, which MaskablePPO finds through
                    the wrappers: illegal logits masked in sampling, log-probs,
                    entropy, and in the returned agent
hyperparameters     MaskablePPO's defaults (``MlpPolicy`` [64, 64] tanh, lr 3e-4
                    constant, 10 epochs, minibatch 64, gamma 0.99, GAE 0.95, clip
                    0.2, no entropy bonus), except ``n_steps=512``: 4 envs x 512 =
                    the default's 2,048 steps per update; on the CPU (SB3 advises it
                    for an MLP policy)
budget              updates use whole rollouts only: the steps of a rollout cut short
                    by the budget are collected (and counted) but not trained on, so
                    the agent never learns from more than ``steps``
agent               :class:`~agents.benchmark.algorithms.common.ModuleAgent` over a
                    copy of the actor: the legal action with the highest logit
logs                none: the cell's result holds its curve (SB3's default logger
                    would leave an empty ``SB3-<time>`` folder in the system temp
                    folder per cell)
==================  ================================================================

``SubprocVecEnv`` was not used: on a 2-core machine the workers only compete with the
learner (the env runs in Python, the expert opponent most of its time).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import gymnasium
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv
from torch import nn

from .common import ModuleAgent

__all__ = ["FAMILY", "MASKS", "LIBRARY", "NUM_ENVS", "N_STEPS", "min_steps", "train",
           "make_vec_env", "policy_agent"]

FAMILY = "policy gradient"
MASKS = "logits masked (action_masks)"
LIBRARY = "sb3-contrib MaskablePPO"

NUM_ENVS = 4
N_STEPS = 512  # per env: NUM_ENVS * N_STEPS = MaskablePPO's default 2,048 per update


def min_steps(task: Any) -> int:
    """One rollout of every env: MaskablePPO's first update."""
    return NUM_ENVS * N_STEPS


def make_vec_env(task: Any, num_envs: int = NUM_ENVS) -> DummyVecEnv:
    """``num_envs`` of the task's training envs, each observing the flat observation."""
    def make() -> gymnasium.Env:
        env = gymnasium.wrappers.FilterObservation(task.make_env(), ["observation"])
        return gymnasium.wrappers.FlattenObservation(env)
    return DummyVecEnv([make] * num_envs)


def policy_agent(model: MaskablePPO, task: Any) -> ModuleAgent:
    """The model's actor as it is now (a copy on the CPU) as a deterministic agent."""
    policy = model.policy
    # The actor's modules only: the policy also holds the last update's distribution,
    # whose tensors are not graph leaves and cannot be copied.
    actor = copy.deepcopy(nn.Sequential(policy.pi_features_extractor,
                                        policy.mlp_extractor.policy_net, policy.action_net))
    return ModuleAgent(actor.cpu().eval().requires_grad_(False), task.game, task.num_players,
                       name="maskable-ppo")


class _Report(BaseCallback):
    """Reports the steps to ``progress`` after every vector step; stops at the budget."""

    def __init__(self, task: Any, steps: int, progress: Any):
        super().__init__()
        self.task, self.steps, self.progress = task, steps, progress

    def _on_step(self) -> bool:
        done = self.model.num_timesteps
        self.progress.update(done, lambda: policy_agent(self.model, self.task))
        # False ends learn() before the update, so a rollout cut short is not trained on;
        # one that the budget ends exactly is
        return done < self.steps or done % (NUM_ENVS * N_STEPS) == 0


def train(task: Any, seed: int, steps: int, workdir: str | Path, progress: Any) -> ModuleAgent:
    """MaskablePPO on ``task`` for at most ``steps`` learner steps (module docstring); the
    model is saved to ``workdir/maskable_ppo.zip``."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    model = MaskablePPO("MlpPolicy", make_vec_env(task), n_steps=N_STEPS, seed=seed, verbose=0,
                        device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    # learn() also stops at a whole rollout past `steps`; the callback stops it first
    model.learn(steps, callback=_Report(task, steps, progress))
    model.save(Path(workdir) / "maskable_ppo.zip")
    agent = policy_agent(model, task)
    progress.update(model.num_timesteps, lambda: agent)
    return agent
