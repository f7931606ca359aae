"""The benchmark scripts' command lines refuse bad input as usage errors that name the
option (``<script>: error: argument --games: must be at least 1, got 0``), not with a
traceback, an endless loop or a table of zeros.

Argument types: :func:`at_least` (integers), :func:`positive` (finite numbers),
:func:`torch_device`. :func:`check_players` asks the game specs which player counts they
seat; :func:`refusals` turns the project's own refusal of a config or a bot (a
``ConfigError`` or ``AgentSpecError``, raised where the script builds it) into the usage
error. A script imports this module from its own folder (Python puts it on the path).
"""

from __future__ import annotations

import argparse
import contextlib
import math
from typing import Callable, Iterable, Iterator

from agents.base import AgentSpecError
from agents.trainers.config import DEVICE, DEVICE_FORMS, ConfigError
from qwinto_env.spec import SPECS


def at_least(least: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer of at least ``least``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value
    return parse


def positive(text: str) -> float:
    """An argparse ``type``: a finite number above 0 (a time, a cost)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text!r}")
    return value


def torch_device(text: str) -> str:
    """An argparse ``type``: a device the trainer takes (``run.device``: ``cpu``, ``cuda``,
    ``cuda:1``, ...); whether torch sees that GPU is :func:`refusals`' business."""
    if not DEVICE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"must be one of {DEVICE_FORMS}, got {text!r}")
    return text


def check_players(parser: argparse.ArgumentParser, games: Iterable[str],
                  counts: Iterable[int]) -> None:
    """A usage error naming ``--players`` unless every game seats every count."""
    for game in games:
        for count in counts:
            try:
                SPECS[game].check_num_players(count)
            except ValueError as exc:
                parser.error(f"argument --players: {exc}")


@contextlib.contextmanager
def refusals(parser: argparse.ArgumentParser) -> Iterator[None]:
    """Within the block, a config or a bot the project refuses is a usage error."""
    try:
        yield
    except (ConfigError, AgentSpecError) as exc:
        parser.error(str(exc))
