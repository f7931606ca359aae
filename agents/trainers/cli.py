"""The training command: ``qwinto-train`` (the console script) and ``python train.py`` (a
wrapper in the repository) are :func:`main`.

Every bad argument or config is refused before anything is built or written; then the
plan is printed, the run trains, and the final report is printed. ``--help-config`` lists
every config field (:func:`~agents.trainers.config.describe_fields`).
"""

from __future__ import annotations

import argparse
import re
import sys

from qwinto_env.console import command_exits, say, warnings_as_lines

from .config import (DEVICE_FORMS, ConfigError, TrainConfig, describe_fields, describe_plan,
                     load_config, shipped_configs)
from .preflight import check_resources, is_run_config

EXAMPLES = """\
examples:
  {prog}                                   # the default config
  {prog} --config dice-4p --device cuda    # a shipped config by name, or a YAML file
  {prog} --device cuda:1                   # the second GPU (cuda = the first)
  {prog} run.total_steps=500000 ppo.learning_rate=1e-4   # override single fields
  {prog} --resume                          # continue runs/<name>/ after an interruption
  {prog} run.init_from=pretrained:dice-2p imitation.games=0   # start from a checkpoint
  {prog} --help-config                     # every config field: type, default, range, doc

The run goes to runs/<run.name>/ (config, policy checkpoints that agents.load accepts,
TensorBoard logs, the final evaluation table).

shipped configs: {configs}"""


class _Parser(argparse.ArgumentParser):
    """An argument error raises :class:`ConfigError` (one line, exit code 2 from
    :func:`main`) instead of printing the usage and exiting."""

    def error(self, message: str):
        raise ConfigError(re.sub(r"^argument (\S+): ", r"\1: ", message))


def parse_args(argv: list[str] | None = None, prog: str = "qwinto-train") -> argparse.Namespace:
    parser = _Parser(prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
                     description="Train a Qwinto agent with PPO and report how it does "
                                 "against the scripted baselines.",
                     epilog=EXAMPLES.format(prog=prog, configs=", ".join(shipped_configs())))
    parser.add_argument("overrides", nargs="*", metavar="section.field=value",
                        help="override single config fields (values parsed as YAML)")
    parser.add_argument("--config", default="default",
                        help="a YAML config file, or the name of a shipped config")
    parser.add_argument("--help-config", action="store_true",
                        help="list every config field (type, default, range, doc) and exit")
    parser.add_argument("--device", help=f"shorthand for run.device=... ({DEVICE_FORMS})")
    parser.add_argument("--seed", type=int, help="shorthand for run.seed=...")
    parser.add_argument("--trainer", choices=["torch", "sb3", "rllib"],
                        help="shorthand for run.trainer=...")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in runs/<run.name>/ from its last checkpoint")
    parser.add_argument("--runs-dir", default="runs", help="where run folders go")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_intermixed_args(argv)  # overrides before and after options


def main(argv: list[str] | None = None, prog: str = "qwinto-train") -> int:
    """Train as the arguments say; 0 when done. Every bad argument or config is refused
    before anything is built or written: one line ``<prog>: error: <field>: <reason>``
    on stderr, and 2. Warnings are one line each, ``<prog>: warning: <message>``."""
    with warnings_as_lines(prog), command_exits(prog):  # `| head`: no traceback
        return _main(argv, prog)


def _main(argv: list[str] | None, prog: str) -> int:
    try:
        args = parse_args(argv, prog)
        if args.help_config:
            print(describe_fields())
            return 0
        cfg = config_of(args)
        check_resources(cfg, args.runs_dir, resume=args.resume)
    except ConfigError as exc:
        return _refuse(prog, exc)
    from . import train_from_config  # torch and the trainer: seconds to import
    from .run import ResumeError

    try:
        report = train_from_config(cfg, root=args.runs_dir, resume=args.resume,
                                   progress=not args.no_progress,
                                   on_start=lambda: print(describe_plan(cfg, args.resume),
                                                          flush=True))
    except (ConfigError, ResumeError) as exc:
        return _refuse(prog, exc)
    except KeyboardInterrupt as exc:  # Ctrl-C: say what --resume continues, no traceback
        print(f"\n{prog}: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 130
    print(report)
    return 0


def config_of(args: argparse.Namespace) -> TrainConfig:
    """The config that ``args`` (of :func:`parse_args`) name: ``--config`` with the
    overrides and the shorthand options; :class:`ConfigError` if it does not load."""
    overrides = list(args.overrides)
    for name in ("device", "seed", "trainer"):
        if getattr(args, name) is not None:
            overrides.append(f"run.{name}={getattr(args, name)}")
    # A run's config.yaml holds every field: a resume refuses one it lost.
    return load_config(args.config, overrides,
                       complete=args.resume and is_run_config(args.config))


def _refuse(prog: str, exc: Exception) -> int:
    say(prog, "error", exc)
    return 2
