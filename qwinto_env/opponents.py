"""Opponents by name for the environments, from a registry that the agents fill.

The environments sit below the agents (:mod:`agents` imports :mod:`qwinto_env`, never
the reverse), yet ``gymnasium.make("Qwinto-v0", opponents="expert")`` takes bots by
name. A *loader* turns such a name (or a checkpoint path) into an agent:
``loader(spec, game=..., num_players=...)`` returns an object with
``act(observation, action_mask) -> int``. The loader used is, first found:

1. the one given to :func:`register_loader` (a test, or a user with bots of their own);
2. the one an installed package declares as an entry point in the group
   ``qwinto_env.opponents`` (the first by name if several do). This project's
   ``pyproject.toml`` declares ``agents = "agents.load:load"``, so an installed
   ``qwinto-env`` finds :func:`agents.load` after only ``import qwinto_env``.

An entry point, rather than an import of :mod:`agents` here, keeps the layers looking
down and lets another package of bots stand in for this one. Agent objects need no
loader: pass them as they are.
"""

from __future__ import annotations

import inspect
import os
from importlib.metadata import entry_points
from typing import Any, Callable, Sequence

import numpy as np

from .game import type_problem

__all__ = ["ENTRY_POINT_GROUP", "OpponentSpecError", "BotActionError", "register_loader",
           "opponent_loader", "make_opponents", "seat_specs", "make_agent", "checked_agent",
           "split_specs", "bot_action", "reset_problem"]

#: The entry-point group a package declares its loader in.
ENTRY_POINT_GROUP = "qwinto_env.opponents"

Loader = Callable[..., Any]
_registered: Loader | None = None


class OpponentSpecError(ValueError):
    """An ``opponents`` or ``learner_seat`` argument that cannot make a table."""


class BotActionError(ValueError):
    """A bot's ``act`` answered something that is no legal action of its mask."""


def bot_action(bot: Any, observation: Any, action_mask: np.ndarray) -> int:
    """``bot.act(observation, action_mask)`` as an int. An integer answers as the envs take
    it (:func:`~qwinto_env.game.type_problem`: Python and numpy integers, 0-d integer
    arrays; a tensor as its numpy array); :class:`BotActionError` naming the bot and its
    answer for anything else (``None``, a float, a bool) or an action outside the mask,
    before it reaches the game (where a float would be truncated, or the error would
    blame the seat's player)."""
    answer = bot.act(observation, action_mask)
    value = answer.detach().cpu().numpy() if hasattr(answer, "detach") else answer
    problem = type_problem(value)
    if problem is None:
        mask = np.asarray(action_mask)
        action = int(value)
        if 0 <= action < mask.shape[-1] and mask[action]:
            return action
        problem = f"not legal (legal: {np.flatnonzero(mask).tolist()})"
    name = getattr(bot, "name", None)
    raise BotActionError(f"bot {type(bot).__name__}" + (f" {name!r}" if isinstance(name, str)
                                                        else "")
                         + f" answered act() with {answer!r}: {problem}")


def split_specs(text: str) -> list[str]:
    """Comma-separated bot specs as a list (stripped): commas inside brackets belong to
    a spec's settings (``"search[samples=8,turns=0]:pretrained:dice-2p,expert"`` is two
    specs; a stray ``]`` closes nothing). Empty items stay, as ``""``, for the caller to
    refuse."""
    specs, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth = max(depth + (char == "[") - (char == "]"), 0)
        if char == "," and depth == 0:
            specs.append(text[start:i].strip())
            start = i + 1
    return specs + [text[start:].strip()]


def register_loader(loader: Loader | None) -> None:
    """Build opponents named by strings and paths with ``loader`` from now on (``None``:
    forget it, back to the entry points)."""
    global _registered
    _registered = loader


def opponent_loader() -> Loader:
    """The loader of opponents by name (see the module docstring).

    Raises :class:`OpponentSpecError` when none is registered and no installed package
    declares one.
    """
    if _registered is not None:
        return _registered
    declared = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda point: point.name)
    if not declared:
        raise OpponentSpecError(
            f"opponents given by name need a loader, and none is registered: install the "
            f"qwinto-env package, or reinstall it if it was installed before its entry point "
            f"{ENTRY_POINT_GROUP!r} (pip install -e .), call "
            f"qwinto_env.opponents.register_loader(agents.load), or pass agent objects")
    return declared[0].load()


def reset_problem(agent: Any) -> str | None:
    """Why the environments could not call ``agent.reset(seed=...)``, which they do at every
    seeded reset, or ``None`` (no ``reset`` method, or one that takes ``seed``). Asked when
    the agent is given, so that no reset fails half-way."""
    reset = getattr(agent, "reset", None)
    if not callable(reset):
        return None
    try:
        inspect.signature(reset).bind(seed=0)
    except ValueError:  # no signature to read (a builtin): the call itself will tell
        return None
    except TypeError:
        return (f"its reset{inspect.signature(reset)} takes no seed, and the environments "
                f"call reset(seed=...) to seed it: define reset(self, seed=None)")
    return None


def make_opponents(opponents: Any, game: str, num_players: int) -> list[Any]:
    """One agent per other seat (``num_players - 1``) from ``opponents``
    (:func:`seat_specs`); a spec is a name or checkpoint path for the
    :func:`opponent_loader`, or an object with ``act(observation, action_mask) -> int``
    (:func:`make_agent`)."""
    return [make_agent(spec, game, num_players) for spec in seat_specs(opponents, num_players)]


def seat_specs(opponents: Any, num_players: int) -> list[Any]:
    """The spec of each other seat (``num_players - 1``) from ``opponents``: one spec
    (reused for every other seat; a name or path then builds a separate agent per seat,
    an object is shared), a sequence of one spec (the same), or a sequence of exactly
    ``num_players - 1`` specs; :class:`OpponentSpecError` for another count."""
    count = num_players - 1
    if isinstance(opponents, (str, bytes)) or not isinstance(opponents, Sequence):
        return [opponents] * count
    specs = list(opponents)
    if len(specs) == 1:
        return specs * count
    if len(specs) != count:
        raise OpponentSpecError(
            f"opponents: expected one spec or {count} (one per other seat of "
            f"{num_players} players), got {len(specs)}: {specs!r}")
    return specs


def make_agent(spec: Any, game: str, num_players: int) -> Any:
    """One agent from one spec (as in :func:`make_opponents`): an object with ``act`` as it
    is, if :func:`checked_agent` passes it, else what the :func:`opponent_loader` makes of
    the name or path. A name holding a comma outside brackets (the command line's list of
    specs) is refused, pointing to a list; so is anything else, naming ``opponents``."""
    if callable(getattr(spec, "act", None)):
        return checked_agent(spec, game, num_players)
    if not isinstance(spec, (str, os.PathLike)):
        raise OpponentSpecError(f"opponents: {spec!r} is no opponent: give a bot's name, a "
                                f"checkpoint path or an agent object")
    if isinstance(spec, str) and len(split_specs(spec)) > 1 and not os.path.exists(spec):
        raise OpponentSpecError(f"agent spec {spec!r} names several agents: give them as a "
                                f"list, {split_specs(spec)!r}, one per seat (commas separate "
                                f"specs on the command line only)")
    return opponent_loader()(spec, game=game, num_players=num_players)


def checked_agent(agent: Any, game: str, num_players: int) -> Any:
    """``agent`` (an object given as an opponent), or :class:`OpponentSpecError` when its
    ``game`` or ``num_players`` differ from the table's or :func:`reset_problem` finds one."""
    for attr, want in (("game", game), ("num_players", num_players)):
        have = getattr(agent, attr, want)
        if have != want:
            raise OpponentSpecError(f"opponent {agent!r} has {attr}={have!r}, but the "
                                    f"table plays {attr}={want!r}")
    problem = reset_problem(agent)
    if problem:
        raise OpponentSpecError(f"opponent {agent!r}: {problem}")
    return agent
