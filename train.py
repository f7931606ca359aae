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
import re
import sys
from pathlib import Path

from agents.trainers.config import ConfigError, check_resources, describe_plan, load_config

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "default.yaml"


class _Parser(argparse.ArgumentParser):
    """An argument error raises :class:`ConfigError` (one line, exit code 2 from
    :func:`main`) instead of printing the usage and exiting."""

    def error(self, message: str):
        raise ConfigError(re.sub(r"^argument (\S+): ", r"\1: ", message))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = _Parser(prog="train.py", description=__doc__.split("\n")[0],
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
    return parser.parse_intermixed_args(argv)  # overrides before and after options


def main(argv: list[str] | None = None) -> int:
    """Train as the arguments say; 0 when done. Every bad argument or config is refused
    before anything is built or written: one line ``train.py: error: <field>: <reason>``
    on stderr, and 2."""
    try:
        args = parse_args(argv)
        overrides = list(args.overrides)
        for name in ("device", "seed", "trainer"):
            if getattr(args, name) is not None:
                overrides.append(f"run.{name}={getattr(args, name)}")
        cfg = load_config(args.config, overrides)
        check_resources(cfg, args.runs_dir, resume=args.resume)
    except ConfigError as exc:
        return _refuse(exc)
    from agents.trainers import train_from_config  # torch and the trainer: seconds to import
    from agents.trainers.run import ResumeError

    try:
        report = train_from_config(cfg, root=args.runs_dir, resume=args.resume,
                                   progress=not args.no_progress,
                                   on_start=lambda: print(describe_plan(cfg, args.resume),
                                                          flush=True))
    except (ConfigError, ResumeError) as exc:
        return _refuse(exc)
    except KeyboardInterrupt as exc:  # Ctrl-C: say what --resume continues, no traceback
        print(f"\ntrain.py: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 130
    print(report)
    return 0


def _refuse(exc: Exception) -> int:
    # one line, even where the reason quotes a library's multi-line message
    print("train.py: error: " + " ".join(str(exc).split()), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
