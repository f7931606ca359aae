"""PPO steps per second of the default config alone and next to a busy process, same run.

    python benchmarks/bench_load.py [--steps 300000] [--threads 0 2]

For each ``run.torch_threads`` setting (0 = adaptive, the default; n = fixed), the torch
trainer trains the default config's PPO phase (``configs/default.yaml``, without the
imitation warm start and the evaluations, which are not PPO) twice: once on a quiet
machine, once while another process keeps one core busy. The last column is the loaded
speed as a share of the quiet one: what a user loses when something else runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile

import torch
from arguments import at_least, refusals  # this folder is on the path of its scripts
from bench_trainers import training_speed  # this folder is on the path of its scripts

from agents.trainers.config import load_config

DEFAULT = "configs/default.yaml"
BUSY = "while True: pass"


def steps_per_second(threads: int, steps: int, root: str, label: str) -> float:
    default = load_config(DEFAULT)
    rollout = default.ppo.rollout_steps * default.env.num_games
    steps = -(-steps // rollout) * rollout  # whole rollouts, at least one
    return training_speed(load_config(DEFAULT, [
        f"run.name={label}", f"run.torch_threads={threads}", "run.device=cpu",
        f"run.total_steps={steps}", f"run.checkpoint_every={10 * steps}",
        "imitation.games=0", "eval.every=0"]), root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=at_least(1), default=300_000)
    parser.add_argument("--threads", type=at_least(0), nargs="+", default=[0, 2],
                        help="run.torch_threads settings to compare (0 = adaptive)")
    args = parser.parse_args()
    with refusals(parser):  # a thread count past the config's range
        for threads in args.threads:
            load_config(DEFAULT, [f"run.torch_threads={threads}"])
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])  # pay torch's lazy imports first
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for threads in args.threads:
            alone = steps_per_second(threads, args.steps, root, f"alone-{threads}")
            busy = subprocess.Popen([sys.executable, "-c", BUSY])
            try:
                loaded = steps_per_second(threads, args.steps, root, f"loaded-{threads}")
            finally:
                busy.kill()
                busy.wait()
            rows.append((threads, alone, loaded))
    print(f"default config, PPO phase, about {args.steps:,} steps, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads now")
    print(f"{'run.torch_threads':<20} {'alone':>9} {'1 core busy':>12} {'loaded/alone':>13}")
    for threads, alone, loaded in rows:
        name = "0 (adaptive)" if threads == 0 else str(threads)
        print(f"{name:<20} {alone:>9,.0f} {loaded:>12,.0f} {loaded / alone:>12.2f}x")


if __name__ == "__main__":
    main()
