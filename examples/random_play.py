"""Masked random play in the Qwinto ParallelEnv: the README's first example, runnable.

    python examples/random_play.py [--game dice] [--players 2] [--games 200] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from qwinto_env import parallel_env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="dice", choices=["dice", "cards"])
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.games < 1 or args.seed < 0:
        parser.error("--games must be positive and --seed non-negative")
    try:
        env = parallel_env(game=args.game, num_players=args.players, render_mode="ansi")
    except ValueError as exc:  # the env names what it refuses (the player count)
        parser.error(str(exc))
    rng = np.random.default_rng(args.seed)
    scores, steps = [], 0
    for game in range(args.games):
        observations, infos = env.reset(seed=args.seed + game)
        while env.agents:
            actions = {agent: int(rng.choice(np.flatnonzero(observations[agent]["action_mask"])))
                       for agent in env.agents}
            observations, rewards, terminations, truncations, infos = env.step(actions)
            steps += 1
        scores.append([infos[agent]["score"] for agent in env.possible_agents])
    print(env.render())
    scores = np.array(scores)
    print(f"\n{args.games} games of masked random play, {steps / args.games:.1f} steps per game")
    for seat, agent in enumerate(env.possible_agents):
        print(f"{agent}: mean score {scores[:, seat].mean():6.2f}")


if __name__ == "__main__":
    main()
