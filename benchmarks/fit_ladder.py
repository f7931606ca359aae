"""Fit a frozen rating ladder: play its round robin, fit the pool, and write the result into
``agents/benchmark/ladder.json`` (atomically; the other ladders' entries are kept).

    python benchmarks/fit_ladder.py --ladder dice-2p [--games 10000] [--seed 2026]
        [--workers 1] [--bootstrap 1000] [--out agents/benchmark/ladder.json] [--quiet]

``--games`` is per table (:meth:`agents.benchmark.ladder.Ladder.tables`). The record
also names the code that made it: the git commit of this checkout and whether it had
uncommitted changes, and this command line. Run it from a clean checkout, so the commit
says exactly what played.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path

import torch
from arguments import at_least  # this folder: on its path

from agents.benchmark.ladder import (LADDER_FILE, fit_ladder, ladder_names, ladders_kept,
                                     save_fit)
from agents.evaluate import EvaluationError

ROOT = Path(__file__).resolve().parent.parent


def code_version() -> dict[str, object]:
    """The git commit of this checkout, whether it had changes, and the command line."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "command": " ".join(["python", "benchmarks/fit_ladder.py", *sys.argv[1:]])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ladder", required=True, choices=ladder_names())
    parser.add_argument("--games", type=at_least(1), default=10_000, help="games per table")
    parser.add_argument("--seed", type=at_least(0), default=2026)
    parser.add_argument("--workers", type=at_least(1), default=1)
    parser.add_argument("--bootstrap", type=at_least(100), default=1000,
                        help="bootstrap resamples for the intervals")
    parser.add_argument("--out", type=Path, default=LADDER_FILE)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    try:  # before the fit's hours: a directory or a file of another kind failed after them
        ladders_kept(args.out)
    except ValueError as exc:
        parser.error(f"argument --out: {exc}")
    code = code_version()  # before playing: the code that plays, not what it became
    # The pretrained nets' small batches: more threads only wait on each other.
    torch.set_num_threads(1)
    try:
        ladder = fit_ladder(args.ladder, args.games, args.seed, args.workers, args.bootstrap,
                            progress=not args.quiet)
    except EvaluationError as exc:
        parser.error(str(exc))
    except ValueError as exc:  # the fit: too few games for every member to win and lose
        parser.exit(1, f"error: {exc}; more --games may help\n")
    save_fit(dataclasses.replace(ladder, fit={**ladder.fit, "code": code}), args.out)
    for member, r in ladder.ratings.items():
        print(f"{member:24s} {r.rating:8.1f}  [{r.low:7.1f}, {r.high:7.1f}]  {r.games} games")
    for pair in ladder.fit["pairs"]:
        print(f"{' vs '.join(pair['pair']):40s} observed {pair['observed']:.4f}  "
              f"fitted {pair['fitted']:.4f}  ({pair['games']} games)")
    print(f"{args.ladder}: written to {args.out} in {ladder.fit['seconds']:.0f} s")


if __name__ == "__main__":
    main()
