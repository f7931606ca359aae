"""TorchRL's multi-agent PPO on Qwinto's ParallelEnv: one masked policy for both seats.

    python examples/torchrl_ppo.py --game dice --frames 100000
    python examples/torchrl_ppo.py --game cards --seed 1

As TorchRL's multi-agent PPO tutorial does: ``torchrl.envs.PettingZooWrapper`` around
``qwinto_env.parallel_env(...)`` groups the seats as ``"player"`` (tensors of shape
``(2, ...)``), a ``ProbabilisticActor`` and a critic share their parameters across the
seats, a ``Collector`` (TorchRL 0.14's name for ``SyncDataCollector``) gathers
``--frames-per-batch`` steps, and ``ClipPPOLoss`` with GAE trains on them. What Qwinto needs:

* The masks: the wrapper moves the observation's ``action_mask`` to
  ``("player", "action_mask")`` (bool) and the observation to
  ``("player", "observation", "observation")``; the actor's distribution is
  ``MaskedCategorical`` on that mask, so it only samples legal actions (the env keeps
  ``illegal_action="raise"``).
* The infos: the wrapper turns every info value into a tensor, which the default infos'
  strings and nested dicts are not; ``infos="numeric"`` gives only numbers of fixed
  shapes (:mod:`qwinto_env.parallel`, Infos), which land in ``("player", "info")``.
* ``Qwinto-v0`` works unchanged through ``GymWrapper``, with the ``ActionMask`` transform
  reading its ``action_mask`` (``make_single_env``).

Then the policy plays ``--games`` games against ``"random"`` through
:func:`agents.evaluate.play` (seats rotated, masked argmax) and the result is printed.
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium
import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs import GymWrapper, PettingZooWrapper, TransformedEnv
from torchrl.envs.transforms import ActionMask
from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor
from torchrl.objectives import ClipPPOLoss, ValueEstimators

import qwinto_env
from agents.benchmark.algorithms.common import ModuleAgent
from agents.evaluate import format_table, play, summarise

GROUP = "player"  # the wrapper's group of player_0, player_1
OBS, MASK = (GROUP, "observation", "observation"), (GROUP, "action_mask")


def make_env(game: str, seed: int) -> PettingZooWrapper:
    table = qwinto_env.parallel_env(game=game, num_players=2, reward="score", random_start=True,
                                    infos="numeric")
    return PettingZooWrapper(table, categorical_actions=True, seed=seed)


def make_single_env(game: str) -> TransformedEnv:
    """``Qwinto-v0`` (one learner against ``"random"``) in TorchRL, its masks honoured by
    the env's random actions and by a ``MaskedCategorical`` reading ``"action_mask"``."""
    return TransformedEnv(GymWrapper(gymnasium.make("Qwinto-v0", game=game),
                                     categorical_action_encoding=True), ActionMask())


def make_modules(env: PettingZooWrapper,
                 hidden: int) -> tuple[ProbabilisticActor, TensorDictModule]:
    """The masked actor and the critic, each one MLP shared by the seats."""
    obs_size = env.observation_spec[OBS].shape[-1]
    n_actions = env.full_action_spec[GROUP, "action"].space.n
    logits = TensorDictModule(MLP(in_features=obs_size, out_features=n_actions,
                                  num_cells=[hidden] * 2, activation_class=nn.Tanh),
                              in_keys=[OBS], out_keys=[(GROUP, "logits")])
    actor = ProbabilisticActor(logits, in_keys={"logits": (GROUP, "logits"), "mask": MASK},
                               out_keys=[(GROUP, "action")], distribution_class=MaskedCategorical,
                               return_log_prob=True, log_prob_key=(GROUP, "log_prob"))
    critic = TensorDictModule(MLP(in_features=obs_size, out_features=1, num_cells=[hidden] * 2,
                                  activation_class=nn.Tanh),
                              in_keys=[OBS], out_keys=[(GROUP, "state_value")])
    return actor, critic


def make_loss(actor: ProbabilisticActor, critic: TensorDictModule) -> ClipPPOLoss:
    loss = ClipPPOLoss(actor_network=actor, critic_network=critic, entropy_coeff=0.01)
    loss.set_keys(reward=(GROUP, "reward"), action=(GROUP, "action"),
                  sample_log_prob=(GROUP, "log_prob"), value=(GROUP, "state_value"),
                  done=(GROUP, "done"), terminated=(GROUP, "terminated"))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    return loss


def train(args: argparse.Namespace) -> ProbabilisticActor:
    env = make_env(args.game, args.seed)
    actor, critic = make_modules(env, args.hidden)
    loss = make_loss(actor, critic)
    optimiser = torch.optim.Adam(loss.parameters(), lr=args.lr)
    collector = Collector(env, actor, frames_per_batch=args.frames_per_batch,
                                  total_frames=args.frames)
    for batch in collector:
        with torch.no_grad():
            loss.value_estimator(batch, params=loss.critic_network_params,
                                 target_params=loss.target_critic_network_params)
        steps = batch.reshape(-1)
        for _ in range(args.epochs):
            for index in torch.randperm(len(steps)).split(args.minibatch):
                parts = loss(steps[index])
                total = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
                optimiser.zero_grad()
                total.backward()
                nn.utils.clip_grad_norm_(loss.parameters(), 0.5)
                optimiser.step()
        collector.update_policy_weights_()
    collector.shutdown()
    return actor


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, evaluate against ``"random"``, print; returns the policy's summary row."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", choices=["dice", "cards"], default="dice")
    parser.add_argument("--frames", type=int, default=100_000, help="table steps in all")
    parser.add_argument("--frames-per-batch", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=4, help="PPO epochs per batch")
    parser.add_argument("--minibatch", type=int, default=250)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=100, help="evaluation games vs random")
    args = parser.parse_args(argv)
    bad = [option for option in ("frames", "frames_per_batch", "epochs", "minibatch",
                                 "hidden", "games") if getattr(args, option) < 1]
    if bad or not 0 <= args.seed < 2**32:  # the evaluator's seeds
        parser.error(f"{', '.join('--' + b.replace('_', '-') for b in bad)} must be positive"
                     if bad else f"--seed must be in 0..{2**32 - 1}, got {args.seed}")

    torch.manual_seed(args.seed)
    actor = train(args)
    logits = actor.module[0].module  # the MLP: observations -> logits
    agent = ModuleAgent(logits, args.game, 2, name="torchrl-ppo")
    summary = summarise(play([agent, "random"], game=args.game, num_players=2,
                             games=args.games, seed=args.seed, progress=False))
    print(f"TorchRL PPO (shared by both seats) on the {args.game} game, {args.frames:,} "
          f"table steps (seed {args.seed}); {args.games} games against random:")
    print(format_table(summary))
    return summary["agents"][0]


if __name__ == "__main__":
    main()
