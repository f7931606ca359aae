"""Env steps per second of the RLlib trainer on a local Ray instance, per env-runner count.

    python benchmarks/bench_rllib.py [--runners 1 2] [--iterations 3] [--cpus 2]
        [--config configs/dice-2p-rllib.yaml]

For each number of env runners, builds the PPO algorithm of the config (rllib section
overridden), runs one warm-up ``train()`` and then ``--iterations`` more, and prints:

* sample env steps/s: env steps (``QwintoMultiAgentEnv.step`` calls; the adapter plays
  forced single-action steps itself) collected by all env runners together, divided by
  the time the algorithm spent sampling (RLlib's ``env_runner_sampling_timer``);
* agent steps/s: decisions of all agents (learner and opponents) per sampling second;
* train env steps/s: env steps per wall second of whole ``train()`` iterations
  (sampling plus the PPO update in the driver), what a training run gets.

Needs the ``rllib`` extra. The rows measure the machine they run on; docs/rllib.md has
the figures of the development machine.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from arguments import at_least, refusals  # this folder: on its path


def bench(config_path: str, runners: int, iterations: int) -> dict[str, float]:
    from agents.trainers.config import load_config
    from agents.trainers.rllib_ppo import build_config

    cfg = load_config(config_path, [f"rllib.num_env_runners={runners}"])
    algo = build_config(cfg).build_algo()
    try:
        algo.train()  # warm-up: actors started, first weights synced
        env_steps = agent_steps = sample_s = 0.0
        started = time.perf_counter()
        for _ in range(iterations):
            result = algo.train()
            runners_res = result["env_runners"]
            env_steps += runners_res["num_env_steps_sampled"]
            agent_steps += runners_res["num_agent_steps_sampled"] and sum(
                runners_res["num_agent_steps_sampled"].values())
            sample_s += result["timers"]["env_runner_sampling_timer"]
        wall = time.perf_counter() - started
    finally:
        algo.stop()
    return {"sample": env_steps / sample_s, "agents": agent_steps / sample_s,
            "train": env_steps / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runners", type=at_least(0), nargs="+", default=[1, 2])
    parser.add_argument("--iterations", type=at_least(1), default=3)
    parser.add_argument("--cpus", type=at_least(1), default=2, help="CPUs of the local Ray instance")
    parser.add_argument("--config", default="configs/dice-2p-rllib.yaml")
    args = parser.parse_args()
    from agents.trainers.config import load_config

    with refusals(parser):  # a missing --config, too many --runners, before Ray starts
        for runners in args.runners:
            load_config(args.config, [f"rllib.num_env_runners={runners}"])

    import ray
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        rows = [(n, bench(args.config, n, args.iterations)) for n in args.runners]
    finally:
        ray.shutdown()
    print(f"\n{args.config}, local Ray with {args.cpus} CPUs, {args.iterations} iterations "
          f"after a warm-up ({platform.processor() or platform.machine()}, "
          f"numpy {np.__version__})\n")
    print("| env runners | sample env steps/s | agent steps/s | train env steps/s |")
    print("|---|---|---|---|")
    for n, r in rows:
        print(f"| {n} | {r['sample']:,.0f} | {r['agents']:,.0f} | {r['train']:,.0f} |")


if __name__ == "__main__":
    main()
