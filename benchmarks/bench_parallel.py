"""Steps per second of masked random play: Qwinto's ParallelEnv vs PettingZoo's connect_four_v3.

    python benchmarks/bench_parallel.py [--seconds 5] [--players 2 4]

One step is one ``env.step`` call: a joint action of every live agent in the Qwinto
ParallelEnv, one agent's move in connect_four's AEC env. Both sides pick actions the
same way (uniform over the action mask, Python's ``random``), so the figures compare
the environments, not the samplers. connect_four needs pygame (``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import platform
import random
import time

import numpy as np

from arguments import check_players, positive  # this folder: on its path
from qwinto_env import parallel_env
from qwinto_env.parallel import GAMES


def masked_choice(mask: np.ndarray, rng: random.Random) -> int:
    legal = np.flatnonzero(mask)
    return int(legal[rng.randrange(len(legal))])


def bench_qwinto(game: str, players: int, seconds: float) -> tuple[float, int]:
    env = parallel_env(game=game, num_players=players)
    rng = random.Random(0)
    steps = games = 0
    obs, _ = env.reset(seed=0)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(200):
            if not env.agents:
                obs, _ = env.reset()
                games += 1
            actions = {a: masked_choice(obs[a]["action_mask"], rng) for a in env.agents}
            obs, *_ = env.step(actions)
            steps += 1
    return steps / (time.perf_counter() - start), games


def bench_connect_four(seconds: float) -> tuple[float, int]:
    from pettingzoo.classic import connect_four_v3

    env = connect_four_v3.env()
    rng = random.Random(0)
    env.reset(seed=0)
    steps = games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(200):
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                if not env.agents:
                    env.reset()
                    games += 1
            else:
                env.step(masked_choice(obs["action_mask"], rng))
            steps += 1
    return steps / (time.perf_counter() - start), games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=positive, default=5.0, help="time per row")
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4])
    args = parser.parse_args()
    check_players(parser, GAMES, args.players)

    rows = []
    for game in GAMES:
        for players in args.players:
            sps, games = bench_qwinto(game, players, args.seconds)
            rows.append((f"qwinto {game} ParallelEnv", players, sps, games))
    try:
        sps, games = bench_connect_four(args.seconds)
        rows.append(("connect_four_v3 AEC (yardstick)", 2, sps, games))
    except ImportError as exc:
        print(f"connect_four_v3 skipped: {exc} (pip install -e .[bench])")

    print(f"Python {platform.python_version()}, {platform.machine()}, {args.seconds:g} s per row")
    print(f"{'environment':<34} {'players':>7} {'steps/s':>10} {'games':>7}")
    for name, players, sps, games in rows:
        print(f"{name:<34} {players:>7} {sps:>10,.0f} {games:>7}")
    yard = [r for r in rows if r[0].startswith("connect_four")]
    if yard:
        for name, players, sps, _ in rows[:-1]:
            print(f"{name}, {players} players: {sps / yard[0][2]:.2f}x connect_four_v3")


if __name__ == "__main__":
    main()
