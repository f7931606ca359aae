"""Decisions per second of the scripted bots: scalar ``act`` row by row vs batched ``act_batch``.

    python benchmarks/bench_bots.py [--bots greedy expert] [--games dice cards]
        [--players 2] [--batch 4096] [--backends numpy torch] [--threads 0]
        [--seconds 2] [--scalar-rows 1000]

Positions come from random games on the batched engine (every seat, every step, sampled
over whole games); only rows with two or more legal actions count as decisions (a forced
row costs neither path anything worth measuring). The scalar column times
``act(observation, mask)`` over the first ``--scalar-rows`` rows of the batch with a
fresh agent (its caches start empty, as in a game); the batched column times
``act_batch`` on the whole batch (numpy arrays, or CPU torch tensors), after one warm-up
call that moves its tables to the device. ``x scalar`` is the ratio of the two, both
measured in the same run. ``--threads`` sets torch's CPU threads (numpy's element-wise
work is single-threaded either way); the header names them and the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from arguments import at_least, check_players, positive, refusals  # this folder: on its path
from agents import load
from qwinto_env.batched import BATCHED_GAMES, uniform_legal


def positions(game: str, players: int, batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` decisions (observations, int8 masks) sampled from random games."""
    games = max(16, batch // (8 * players))
    engine = BATCHED_GAMES[game](games, players, backend="numpy", seed=seed)
    observations, masks = [], []
    for _ in range(200):  # random games mostly end within 200 steps; finished ones restart
        obs, mask = engine.observations(), engine.action_masks()
        observations.append(obs.reshape(-1, obs.shape[-1]))
        masks.append(mask.reshape(-1, mask.shape[-1]))
        engine.step(uniform_legal(engine.backend, engine.legal_bits(), engine.gen,
                                  engine.num_actions))
    obs, mask = np.concatenate(observations), np.concatenate(masks)
    decided = np.flatnonzero((mask > 0).sum(1) > 1)
    pick = np.random.default_rng(seed).choice(decided, batch, replace=batch > decided.size)
    return obs[pick], mask[pick]


def scalar_rate(bot: str, game: str, players: int, obs: np.ndarray, masks: np.ndarray) -> float:
    agent = load(bot, game=game, num_players=players)
    start = time.perf_counter()
    for o, m in zip(obs, masks):
        agent.act(o, m)
    return len(obs) / (time.perf_counter() - start)


def batched_rate(bot: str, game: str, players: int, obs, masks, seconds: float) -> float:
    agent = load(bot, game=game, num_players=players)
    agent.act_batch(obs, masks)  # warm-up: tables to the device, lazy imports
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 2:
        agent.act_batch(obs, masks)
        calls += 1
    return calls * len(obs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bots", nargs="+", default=["greedy", "expert"])
    parser.add_argument("--games", nargs="+", default=["dice", "cards"],
                        choices=sorted(BATCHED_GAMES))
    parser.add_argument("--players", type=int, nargs="+", default=[2])
    parser.add_argument("--batch", type=at_least(1), default=4096)
    parser.add_argument("--backends", nargs="+", default=["numpy", "torch"],
                        choices=["numpy", "torch"])
    parser.add_argument("--threads", type=at_least(0), default=0,
                        help="torch CPU threads (0: torch's default, the machine's cores)")
    parser.add_argument("--seconds", type=positive, default=2.0,
                        help="time per batched measurement")
    parser.add_argument("--scalar-rows", type=at_least(1), default=1000,
                        help="rows the scalar act is timed on")
    args = parser.parse_args()
    check_players(parser, args.games, args.players)
    with refusals(parser):  # an unknown bot
        _table(args)


def _table(args: argparse.Namespace) -> None:
    """Print the table of the bots of ``args`` on each game, player count and backend."""
    torch_version = "-"
    if "torch" in args.backends:
        import torch

        torch_version = torch.__version__
        if args.threads:
            torch.set_num_threads(args.threads)
        torch_version += f", {torch.get_num_threads()} threads"
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, "
          f"numpy {np.__version__}, torch {torch_version}")
    print("| bot | game | players | backend | batch | scalar decisions/s "
          "| batched decisions/s | x scalar |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for game in args.games:
        for players in args.players:
            obs, masks = positions(game, players, args.batch)
            for bot in args.bots:
                scalar = scalar_rate(bot, game, players, obs[:args.scalar_rows],
                                     masks[:args.scalar_rows])
                for backend in args.backends:
                    o, m = obs, masks
                    if backend == "torch":
                        o, m = torch.as_tensor(obs), torch.as_tensor(masks)
                    rate = batched_rate(bot, game, players, o, m, args.seconds)
                    print(f"| {bot} | {game} | {players} | {backend} | {args.batch} "
                          f"| {scalar:,.0f} | {rate:,.0f} | {rate / scalar:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
