"""How long the search bot takes per decision, on one core.

    python benchmarks/bench_search.py [--decisions 100] [--presets person evaluate]
        [--checkpoints dice=pretrained:dice-2p-v2 cards=pretrained:cards-2p-v2]

For each game and preset of :data:`agents.search.PRESETS`: seat 0's real decisions
(several legal actions) from self-play of the checkpoint it searches over (default the
shipped ``pretrained:<game>-2p``), spread over whole games, each decided alone (``act``,
as a person's opponent does) with one torch thread; the median, 95th percentile and
slowest time per decision. The evaluator's speed with many games at once is what
``python -m agents.evaluate`` prints (games/s).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch

from arguments import at_least, refusals  # this folder: on its path
from agents import load
from agents.search import PRESETS
from qwinto_env.batched import BATCHED_GAMES


def self_play_decisions(game: str, checkpoint: str, decisions: int,
                        seed: int) -> list[tuple]:
    """Seat 0's real decisions (observation, mask, phase) in self-play of a 2-player
    checkpoint, spread over whole games (one in about 2.5 steps of 64 games)."""
    policy = load(checkpoint, game=game)
    engine = BATCHED_GAMES[game](64, 2, seed=seed)
    rng = np.random.default_rng(seed)
    found: list[tuple] = []
    while len(found) < decisions:
        obs, masks = engine.observations(), engine.action_masks()
        actions = np.stack([policy.act_batch(obs[:, s], masks[:, s]) for s in range(2)], 1)
        real = np.flatnonzero(masks[:, 0].sum(1) > 1)
        if len(real) and rng.random() < 0.4:
            g = rng.choice(real)
            found.append((obs[g, 0].copy(), masks[g, 0].copy(), engine.phase))
        engine.step(actions)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=at_least(1), default=100)
    parser.add_argument("--games", nargs="*", default=["dice", "cards"],
                        choices=sorted(PRESETS))
    parser.add_argument("--presets", nargs="*", default=None, help="default: every one")
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--checkpoints", nargs="*", default=[], metavar="GAME=CHECKPOINT",
                        help="what a game's search plans with (default pretrained:<game>-2p)")
    args = parser.parse_args()
    checkpoints = {game: f"pretrained:{game}-2p" for game in args.games}
    for item in args.checkpoints:
        game, _, checkpoint = item.partition("=")
        if game not in checkpoints or not checkpoint:
            parser.error(f"--checkpoints takes GAME=CHECKPOINT for a game of --games "
                         f"{args.games}, got {item!r}")
        checkpoints[game] = checkpoint
    with refusals(parser):  # an unknown preset or checkpoint
        _table(args, checkpoints)


def _table(args: argparse.Namespace, checkpoints: dict[str, str]) -> None:
    """Print a row per game and preset of ``args``, searching with ``checkpoints``."""
    torch.set_num_threads(1)
    print(f"{platform.machine()}, Python {platform.python_version()}, torch "
          f"{torch.__version__}, one thread; {args.decisions} decisions per row\n")
    print("| game | checkpoint | preset | settings | median ms | 95th percentile ms | "
          "slowest ms |")
    print("|---|---|---|---|---|---|---|")
    for game in args.games:
        found = self_play_decisions(game, checkpoints[game], args.decisions, args.seed)
        for preset in args.presets or sorted(PRESETS[game]):
            agent = load(f"search[{preset}]:{checkpoints[game]}", game=game)
            agent.reset(seed=args.seed)
            times = []
            for obs, mask, _ in found:
                start = time.perf_counter()
                agent.act(obs, mask)
                times.append(1000 * (time.perf_counter() - start))
            settings = ", ".join(f"{k}={v}" for k, v in agent.settings().items())
            print(f"| {game} | {checkpoints[game]} | {preset} | {settings} | "
                  f"{np.median(times):.0f} | {np.percentile(times, 95):.0f} | "
                  f"{max(times):.0f} |")


if __name__ == "__main__":
    main()
