"""Stable-Baselines3 on Qwinto-v0 as it ships: PPO, A2C, DQN, and sb3-contrib's MaskablePPO.

    python examples/sb3.py --algo maskable-ppo --game dice --total-timesteps 50000
    python examples/sb3.py --algo ppo --game cards --total-timesteps 20000 --seed 1

Each algorithm trains with its default hyperparameters (DQN's replay buffer holds the
run's steps, not a million) on
``gymnasium.make("Qwinto-v0", game=..., opponents=..., reward="score")`` (one learner
against ``--opponent`` bots) and its ``"MultiInputPolicy"``, which reads the Dict
observation as it is (the action mask is one of its inputs). Then the trained model plays
``--games`` games against ``"random"`` through :func:`agents.evaluate.play` and the
result is printed.

=================  ===========================================================
``maskable-ppo``   masks honoured: the env's ``action_masks()`` reaches the policy,
                   which never picks an illegal action
``ppo``, ``a2c``,  SB3 cannot take masks: the env is made with
``dqn``            ``illegal_action="pass"``, so an illegal choice plays the default
                   action (the pass where it is legal) with a -1 penalty, and the
                   model learns to avoid it. The evaluation plays the same way and
                   prints how often it happened.
=================  ===========================================================
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium
import numpy as np
import stable_baselines3
import sb3_contrib

import qwinto_env  # noqa: F401  registers Qwinto-v0
from agents.base import Agent
from agents.evaluate import play, summarise
from qwinto_env.game import default_of
from qwinto_env.spec import SPECS

ALGORITHMS = {"ppo": stable_baselines3.PPO, "a2c": stable_baselines3.A2C,
              "dqn": stable_baselines3.DQN, "maskable-ppo": sb3_contrib.MaskablePPO}


class ModelAgent(Agent):
    """A trained SB3 model as an :class:`agents.base.Agent` (deterministic). A model
    without masks may choose an illegal action; it is replaced as the training env did
    (``illegal_action="pass"``) and counted in ``illegal``."""

    def __init__(self, model: Any, game: str, num_players: int, masked: bool):
        super().__init__(game, num_players)
        self.model, self.masked = model, masked
        self.name = type(model).__name__
        self.illegal = self.decisions = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        obs = {"observation": observation, "action_mask": action_mask}
        extra = {"action_masks": action_mask > 0} if self.masked else {}
        action = int(self.model.predict(obs, deterministic=True, **extra)[0])
        self.decisions += 1
        if action_mask[action]:
            return action
        self.illegal += 1
        return default_of(np.flatnonzero(action_mask), SPECS[self.game].pass_action)


def make_env(algo: str, game: str, opponent: str) -> gymnasium.Env:
    """The training env: masks for MaskablePPO, illegal actions forgiven for the others."""
    unmasked = {} if algo == "maskable-ppo" else {"illegal_action": "pass"}
    return gymnasium.make("Qwinto-v0", game=game, num_players=2, opponents=opponent,
                          reward="score", **unmasked)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, evaluate against ``"random"``, print the result; returns the evaluation's
    summary (:func:`agents.evaluate.summarise`) with the learner's illegal choices."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algo", choices=list(ALGORITHMS), default="maskable-ppo")
    parser.add_argument("--game", choices=["dice", "cards"], default="dice")
    parser.add_argument("--total-timesteps", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--opponent", default="random",
                        help="who the learner trains against (random, greedy, expert)")
    parser.add_argument("--games", type=int, default=100, help="evaluation games vs random")
    args = parser.parse_args(argv)
    if args.total_timesteps < 1 or args.games < 1:
        parser.error("--total-timesteps and --games must be positive")
    if not 0 <= args.seed < 2**32:  # what SB3's seeding (numpy's global one) takes
        parser.error(f"--seed must be in 0..{2**32 - 1}, got {args.seed}")

    # DQN's default replay buffer (a million steps) would allocate gigabytes for the Dict
    # observations up front; a run never needs more than its own steps.
    extra = {"buffer_size": args.total_timesteps} if args.algo == "dqn" else {}
    model = ALGORITHMS[args.algo]("MultiInputPolicy", make_env(args.algo, args.game, args.opponent),
                                  seed=args.seed, verbose=0, device="cpu", **extra)
    model.learn(args.total_timesteps)
    agent = ModelAgent(model, args.game, 2, masked=args.algo == "maskable-ppo")
    summary = summarise(play([agent, "random"], game=args.game, num_players=2,
                             games=args.games, seed=args.seed, progress=False))
    summary["illegal_choices"] = agent.illegal
    print(f"{args.algo} on the {args.game} game, {args.total_timesteps:,} steps "
          f"(seed {args.seed}), then {args.games} games against random:")
    for row in summary["agents"]:
        print(f"  {row['agent']:>12}: mean score {row['mean_score']:6.2f}, "
              f"win rate {row['win_rate']:.1%}")
    print(f"  illegal choices replaced by the default action: {agent.illegal} "
          f"of {agent.decisions} decisions")
    return summary


if __name__ == "__main__":
    main()
