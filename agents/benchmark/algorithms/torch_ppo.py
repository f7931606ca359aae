"""The project's torch PPO (:mod:`agents.trainers.torch_ppo`) as a benchmark baseline.

Trained from scratch (no imitation warm start, no snapshots, no self-play) against the
task's opponents, with the shipped default config (``configs/default.yaml``) otherwise,
except the settings below:

======================  ========  ===============================================
field                   value     why
======================  ========  ===============================================
``env.num_games``       64        4,096 learner steps per update (default: 16,384),
                                  a dozen updates on the CPU budget (at 16 games, 48
                                  smaller updates learned less: 12% against
                                  ``greedy`` instead of 33%, dice-2p-v0, 400 games)
``ppo.ent_coef``        0.01      a policy from scratch needs exploration (the
                                  default 0 is for the warm-started one)
``run.torch_threads``   torch's   fixed, so that a seed gives the same agent
======================  ========  ===============================================
"""

from __future__ import annotations

from pathlib import Path

import torch

from ...base import Agent
from ...policy import PolicyAgent
from ...trainers.config import load_config
from ...trainers.run import Run
from ...trainers.torch_ppo import train as train_ppo
from . import Progress

FAMILY = "policy gradient"
MASKS = "logits masked"
LIBRARY = "this project (agents.trainers.torch_ppo)"


def config(task, seed: int, steps: int):
    """The trainer config of a benchmark run (see the module's table)."""
    opponents = sorted(set(task.opponents))
    scripted = "{" + ", ".join(f"{name}: 1.0" for name in opponents) + "}"
    return load_config("default", [
        f"run.name=ppo", f"run.seed={seed}", f"run.total_steps={steps}", "run.device=cpu",
        f"run.checkpoint_every={steps}", f"run.torch_threads={torch.get_num_threads()}",
        f"env.game={task.game}", f"env.num_players={task.num_players}",
        f"env.reward={task.reward}", "env.num_games=64", "ppo.ent_coef=0.01",
        "imitation.games=0", "opponents.snapshots=0",
        f"opponents.self_play={0.0 if opponents else 1.0}", f"opponents.scripted={scripted}",
        "eval.every=0"])


def min_steps(task) -> int:
    """One PPO update: a rollout of every game the trainer plays side by side."""
    cfg = config(task, 0, 10 ** 9)
    return cfg.ppo.rollout_steps * cfg.env.num_games


def train(task, seed: int, steps: int, workdir: Path, progress: Progress) -> Agent:
    cfg = config(task, seed, steps)
    run = Run(cfg, root=workdir)

    def agent_of(network) -> Agent:
        return PolicyAgent(network, game=task.game, num_players=task.num_players)

    run.observers.append(lambda step, policy: progress.update(step, lambda: agent_of(policy())))
    try:
        network = train_ppo(cfg, run, progress=False)
    finally:
        run.close()
    progress.update(max(progress.steps, steps), lambda: agent_of(network))
    return agent_of(network)
