"""Ray RLlib's stock PPO (new API stack) as a benchmark baseline.

The task's ``Qwinto-v0`` env, its observation renamed to what RLlib's own action-masking
module wants (:class:`MaskedObservation`), trained by ``PPOConfig()`` with RLlib's
example ``ActionMaskingTorchRLModule`` (a default PPO module: separate 256-256 tanh MLPs
for policy and value; illegal logits pushed to ``FLOAT_MIN`` in sampling, inference and
the loss). Everything else is RLlib's default; the changes and why:

==================================  ======  ============  ==============================
setting                             RLlib   here          why
==================================  ======  ============  ==============================
``num_env_runners``                 2       0             sample in the driver: 2 cores,
                                                          and one process keeps a run
                                                          seeded
``num_envs_per_env_runner``         1       8             one forward pass for 8 games:
                                                          RLlib's per-step overhead
                                                          dominates with 1
``train_batch_size_per_learner``    4,000   min(4,000,    a budget under one batch is
                                            steps)        not overshot
``minibatch_size``                  128     min(128,      (the same)
                                            batch)
==================================  ======  ============  ==============================

PPO itself is untouched (``lr`` 5e-5, 30 epochs, ``gamma`` 0.99, ``lambda`` 1.0, clip 0.3,
KL penalty on, no entropy bonus). Steps are env steps of ``Qwinto-v0``: one per learner
decision, as the benchmark counts them; training stops at the first PPO iteration that
reaches ``steps``. The returned agent plays the policy's greedy action
(:class:`~agents.benchmark.algorithms.common.ModuleAgent` over the module's logits).

Ray: a local instance with 2 CPUs is started when none is running and shut down when
``train`` ends, by return or by error; a running instance (the caller's) is used and left
running. Same seed, same thread count: the same agent (checked by the tests).
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from .common import ModuleAgent

__all__ = ["FAMILY", "MASKS", "LIBRARY", "NEEDS", "train", "MaskedObservation", "ppo_config",
           "module_agent"]

FAMILY = "policy gradient"
MASKS = "logits masked (RLlib's example ActionMaskingTorchRLModule)"
LIBRARY = "Ray RLlib PPO (new API stack), stock settings"
NEEDS = ("ray", "rllib")

#: RLlib's default batch and minibatch (agent steps), capped by the budget
_BATCH, _MINIBATCH = 4000, 128
_ENVS_PER_RUNNER = 8
_RAY_CPUS = 2


class MaskedObservation(gym.ObservationWrapper):
    """``{"observation", "action_mask"}`` (int8) as ``{"observations", "action_mask"}``
    (float32): the keys and dtype of RLlib's ``ActionMaskingTorchRLModule``."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        self.observation_space = gym.spaces.Dict({
            "observations": space["observation"],
            "action_mask": gym.spaces.Box(0.0, 1.0, space["action_mask"].shape, np.float32)})

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"observations": observation["observation"],
                "action_mask": observation["action_mask"].astype(np.float32)}


def ppo_config(task: Any, seed: int, steps: int) -> Any:
    """The ``PPOConfig`` of a run (see the module's table)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import \
        ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    # RLlib takes an env class or a registered name, not a function
    name = f"qwinto-benchmark-{task.id}"
    register_env(name, lambda _: MaskedObservation(task.make_env()))
    batch = min(_BATCH, steps)
    return (
        PPOConfig()
        .environment(name)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=_ENVS_PER_RUNNER)
        .training(train_batch_size_per_learner=batch, minibatch_size=min(_MINIBATCH, batch))
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ActionMaskingTorchRLModule))
        .debugging(seed=seed, log_level="ERROR")
    )


def module_agent(module: Any, task: Any) -> ModuleAgent:
    """A copy of ``module`` (an ``ActionMaskingTorchRLModule``) as a deterministic agent:
    its logits for an all-legal mask, which :class:`ModuleAgent` then masks."""
    from ray.rllib.core.columns import Columns

    module = copy.deepcopy(module).eval()
    num_actions = int(module.action_space.n)

    def scores(observations: torch.Tensor) -> torch.Tensor:
        mask = torch.ones(observations.shape[0], num_actions)
        batch = {Columns.OBS: {"observations": observations, "action_mask": mask}}
        return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]

    return ModuleAgent(scores, task.game, task.num_players, name="rllib-ppo")


def train(task: Any, seed: int, steps: int, workdir: Any, progress: Any) -> ModuleAgent:
    """Train stock RLlib PPO on ``task`` for ``steps`` learner steps (the contract of
    :mod:`agents.benchmark.algorithms`); ``workdir`` is not used (no checkpoints)."""
    import ray
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    if steps < 1:
        raise ValueError(f"rllib-ppo: steps must be at least 1, got {steps}")
    own_ray = not ray.is_initialized()
    if own_ray:
        ray.init(num_cpus=_RAY_CPUS, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    try:
        algo = ppo_config(task, seed, steps).build_algo()
        try:
            done = 0
            while done < steps:
                result = algo.train()
                done = int(result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])
                progress.update(done, lambda: module_agent(algo.get_module(), task))
            return module_agent(algo.get_module(), task)
        finally:
            algo.stop()
    finally:
        if own_ray:
            ray.shutdown()
