"""Steps per second of masked random play: ParallelEnv vs the batched engines.

    python benchmarks/bench_batched.py [--seconds 2] [--games dice cards] [--players 2 4]
        [--batch-sizes 1 64 1024 16384] [--backends parallel numpy torch] [--no-obs]

One step is one decision point of every game in the batch, counted as N game-steps
for a batch of N games (the ParallelEnv is N = 1). A turn (one roll, or one card
play, resolved for every player of a game) is exactly three steps in the dice game
(choose dice, keep or re-roll, entry) and two in the card game (play, entry). So
turns/s = steps/s / 3 (dice) or / 2 (cards), the unit of other Qwinto engines.

Random play is uniform over the legal actions of every seat: the ParallelEnv samples
each agent's mask with Python's ``random`` (as benchmarks/bench_parallel.py does), the
batched engines sample all seats at once with :func:`qwinto_env.batched.uniform_legal`
from the engine's legal-action bitmasks and step with ``validate=False`` (the actions
are legal by construction). The "steps/s" column measures the engine and the sampler
only; "with obs" also builds, every step, what an RL loop consumes: the ego-centric
float32 observations and int8 masks of every seat (the ParallelEnv always does).

On a machine with CUDA, the torch rows are repeated on the GPU with larger batches.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

import numpy as np

from arguments import at_least, check_players, positive  # this folder: on its path
from qwinto_env import parallel_env
from qwinto_env.batched import BATCHED_GAMES, uniform_legal


def bench_parallel(game: str, players: int, seconds: float) -> float:
    env = parallel_env(game=game, num_players=players)
    rng = random.Random(0)
    obs, _ = env.reset(seed=0)
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(300):
            if not env.agents:
                obs, _ = env.reset()
            actions = {}
            for agent in env.agents:
                legal = np.flatnonzero(obs[agent]["action_mask"])
                actions[agent] = int(legal[rng.randrange(len(legal))])
            obs, *_ = env.step(actions)
            steps += 1
    return steps / (time.perf_counter() - start)


def bench_batched(game: str, backend: str, device: str | None, players: int, batch: int,
                  seconds: float, with_obs: bool) -> tuple[float, float]:
    """Game-steps per second, and bytes of state per game."""
    games = BATCHED_GAMES[game](batch, players, backend=backend, device=device, seed=0)
    B, gen = games.backend, games.gen
    sync = _sync(backend, device)
    per_turn = games.steps_per_turn

    def block(turns: int) -> None:
        for _ in range(per_turn * turns):
            actions = uniform_legal(B, games.legal_bits(), gen, games.num_actions)
            games.step(actions, validate=False)
            if with_obs:
                games.observations()
                games.action_masks()

    block(2)  # warm-up: allocations, lazy initialisation, caches
    turns = max(1, 4096 // batch)
    done = 0
    sync()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        block(turns)
        done += per_turn * turns
        sync()
    return done * batch / (time.perf_counter() - start), games.state_bytes_per_game()


def _sync(backend: str, device: str | None):
    if backend == "torch" and device not in (None, "cpu"):
        import torch

        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=positive, default=2.0, help="time per measurement")
    parser.add_argument("--games", nargs="+", default=["dice", "cards"],
                        choices=sorted(BATCHED_GAMES))
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--batch-sizes", type=at_least(1), nargs="+", default=[1, 64, 1024, 16384])
    parser.add_argument("--gpu-batch-sizes", type=at_least(1), nargs="+",
                        default=[16384, 262144, 1048576, 4194304])
    parser.add_argument("--backends", nargs="+", default=["parallel", "numpy", "torch"],
                        choices=["parallel", "numpy", "torch"])
    parser.add_argument("--no-obs", action="store_true",
                        help="skip the 'with obs' measurement (halves the run time)")
    parser.add_argument("--threads", type=at_least(0), default=1,
                        help="torch CPU threads (default 1: on a small shared machine torch's "
                             "thread pool slows down badly whenever another process is busy)")
    args = parser.parse_args()
    check_players(parser, args.games, args.players)

    configs: list[tuple[str, str | None, list[int]]] = []
    torch_version = "-"
    if "torch" in args.backends:
        import torch

        torch_version = torch.__version__
        if args.threads:
            torch.set_num_threads(args.threads)
        configs.append(("torch", "cpu", args.batch_sizes))
        if torch.cuda.is_available():
            configs.append(("torch", "cuda", args.gpu_batch_sizes))
    if "numpy" in args.backends:
        configs.insert(0, ("numpy", None, args.batch_sizes))

    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, torch {torch_version}"
          + (f", torch threads {__import__('torch').get_num_threads()}"
             if "torch" in args.backends else ""))
    print("| game | engine | players | batch | steps/s | turns/s | x ParallelEnv "
          "| with obs steps/s | bytes/game |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for game in args.games:
        per_turn = BATCHED_GAMES[game].steps_per_turn
        for players in args.players:
            base = None
            if "parallel" in args.backends:
                base = bench_parallel(game, players, args.seconds)
                print(f"| {game} | ParallelEnv | {players} | 1 | {base:,.0f} | "
                      f"{base / per_turn:,.0f} | 1 | {base:,.0f} | - |", flush=True)
            for backend, device, sizes in configs:
                name = backend if device in (None, "cpu") else f"{backend} {device}"
                for batch in sizes:
                    sps, nbytes = bench_batched(game, backend, device, players, batch,
                                                args.seconds, False)
                    obs_sps = "-"
                    if not args.no_obs:
                        obs_sps = f"{bench_batched(game, backend, device, players, batch, args.seconds, True)[0]:,.0f}"
                    ratio = "-" if not base else ratio_text(sps / base)
                    print(f"| {game} | {name} | {players} | {batch} | {sps:,.0f} | "
                          f"{sps / per_turn:,.0f} | {ratio} | {obs_sps} | {nbytes:.0f} |",
                          flush=True)


def ratio_text(ratio: float) -> str:
    """A speed ratio to two significant digits below 10 (a batch of one game runs below
    the ParallelEnv: 0.47, not 0), whole above."""
    return f"{ratio:.2g}" if ratio < 10 else f"{ratio:,.0f}"


if __name__ == "__main__":
    main()
