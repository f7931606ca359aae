"""Tianshou's multi-agent DQN on Qwinto's AEC env: a learner against a masked-random seat.

    python examples/tianshou_dqn.py --game dice --epochs 10 --epoch-steps 5000
    python examples/tianshou_dqn.py --game cards --seed 1

As Tianshou's PettingZoo tic-tac-toe example does: ``tianshou.env.PettingZooEnv`` around
``qwinto_env.env(...)`` (the AEC view), a ``DQN`` learner in the first seat and
``MARLRandomDiscreteMaskedOffPolicyAlgorithm`` in the second, together in a
``MultiAgentOffPolicyAlgorithm``, trained by its ``run_training``. What Qwinto needs:

* The masks: ``PettingZooEnv`` turns the observation's ``action_mask`` into
  ``obs.mask``, which DQN applies to its Q-values and to its epsilon-greedy exploration,
  so both seats only play legal actions (the env keeps ``illegal_action="raise"``).
* The infos: Tianshou's replay buffer stores every step's info as arrays and refuses one
  whose shape changes, as the default infos' tuples do (the dice rolled, the cards
  played); ``infos="numeric"`` gives only numbers of fixed shapes
  (:mod:`qwinto_env.parallel`, Infos), which the buffer keeps.
* ``random_start=True`` draws the first active player of every game, so the learner is
  not always the one who rolls first.

Then the learner's Q-network plays ``--games`` games against ``"random"`` through
:func:`agents.evaluate.play` (seats rotated, masked argmax) and the result is printed.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch
from tianshou.algorithm import (DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm,
                                MultiAgentOffPolicyAlgorithm)
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

import qwinto_env
from agents.benchmark.algorithms.common import ModuleAgent
from agents.evaluate import format_table, play, summarise


def make_env(game: str) -> PettingZooEnv:
    return PettingZooEnv(qwinto_env.env(game=game, num_players=2, reward="score",
                                        random_start=True, infos="numeric"))


def make_algorithm(env: PettingZooEnv, args: argparse.Namespace) -> MultiAgentOffPolicyAlgorithm:
    """The DQN learner (seat 0) and the masked-random opponent (seat 1)."""
    net = Net(state_shape=env.observation_space["observation"].shape,
              action_shape=env.action_space.n, hidden_sizes=[args.hidden, args.hidden])
    learner = DQN(policy=DiscreteQLearningPolicy(model=net, action_space=env.action_space,
                                                 eps_training=0.1, eps_inference=0.0),
                  optim=AdamOptimizerFactory(lr=args.lr), gamma=0.99, n_step_return_horizon=3,
                  target_update_freq=320)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    return MultiAgentOffPolicyAlgorithm(algorithms=[learner, opponent], env=env)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, evaluate against ``"random"``, print; returns the learner's summary row."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", choices=["dice", "cards"], default="dice")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--epoch-steps", type=int, default=5000, help="env steps per epoch")
    parser.add_argument("--envs", type=int, default=4, help="training envs (DummyVectorEnv)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=100, help="evaluation games vs random")
    args = parser.parse_args(argv)
    counts = ["epochs", "epoch_steps", "envs", "batch_size", "hidden", "games"]
    if min(getattr(args, name) for name in counts) < 1:
        parser.error("--epochs, --epoch-steps, --envs, --batch-size, --hidden and --games "
                     "must be positive")
    if not 0 <= args.seed < 2**32:  # what numpy's global seeding takes
        parser.error(f"--seed must be in 0..{2**32 - 1}, got {args.seed}")

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    train_envs = DummyVectorEnv([lambda: make_env(args.game) for _ in range(args.envs)])
    test_envs = DummyVectorEnv([lambda: make_env(args.game)])
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + args.envs)
    algorithm = make_algorithm(make_env(args.game), args)
    train_collector = Collector[CollectStats](
        algorithm, train_envs, VectorReplayBuffer(20_000, args.envs), exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.batch_size * args.envs)
    algorithm.run_training(OffPolicyTrainerParams(
        training_collector=train_collector,
        test_collector=Collector[CollectStats](algorithm, test_envs),
        max_epochs=args.epochs, epoch_num_steps=args.epoch_steps,
        collection_step_num_env_steps=10, test_step_num_episodes=2,
        batch_size=args.batch_size, update_step_num_gradient_steps_per_sample=0.1,
        multi_agent_return_reduction=lambda returns: returns[:, 0],  # the learner's
        verbose=False, show_progress=False))

    net = algorithm.get_algorithm("player_0").policy.model
    agent = ModuleAgent(lambda obs: net(obs)[0], args.game, 2, name="tianshou-dqn")
    summary = summarise(play([agent, "random"], game=args.game, num_players=2,
                             games=args.games, seed=args.seed, progress=False))
    print(f"Tianshou DQN on the {args.game} game, {args.epochs} x {args.epoch_steps:,} env "
          f"steps (seed {args.seed}); {args.games} games against random:")
    print(format_table(summary))
    return summary["agents"][0]


if __name__ == "__main__":
    main()
