"""Stock RLlib PPO (new API stack) on the Qwinto PettingZoo env, by self-play.

    python examples/rllib_ppo.py [--game dice] [--players 2] [--iterations 5]
        [--timesteps N] [--batch-size 4000] [--reward score] [--seed 0] [--eval-games 200]

Needs the ``rllib`` extra (``pip install -e ".[rllib]"``). What it takes to run RLlib's
stock pieces on this env:

* RLlib's default PPO module has no encoder for a ``Dict`` observation ("No default
  encoder config"). RLlib ships an action-masking module among its examples,
  ``ActionMaskingTorchRLModule``: a default PPO module whose logits of illegal actions
  are pushed to ``FLOAT_MIN``, in sampling and in the loss. It wants the observation
  ``{"observations": ..., "action_mask": ...}``; ours is ``{"observation",
  "action_mask"}``, so :class:`MaskKeys` renames the key (a PettingZoo wrapper).
* RLlib's ``ParallelPettingZooEnv`` turns the ParallelEnv into a ``MultiAgentEnv``. It
  asks every agent for an action every step, also when the pass is its only legal action
  (about half of the samples); masked, those carry no gradient, they only cost time.
  ``agents/trainers/rllib_env.py`` has an adapter that plays them itself.
* RLlib's env checker steps random actions that ignore the mask, which the env refuses
  (``IllegalActionError``): it is turned off. The env still raises on any illegal
  action, so a masking bug stops the run.
* Every seat maps to one module, ``"shared"``: self-play with shared parameters; the
  start player is drawn at every reset. Everything else is RLlib's default PPO,
  ``--batch-size`` aside (RLlib's default: 4,000 env steps per update, each with a
  sample of every seat).

At the end the shared policy, played greedily, meets ``"random"`` in
``agents.evaluate.play`` (seats rotated).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import ray
import torch
from pettingzoo.utils.wrappers import BaseParallelWrapper
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
from ray.tune.registry import register_env

from agents.benchmark.algorithms.common import ModuleAgent
from agents.evaluate import format_table, play, summarise
from qwinto_env import parallel_env

MODULE = "shared"


class MaskKeys(BaseParallelWrapper):
    """The observation ``{"observation", "action_mask"}`` as ``{"observations",
    "action_mask"}`` (float32 mask): what ``ActionMaskingTorchRLModule`` reads."""

    def observation_space(self, agent):
        space = self.env.observation_space(agent)
        return gym.spaces.Dict({
            "observations": space["observation"],
            "action_mask": gym.spaces.Box(0.0, 1.0, space["action_mask"].shape, np.float32)})

    @staticmethod
    def _rename(observations):
        return {agent: {"observations": o["observation"],
                        "action_mask": o["action_mask"].astype(np.float32)}
                for agent, o in observations.items()}

    def reset(self, seed=None, options=None):
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._rename(observations), infos

    def step(self, actions):
        observations, *rest = self.env.step(actions)
        return (self._rename(observations), *rest)


def make_env(config):
    """RLlib's env creator: ``config`` holds ``parallel_env``'s keyword arguments."""
    return ParallelPettingZooEnv(MaskKeys(parallel_env(random_start=True, **config)))


def build(args):
    register_env("qwinto", make_env)
    return (
        PPOConfig()
        .environment("qwinto", disable_env_checking=True, env_config={
            "game": args.game, "num_players": args.players, "reward": args.reward})
        .env_runners(num_env_runners=0)  # sample in the driver: fits 2 cores
        .training(train_batch_size_per_learner=args.batch_size,
                  minibatch_size=min(128, args.batch_size))
        .multi_agent(policies={MODULE}, policy_mapping_fn=lambda agent_id, episode, **kw: MODULE)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            MODULE: RLModuleSpec(module_class=ActionMaskingTorchRLModule)}))
        .debugging(seed=args.seed, log_level="ERROR")
        .build_algo()
    )


def greedy_agent(module, game, players):
    """The module's greedy policy as an ``agents`` Agent (ModuleAgent masks the logits)."""
    def scores(observations):
        mask = torch.ones(observations.shape[0], module.action_space.n)
        batch = {Columns.OBS: {"observations": observations, "action_mask": mask}}
        return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    return ModuleAgent(scores, game, players, name="rllib-ppo")


def train(algo, args):
    steps, iteration = 0, 0
    while iteration < args.iterations and (args.timesteps is None or steps < args.timesteps):
        started = time.perf_counter()
        result = algo.train()
        iteration += 1
        runners = result["env_runners"]
        steps = int(runners["num_env_steps_sampled_lifetime"])
        # per seat: RLlib's per-module mean sums the seats that share the module
        returns = np.mean(list(runners.get("agent_episode_returns_mean", {}).values()) or [np.nan])
        print(f"iteration {iteration}: {steps:,} env steps, mean return per seat "
              f"{returns:6.2f}, {time.perf_counter() - started:5.1f} s", flush=True)


def check_arguments(parser, args):
    """Usage errors for what would fail only once Ray runs (a bad --players inside RLlib's
    env runner, a negative seed in its numpy seeding) or after training (--eval-games 0),
    or would train on nothing (--batch-size 0)."""
    timesteps = 1 if args.timesteps is None else args.timesteps
    if min(args.iterations, args.batch_size, args.eval_games, timesteps) < 1:
        parser.error("--iterations, --timesteps, --batch-size and --eval-games must be positive")
    if not 0 <= args.seed < 2**32:
        parser.error(f"--seed must be in 0..{2**32 - 1}, got {args.seed}")
    try:
        parallel_env(game=args.game, num_players=args.players)
    except ValueError as exc:
        parser.error(f"--players: {exc}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="dice", choices=["dice", "cards"])
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--reward", default="score", choices=["win", "margin", "score"])
    parser.add_argument("--iterations", type=int, default=5, help="PPO iterations at most")
    parser.add_argument("--timesteps", type=int, default=None,
                        help="stop once this many env steps are sampled")
    parser.add_argument("--batch-size", type=int, default=4000,
                        help="env steps per PPO update (RLlib's default; every seat samples each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-games", type=int, default=200)
    args = parser.parse_args()
    check_arguments(parser, args)
    torch.set_num_threads(1)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        algo = build(args)
        try:
            train(algo, args)
            agent = greedy_agent(algo.get_module(MODULE), args.game, args.players)
        finally:
            algo.stop()
    finally:
        ray.shutdown()
    opponents = ["random"] * (args.players - 1)
    results = play([agent, *opponents], game=args.game, num_players=args.players,
                   games=args.eval_games, seed=args.seed, progress=False)
    print(f"\nthe greedy policy against random, {args.eval_games} games:")
    print(format_table(summarise(results)))


if __name__ == "__main__":
    main()
