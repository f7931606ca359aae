"""PettingZoo's SB3 tutorial path on Qwinto: SuperSuit's vector envs and MaskablePPO, self-play.

    python examples/supersuit_sb3.py --game dice --total-timesteps 50000
    python examples/supersuit_sb3.py --game cards --tables 8 --seed 1

As PettingZoo's Stable-Baselines3 tutorials do: ``supersuit.pettingzoo_env_to_vec_env_v1``
turns the ParallelEnv into a vector env of one sub-env per seat, and
``supersuit.concat_vec_envs_v1(..., base_class="stable_baselines3")`` stacks ``--tables``
copies of it for SB3; one model plays every seat (parameter sharing). What Qwinto needs:

* ``"MultiInputPolicy"``, not the tutorials' ``"MlpPolicy"``: the observation is the
  PettingZoo classic-games Dict of ``observation`` and ``action_mask``. SuperSuit's
  vector envs stack Dict observations as they are.
* The masks: MaskablePPO asks its vector env ``env_method("action_masks")``, which
  SuperSuit's SB3 wrapper does not offer (it has no ``has_attr`` either).
  :class:`ActionMasks` answers it with the masks of the observations just returned, so
  the policy never picks an illegal action (the env keeps ``illegal_action="raise"``).
  Plain PPO, A2C or DQN work on the same vector env made with ``illegal_action="pass"``.
* Seeding: SB3 seeds its env with ``seed(s)``, which SuperSuit's stack does not have
  (an AttributeError); :class:`ActionMasks` passes it to SuperSuit's ``reset``.

Then the model plays ``--games`` games against ``"random"`` through
:func:`agents.evaluate.play` (seats rotated) and the result is printed.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import supersuit
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import VecEnvWrapper

import qwinto_env
from agents.base import Agent
from agents.evaluate import play, summarise


class ActionMasks(VecEnvWrapper):
    """What SB3 asks of a vector env and SuperSuit's lacks. ``env_method("action_masks")``,
    read by MaskablePPO before every action: each seat's ``action_mask`` of the latest
    observations. ``seed(s)``: SuperSuit's stack takes seeds only in its own ``reset``
    (table ``i`` gets ``s + i``); unseeded, its tables are pickled copies of one env that
    would all draw the same dice."""

    def seed(self, seed: int | None = None) -> list[None]:
        self.next_seed = seed
        return [None] * self.num_envs

    def reset(self) -> dict[str, np.ndarray]:
        seed, self.next_seed = getattr(self, "next_seed", None), None
        if seed is None:
            obs = self.venv.reset()
        else:  # past SuperSuit's SB3 wrapper, which drops the seed
            obs, self.venv.reset_infos = self.venv.venv.reset(seed=seed)
        self.masks = obs["action_mask"] > 0
        return obs

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self.masks = obs["action_mask"] > 0  # a finished table's next first decision
        return obs, rewards, dones, infos

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks" or self.venv.has_attr(attr_name)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any):
        if method_name == "action_masks":
            return list(self.masks)
        return self.venv.env_method(method_name, *args, indices=indices, **kwargs)


class SharedModelAgent(Agent):
    """The trained model in one seat of the evaluator: masked and deterministic."""

    def __init__(self, model: MaskablePPO, game: str):
        super().__init__(game, 2)
        self.model, self.name = model, "supersuit-maskable-ppo"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        obs = {"observation": observation, "action_mask": action_mask}
        return int(self.model.predict(obs, deterministic=True, action_masks=action_mask > 0)[0])


def make_vec_env(game: str, tables: int) -> ActionMasks:
    """``tables`` two-player games as one SB3 vector env of ``2 * tables`` seats."""
    env = qwinto_env.parallel_env(game=game, num_players=2, reward="score")
    venv = supersuit.pettingzoo_env_to_vec_env_v1(env)
    venv = supersuit.concat_vec_envs_v1(venv, tables, num_cpus=1, base_class="stable_baselines3")
    return ActionMasks(venv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, evaluate against ``"random"``, print; returns the model's summary row."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", choices=["dice", "cards"], default="dice")
    parser.add_argument("--total-timesteps", type=int, default=50_000, help="seat decisions")
    parser.add_argument("--tables", type=int, default=4, help="games played side by side")
    parser.add_argument("--n-steps", type=int, default=256, help="PPO rollout per seat")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=100, help="evaluation games vs random")
    args = parser.parse_args(argv)
    if min(args.total_timesteps, args.tables, args.n_steps, args.games) < 1:
        parser.error("--total-timesteps, --tables, --n-steps and --games must be positive")
    if not 0 <= args.seed < 2**32:  # what SB3's seeding (numpy's global one) takes
        parser.error(f"--seed must be in 0..{2**32 - 1}, got {args.seed}")

    venv = make_vec_env(args.game, args.tables)
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=args.n_steps,
                        batch_size=min(64, args.n_steps * venv.num_envs),
                        seed=args.seed, verbose=0, device="cpu")
    model.learn(args.total_timesteps)
    venv.close()
    summary = summarise(play([SharedModelAgent(model, args.game), "random"], game=args.game,
                             num_players=2, games=args.games, seed=args.seed, progress=False))
    row = summary["agents"][0]
    print(f"MaskablePPO on SuperSuit's vector env, the {args.game} game, "
          f"{args.total_timesteps:,} seat decisions (seed {args.seed}); {args.games} games "
          f"against random: mean score {row['mean_score']:.2f}, win rate {row['win_rate']:.1%}")
    return row


if __name__ == "__main__":
    main()
