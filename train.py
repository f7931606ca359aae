"""Train a Qwinto agent with PPO and report how it does against the scripted baselines.

    python train.py                                   # configs/default.yaml
    python train.py --config configs/dice-4p.yaml --device cuda
    python train.py run.total_steps=500000 ppo.learning_rate=1e-4   # override single fields
    python train.py --resume                          # continue runs/<name>/ after an interruption
    python train.py run.init_from=pretrained:dice-2p imitation.games=0   # start from a checkpoint

The run goes to ``runs/<run.name>/`` (config, checkpoints that ``agents.load`` accepts,
TensorBoard logs, the final evaluation table). Every config field is documented in
``agents/trainers/config.py`` and in ``configs/default.yaml``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "default.yaml"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    parser.add_argument("overrides", nargs="*", metavar="section.field=value",
                        help="override single config fields (values parsed as YAML)")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="YAML config file")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"],
                        help="shorthand for run.device=...")
    parser.add_argument("--seed", type=int, help="shorthand for run.seed=...")
    parser.add_argument("--trainer", choices=["torch", "sb3", "rllib"],
                        help="shorthand for run.trainer=...")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in runs/<run.name>/ from its last checkpoint")
    parser.add_argument("--runs-dir", default="runs", help="where run folders go")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from agents.trainers import train_from_config
    from agents.trainers.config import ConfigError, load_config
    from agents.trainers.run import ResumeError

    overrides = list(args.overrides)
    for name in ("device", "seed", "trainer"):
        if getattr(args, name) is not None:
            overrides.append(f"run.{name}={getattr(args, name)}")
    try:
        cfg = load_config(args.config, overrides)
        report = train_from_config(cfg, root=args.runs_dir, resume=args.resume,
                                   progress=not args.no_progress)
    except (ConfigError, ResumeError) as exc:
        print(f"train.py: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: say what --resume continues, no traceback
        print(f"\ntrain.py: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 130
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
