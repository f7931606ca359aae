"""Train a Qwinto agent with PPO: ``python train.py --help``, or ``--help-config`` for
every config field. The same command as the installed ``qwinto-train``
(:mod:`agents.trainers.cli`), naming itself ``train.py``."""

from __future__ import annotations

import sys

from agents.trainers import cli


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, prog="train.py")


if __name__ == "__main__":
    sys.exit(main())
