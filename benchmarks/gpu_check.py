"""The device check: engine and trainer speed and memory on a GPU, in one short run.

    python benchmarks/gpu_check.py [--device cuda] [--minutes 3] [--dry-run]

Three parts, each printed as it finishes (``benchmarks/gpu_check.sh`` installs what they
need and runs them within 10 minutes):

1. **Engine**: the batched torch engine of both games stepping uniformly random legal
   actions at batch sizes up to 1,000,000 games; game-steps per second and the device
   memory the batch takes.
2. **No host syncs**: one rollout of the torch trainer on ``configs/dice-2p-gpu.yaml``
   (the default opponent mix) under ``torch.cuda.set_sync_debug_mode("error")``, which
   raises at the first call that makes the device wait for the host.
3. **Trainer**: the torch trainer on ``configs/dice-2p-gpu.yaml`` (rollouts and PPO
   updates, no evaluation or checkpoints) for ``--minutes``; learner steps per second
   and peak device memory.

``--dry-run`` runs the same code on the CPU at toy sizes (a test runs it), so the script
is known to work before a GPU is lent.
"""

from __future__ import annotations

import argparse
import time

import torch

from arguments import positive, refusals, torch_device  # this folder: on its path
from agents.trainers.config import load_config
from agents.trainers.run import resolve_device
from agents.trainers.torch_ppo import TorchPPO
from qwinto_env.batched import BATCHED_GAMES

GPU_BATCHES = (16_384, 131_072, 1_000_000)
DRY_BATCHES = (256, 1024)


def memory_mb(device: torch.device) -> str:
    if device.type != "cuda":
        return "-"
    return f"{torch.cuda.max_memory_allocated(device) / 2 ** 20:,.0f}"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def random_actions(masks: torch.Tensor) -> torch.Tensor:
    """A uniformly random legal action per game and seat, on the device (no sync)."""
    keys = torch.rand(masks.shape, device=masks.device).masked_fill(masks == 0, -1.0)
    return keys.argmax(dim=-1)


def engine_speed(game: str, games: int, steps: int, device: torch.device) -> tuple[float, str]:
    """Game-steps per second of ``games`` random games, and the peak device memory."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    engine = BATCHED_GAMES[game](games, 2, backend="torch", device=device, seed=0)
    for _ in range(3):  # warm-up
        engine.step(random_actions(engine.action_masks()), validate=False)
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        engine.observations()
        engine.step(random_actions(engine.action_masks()), validate=False)
    sync(device)
    return games * steps / (time.perf_counter() - start), memory_mb(device)


def trainer(device: torch.device, overrides: list[str]) -> TorchPPO:
    cfg = load_config("configs/dice-2p-gpu.yaml",
                      [f"run.device={device.type}", "imitation.games=0", *overrides])
    torch.manual_seed(0)
    ppo = TorchPPO(cfg, device)
    ppo.pool.add_snapshot(ppo.net)
    return ppo


def no_syncs(ppo: TorchPPO, device: torch.device) -> str:
    """One rollout with CUDA's sync check raising at the first sync."""
    if device.type != "cuda":
        return "skipped (needs CUDA)"
    ppo.rollout()  # the first plans the opponents and fills caches (host work, once)
    sync(device)
    torch.cuda.set_sync_debug_mode("error")
    try:
        ppo.rollout()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return "passed: no host sync in a rollout"


def trainer_speed(ppo: TorchPPO, device: torch.device, seconds: float) -> tuple[float, int]:
    """Learner steps per second of whole updates for about ``seconds``."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    ppo.rollout()
    ppo.update(*ppo.advantages())  # warm-up
    sync(device)
    start, steps = time.perf_counter(), 0
    while steps == 0 or time.perf_counter() - start < seconds:
        ppo.rollout()
        ppo.update(*ppo.advantages())
        steps += ppo.storage.size
    sync(device)
    return steps / (time.perf_counter() - start), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", type=torch_device)
    parser.add_argument("--minutes", type=positive, default=3.0, help="trainer part's length")
    parser.add_argument("--dry-run", action="store_true",
                        help="CPU, toy sizes: check that the script works")
    args = parser.parse_args()
    asked = "cpu" if args.dry_run else args.device
    if asked.startswith("cuda") and not torch.cuda.is_available():
        parser.error("torch sees no CUDA device (torch " + torch.__version__ + "); "
                     "benchmarks/gpu_check.sh installs a CUDA build, --dry-run runs on CPU")
    with refusals(parser):  # cuda:N past the GPUs torch sees
        device = resolve_device(asked)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}\n")
    batches = DRY_BATCHES if args.dry_run else GPU_BATCHES
    print("| game | games | game-steps per second | peak memory (MB) |\n|---|---:|---:|---:|",
          flush=True)
    for game in ("dice", "cards"):
        for games in batches:
            speed, mem = engine_speed(game, games, 4 if args.dry_run else 50, device)
            print(f"| {game} | {games:,} | {speed:,.0f} | {mem} |", flush=True)
    overrides = ["env.num_games=64", "network.hidden=[32]", "ppo.rollout_steps=4"] \
        if args.dry_run else []
    ppo = trainer(device, overrides)
    print(f"\nsync check: {no_syncs(ppo, device)}", flush=True)
    seconds = 1.0 if args.dry_run else 60 * args.minutes
    speed, steps = trainer_speed(ppo, device, seconds)
    print(f"trainer (configs/dice-2p-gpu.yaml, {ppo.engine.num_games:,} games): "
          f"{speed:,.0f} learner steps per second over {steps:,} steps; "
          f"peak memory {memory_mb(device)} MB")


if __name__ == "__main__":
    main()
