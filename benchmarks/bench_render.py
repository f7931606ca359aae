"""What drawing costs: ``render_mode="rgb_array"`` frames, and a recorded game.

    python benchmarks/bench_render.py [--games dice cards] [--players 2 4] [--seed 0]

For each game and player count: the milliseconds to draw one frame (every position of a
masked-random game, drawn with :func:`qwinto_env.image.draw`), and for one game of
``expert`` bots the seconds to play it, to play it drawing a frame per step
(:func:`qwinto_env.video.play_frames`) and to write those frames as a GIF. The last
column is what recording adds to playing, as a ratio measured in the same run.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from arguments import at_least, check_players  # this folder: on its path
from agents import load
from qwinto_env import parallel_env
from qwinto_env.image import draw, save_gif
from qwinto_env.spec import SPECS
from qwinto_env.video import play_frames


def positions(game: str, players: int, seed: int) -> list:
    """Every position of one masked-random game, as copies of the engine."""
    import copy

    env = parallel_env(game=game, num_players=players)
    observations, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen = [copy.deepcopy(env.game)]
    while env.agents:
        env_actions = {a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"])))
                       for a in env.agents}
        observations, *_ = env.step(env_actions)
        seen.append(copy.deepcopy(env.game))
    return seen


def timed(function, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def row(game: str, players: int, seed: int) -> str:
    games = positions(game, players, seed)
    draw(games[0])  # the empty sheets are drawn once per table size
    per_frame, _ = timed(lambda: [draw(g) for g in games])
    bots = [load("expert", game=game, num_players=players) for _ in range(players)]
    play, _ = timed(play_frames, game, players, bots, seed, None)
    with tempfile.TemporaryDirectory() as folder:
        gif, _ = timed(lambda frames: save_gif(Path(folder) / "game.gif", frames),
                       _ := play_frames(game, players, bots, seed))
    plain, _ = timed(play_without_frames, game, players, bots, seed)
    return (f"| {game} | {players} | {1000 * per_frame / len(games):.2f} | {plain:.3f} | "
            f"{play:.3f} | {gif:.3f} | {(play + gif) / plain:.1f}x |")


def play_without_frames(game: str, players: int, bots: list, seed: int) -> None:
    env = parallel_env(game=game, num_players=players)
    observations, _ = env.reset(seed=seed)
    while env.agents:
        observations, *_ = env.step({
            a: int(bot.act(observations[a]["observation"], observations[a]["action_mask"]))
            for a, bot in zip(env.agents, bots)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["dice", "cards"],
                        choices=sorted(SPECS))
    parser.add_argument("--players", nargs="+", type=int, default=[2, 4])
    parser.add_argument("--seed", type=at_least(0), default=0)
    args = parser.parse_args()
    check_players(parser, args.games, args.players)
    print(f"{platform.machine()}, Python {platform.python_version()}")
    print("| game | players | ms per frame | expert game, s | with frames, s | GIF, s "
          "| recorded / plain |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for game in args.games:
        for players in args.players:
            print(row(game, players, args.seed), flush=True)


if __name__ == "__main__":
    main()
