"""Training steps per second of the two trainers at the same network, batch and opponents.

    python benchmarks/bench_trainers.py [--steps 100000] [--games 256] [--device cpu]

Both trainers run PPO on the 2-player dice game against a random opponent (one learner
seat per game, so both collect ``rollout_steps * games`` samples per update) with the
same network (``--hidden``, sheet features), the same minibatches and epochs, no
evaluation and no imitation; the torch trainer once as it trains by default and once with
``ppo.decisions_only`` (the steps without a choice left out of the update). A step is one
learner step of the engine, so all three collect the same steps; the time covers
rollouts and updates (everything ``train`` does, less start-up).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from arguments import at_least, refusals  # this folder is on the path of its scripts
from agents.trainers import trainer_function
from agents.trainers.config import DEVICE_FORMS, TrainConfig, load_config
from agents.trainers.run import Run, resolve_device


ROLLOUT = 64


#: The rows: label, run.trainer, ppo.decisions_only.
TRAINERS = (("sb3 (MaskablePPO)", "sb3", False), ("torch (on-device PPO)", "torch", False),
            ("torch, decisions_only", "torch", True))


def bench_config(trainer: str, decisions_only: bool, args: argparse.Namespace) -> TrainConfig:
    """The run a row times; ConfigError for a bad ``--hidden`` or ``--device``."""
    # Both trainers collect whole rollouts, so time a whole number of them.
    batch = ROLLOUT * args.games
    steps = -(-args.steps // batch) * batch
    return load_config(None, [
        f"run.name={trainer}-{decisions_only}", f"run.trainer={trainer}",
        f"run.device={args.device}", f"ppo.decisions_only={str(decisions_only).lower()}",
        f"run.total_steps={steps}", f"run.checkpoint_every={10 * steps}",
        f"env.num_games={args.games}", f"network.hidden={args.hidden}",
        f"ppo.rollout_steps={ROLLOUT}", "ppo.update_epochs=2", "ppo.num_minibatches=8",
        "opponents.self_play=0", "opponents.snapshots=0", "opponents.scripted={random: 1}",
        "eval.every=0", "imitation.games=0"])


def training_speed(cfg: TrainConfig, root: str) -> float:
    """Learner steps per second of ``cfg``'s trainer over its whole run (no start-up)."""
    run = Run(cfg, root=root)
    train = trainer_function(cfg.run.trainer)
    start = time.perf_counter()
    train(cfg, run, progress=False)
    seconds = time.perf_counter() - start
    run.close()
    return run.step / seconds  # the steps trained: whole updates, maybe past total_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=at_least(1), default=100_000)
    parser.add_argument("--games", type=at_least(1), default=256)
    parser.add_argument("--hidden", default="[128, 128]")
    parser.add_argument("--device", default="cpu", help=f"run.device: {DEVICE_FORMS}")
    args = parser.parse_args()
    with refusals(parser):  # a bad --hidden or --device, a GPU torch does not see
        configs = [(label, bench_config(trainer, only, args)) for label, trainer, only in TRAINERS]
        resolve_device(args.device)
    # torch imports its compiler stack lazily on the first optimizer; pay that before timing
    # so that neither trainer is charged for it.
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    with tempfile.TemporaryDirectory() as root:
        rows = [(label, training_speed(cfg, root)) for label, cfg in configs]
    print(f"dice 2p vs random, {args.games} games, rollout {ROLLOUT}, network {args.hidden}, "
          f"device {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'trainer':<26} {'steps/s':>10} {'x sb3':>6}")
    for label, sps in rows:
        print(f"{label:<26} {sps:>10,.0f} {sps / rows[0][1]:>5.2f}x")


if __name__ == "__main__":
    main()
