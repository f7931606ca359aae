"""NFSP self-play (OpenSpiel's PyTorch NFSP) on a benchmark task, then games against bots.

    python examples/openspiel_nfsp.py [--task dice-2p-v0] [--steps 20000] [--seed 0]
                                      [--games 200]

Trains :mod:`agents.benchmark.algorithms.nfsp` for ``--steps`` decisions (all seats) and
plays its average policy against ``random`` and ``greedy``, seats rotated.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from agents.benchmark.algorithms import nfsp
from agents.benchmark.tasks import get_task, task_ids
from agents.evaluate import play


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=task_ids(), default="dice-2p-v0")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=200)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.games < 1:
        parser.error("--steps and --games must be positive")  # before the training, not after
    torch.set_num_threads(1)

    task = get_task(args.task)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        agent = nfsp.train(task, args.seed, args.steps, workdir)
    seconds = time.perf_counter() - start
    print(f"NFSP on {task.id}: {args.steps} steps in {seconds:.0f} s "
          f"({args.steps / seconds:.0f} steps/s)")
    opponents = task.num_players - 1
    for reference in ("random", "greedy") if opponents else ("nobody",):
        result = play([agent] + [reference] * opponents, game=task.game,
                      num_players=task.num_players, games=args.games, seed=args.seed,
                      progress=False)
        mine = result.summary["agents"][0]
        print(f"vs {reference}: win rate {mine['win_rate']:.2f}, "
              f"mean score {mine['mean_score']:.1f}")


if __name__ == "__main__":
    main()
