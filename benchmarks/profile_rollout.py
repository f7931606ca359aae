"""Where a step of the torch trainer's rollout goes, and what a GPU would make of it.

    python benchmarks/profile_rollout.py [--config configs/dice-2p-gpu.yaml] [--game dice]
        [--games 8192] [--steps 16] [--device cpu]

Builds the torch trainer of ``--config`` (the default opponent mix: 20% snapshots, 5%
random, 10% greedy, 5% expert; one snapshot in the pool), runs one whole rollout to warm
up (the bots' caches start empty),
then times ``--steps`` engine steps and splits each step's wall time by wrapping the
functions the rollout calls: the engine's step, the observations and masks, the network's
feature encoding and forward pass, the opponents, the episode bookkeeping; the rest
(sampling, indexing, the rollout storage) is what remains. On CPU every torch call runs
to its end before it returns, so the wrapped times are the phases' own times (on a GPU
they are not: profile there with ``torch.profiler``).

It also counts the torch calls per step (each is about one kernel launch on a GPU, some
5-10 microseconds there however small the work) and the host syncs (``tests/syncs.py``):
with no syncs, a GPU step costs about the larger of the launches and the arithmetic, which
is the projection the table ends with.

It wraps functions by name, so it profiles older commits of the trainer too (run it from
their checkout with ``PYTHONPATH=.``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import torch
from torch.overrides import TorchFunctionMode

from arguments import at_least, positive, refusals  # this folder: on its path
from agents.trainers import torch_ppo
from agents.trainers.config import DEVICE_FORMS, load_config
from agents.trainers.run import resolve_device

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from syncs import SyncCounter  # noqa: E402  (a test helper, not part of the package)

#: Phase name -> (object path, attribute) of the functions timed as that phase.
PHASES = {
    "engine step": [("engine", "step")],
    "observations and masks": [("engine", "observations"), ("engine", "action_masks")],
    "features (encode)": [("net", "encode")],
    "network forward": [("net", "forward_encoded")],
    "opponents": [("module", "play"), ("module", "_opponents_act")],
    "episode bookkeeping": [("episodes", "record"), ("ppo", "_games_ended")],
}


class CallCounter(TorchFunctionMode):
    """Counts every torch function and tensor method called from Python."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def timed(times: dict[str, float], phase: str, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            times[phase] += time.perf_counter() - start
    return wrapper


def targets(ppo: torch_ppo.TorchPPO) -> dict[str, object]:
    return {"engine": ppo.engine, "net": ppo.net, "module": torch_ppo,
            "episodes": ppo.episodes, "ppo": ppo}


def profile(ppo: torch_ppo.TorchPPO, steps: int) -> tuple[dict[str, float], float]:
    """Seconds per phase and in all over ``steps`` engine steps of the rollout (whole
    rollouts of at most the configured length; ``steps`` a multiple of it)."""
    times: dict[str, float] = defaultdict(float)
    ppo.pc.rollout_steps = min(steps, ppo.storage.rewards.shape[0])  # the storage's length
    with ExitStack() as stack:
        objs = targets(ppo)
        for phase, where in PHASES.items():
            for name, attr in where:
                fn = getattr(objs[name], attr, None)
                if fn is not None:
                    stack.enter_context(mock.patch.object(objs[name], attr,
                                                          timed(times, phase, fn)))
        start = time.perf_counter()
        for _ in range(-(-steps // ppo.pc.rollout_steps)):
            ppo.rollout()
        total = time.perf_counter() - start
    return dict(times), total


def counts(ppo: torch_ppo.TorchPPO, steps: int) -> tuple[float, float]:
    """Torch calls and host syncs per step of the rollout."""
    ppo.pc.rollout_steps = min(steps, ppo.storage.rewards.shape[0])
    with CallCounter() as calls, SyncCounter() as syncs:
        ppo.rollout()
    return calls.calls / steps, syncs.count / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="configs/dice-2p-gpu.yaml")
    parser.add_argument("--game", default=None, help="override env.game (dice or cards)")
    parser.add_argument("--games", type=at_least(1), default=8192)
    parser.add_argument("--steps", type=at_least(1), default=16)
    parser.add_argument("--device", default="cpu", help=f"run.device: {DEVICE_FORMS}")
    parser.add_argument("--launch-us", type=positive, default=8.0,
                        help="assumed GPU cost of one torch call (kernel launch), microseconds")
    args = parser.parse_args()
    overrides = [f"env.num_games={args.games}", f"run.device={args.device}", "imitation.games=0"]
    if args.game:
        overrides += [f"env.game={args.game}"] + (
            ["network.features=cards"] if args.game == "cards" else [])
    with refusals(parser):  # a missing --config, a bad --game or --device
        cfg = load_config(args.config, overrides)
        device = resolve_device(cfg.run.device)
    torch.manual_seed(0)
    ppo = torch_ppo.TorchPPO(cfg, device)
    ppo.pool.add_snapshot(ppo.net)
    ppo.rollout()  # warm-up, a whole rollout: opponents planned, the bots' caches filled
    args.steps = -(-args.steps // min(args.steps, cfg.ppo.rollout_steps)) * \
        min(args.steps, cfg.ppo.rollout_steps)
    times, total = profile(ppo, args.steps)
    ops, syncs = counts(ppo, 4)
    streams = ppo.seats.streams
    print(f"{cfg.env.game}, {cfg.env.num_players} players, {args.games} games "
          f"({streams} learner streams), device {device}, "
          f"{torch.get_num_threads()} torch threads, {args.steps} steps\n")
    print("| phase | ms per step | share |\n|---|---:|---:|")
    rest = total - sum(times.values())
    for phase in [*PHASES, "sampling, indexing, storage"]:
        t = times.get(phase, 0.0) if phase in PHASES else rest
        print(f"| {phase} | {1000 * t / args.steps:,.1f} | {100 * t / total:.0f}% |")
    print(f"| **rollout step** | **{1000 * total / args.steps:,.1f}** | 100% |\n")
    print(f"learner steps per second (rollout only): {streams * args.steps / total:,.0f}")
    print(f"torch calls per step: {ops:,.0f}; host syncs per step: {syncs:g}")
    launch_s = ops * args.launch_us * 1e-6
    print(f"launch-bound GPU step at {args.launch_us:g} us per call: {1000 * launch_s:.2f} ms "
          f"-> at most {streams / launch_s:,.0f} learner steps per second"
          + ("" if syncs == 0 else " (less: each sync also waits for the device)"))


if __name__ == "__main__":
    main()
