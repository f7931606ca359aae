"""``load(spec)``: the one call that turns a name or a file into a playable agent.

==========================  ===================================================
spec                        agent
==========================  ===================================================
``"random"``                :class:`agents.scripted.RandomAgent` (both games)
``"greedy"``                :class:`agents.scripted.GreedyAgent` (both games)
``"expert"``                :class:`agents.expert.ExpertAgent` (both games)
a path to a ``.pt`` file    :class:`agents.policy.PolicyAgent` from a checkpoint
                            (format in :mod:`agents.policy`; ``~`` expanded)
``"pretrained:<name>"``     the same, for a shipped checkpoint (:func:`pretrained_names`)
``"lookahead:<checkpoint>"``  :class:`agents.lookahead.LookaheadAgent`: a dice
                            checkpoint (a path or ``pretrained:<name>``) played by
                            one-roll lookahead on its value head
``"search:<checkpoint>"``   :class:`agents.search.SearchAgent`: a checkpoint of
                            either game played by simulating each decision with the
                            batched engine; settings as keyword arguments or in the
                            spec: ``"search[person]:pretrained:cards-2p"``,
                            ``"search[samples=32,turns=0]:<checkpoint>"``
``"module:Class"``          your own :class:`agents.base.Agent` subclass, built as
                            ``Class(game=..., num_players=..., **kwargs)`` (named
                            ``module:Class`` unless the class names itself); the
                            working folder is searched for ``module`` too
==========================  ===================================================

``game`` and ``num_players`` say what the agent will play; a checkpoint must match
them. Extra keyword arguments go to the agent's constructor (e.g.
``load("expert", tau=0.1)`` or ``load("run.pt", deterministic=False)``), all but
``network``, which a checkpoint's agent takes from its file.

Errors (all ``ValueError`` subclasses, the message names the spec and the problem):
:class:`AgentSpecError` for an unknown name or an agent that does not play the game
(or a ``module:Class`` that does not import, is no Agent, or fails to build),
:class:`CheckpointNotFoundError` for a missing file,
:class:`agents.policy.CheckpointError` for any other file that is not exactly a
checkpoint as it was saved (unreadable, a directory, corrupt, malformed; see
:func:`agents.policy.load_checkpoint`) or a checkpoint made for another game or player
count.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from qwinto_env.spec import SPECS

from .base import Agent, AgentSpecError

__all__ = ["load", "AgentSpecError", "CheckpointNotFoundError", "BUILTIN_AGENTS",
           "PLAYER_COUNTS", "pretrained_names", "has_spec_prefix"]

#: Where the shipped pretrained checkpoints live (package data).
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"
PRETRAINED_PREFIX = "pretrained:"
LOOKAHEAD_PREFIX = "lookahead:"
SEARCH_PREFIX = "search:"
#: A search spec with settings: ``search[samples=32,turns=0]:<checkpoint>``.
SEARCH_SETTINGS_PREFIX = "search["
PLANNERS = (LOOKAHEAD_PREFIX, SEARCH_PREFIX)
#: Every prefix :func:`load` reads (what a ``module:Class`` spec of a user's may not be).
SPEC_PREFIXES = (PRETRAINED_PREFIX, *PLANNERS, SEARCH_SETTINGS_PREFIX)
#: Player counts of each game (its spec's limits).
PLAYER_COUNTS = {name: spec.player_counts for name, spec in SPECS.items()}


def has_spec_prefix(spec: str) -> bool:
    """Whether ``spec`` starts with one of :data:`SPEC_PREFIXES` (``pretrained:``,
    ``lookahead:``, ``search:``, ``search[...]:``)."""
    return spec.startswith(SPEC_PREFIXES)


def is_search_spec(spec: str) -> bool:
    """Whether ``spec`` names a search agent (``search:...`` or ``search[...]:...``)."""
    return spec.startswith((SEARCH_PREFIX, SEARCH_SETTINGS_PREFIX))


def pretrained_names() -> list[str]:
    """Names of the shipped pretrained bots, for ``load("pretrained:<name>")``."""
    return sorted(p.stem for p in PRETRAINED_DIR.glob("*.pt"))


class CheckpointNotFoundError(AgentSpecError, FileNotFoundError):
    """A spec that looks like a checkpoint path, but no such file exists."""


def _random() -> type[Agent]:
    from .scripted import RandomAgent
    return RandomAgent


def _greedy() -> type[Agent]:
    from .scripted import GreedyAgent
    return GreedyAgent


def _expert() -> type[Agent]:
    from .expert import ExpertAgent
    return ExpertAgent


#: Built-in agent name -> (its class, imported when first asked for; games it plays).
BUILTIN_AGENTS: dict[str, tuple[Callable[[], type[Agent]], tuple[str, ...]]] = {
    "random": (_random, ("dice", "cards")),
    "greedy": (_greedy, ("dice", "cards")),
    "expert": (_expert, ("dice", "cards")),
}


def load(spec: str | os.PathLike, game: str = "dice", num_players: int = 2,
         **kwargs: Any) -> Agent:
    """Build the agent named by ``spec`` for ``game`` with ``num_players`` seats."""
    if not isinstance(game, str) or game not in PLAYER_COUNTS:
        raise AgentSpecError(f"unknown game {game!r}; choose one of {sorted(PLAYER_COUNTS)}")
    problem = SPECS[game].player_count_problem(num_players)
    if problem is not None:
        raise AgentSpecError(f"num_players {problem}")
    num_players = int(num_players)
    if isinstance(spec, str) and spec in BUILTIN_AGENTS:
        factory, games = BUILTIN_AGENTS[spec]
        if game not in games:
            raise AgentSpecError(f"agent {spec!r} does not play the {game} game "
                                 f"(it plays: {', '.join(games)})")
        return _construct(factory(), spec, game=game, num_players=num_players, **kwargs)
    if not isinstance(spec, (str, os.PathLike)):
        raise AgentSpecError(f"agent spec must be a name or a path, got {spec!r}")
    if isinstance(spec, str) and is_class_spec(spec):
        return _user_agent(spec, game, num_players, kwargs)
    if "network" in kwargs:  # Python's TypeError would blame the constructor's call
        raise AgentSpecError(f"agent {os.fspath(spec)!r} takes its network from the "
                             f"checkpoint, not as a setting")
    if isinstance(spec, str) and spec.startswith(PLANNERS + (SEARCH_SETTINGS_PREFIX,)):
        return _planner(spec, game, num_players, kwargs)
    network, _ = read_checkpoint(spec, game, num_players)
    from .policy import PolicyAgent

    agent = _construct(PolicyAgent, spec, network=network, game=game,
                       num_players=num_players, **kwargs)
    is_pretrained = isinstance(spec, str) and spec.startswith(PRETRAINED_PREFIX)
    agent.name = spec if is_pretrained else os.path.basename(os.fspath(spec))
    return agent


def is_class_spec(spec: str) -> bool:
    """Whether ``spec`` names a user's class, ``module:Class`` (not a spec prefix of
    :func:`load`'s, nor an existing file)."""
    return re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", spec) is not None \
        and not has_spec_prefix(spec) and not os.path.exists(spec)


def import_own(module: str) -> ModuleType:
    """Import a user's ``module`` (a bot class, a benchmark algorithm) as the command
    lines find it: from the working folder too."""
    if "" not in sys.path and os.getcwd() not in sys.path:
        # a console script's path lacks the working folder, which `python -m` puts
        # first: the user's module sits there either way (as uvicorn's app:module)
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(module)


def _user_agent(spec: str, game: str, num_players: int, kwargs: dict[str, Any]) -> Agent:
    """The :class:`Agent` subclass ``module:Class`` built for the game (AgentSpecError
    naming the spec when it does not import, is no Agent or fails to build)."""
    module, _, name = spec.partition(":")
    try:
        cls = getattr(import_own(module), name)
    except (ImportError, AttributeError) as exc:
        raise AgentSpecError(f"agent {spec!r}{_did_you_mean(spec, _named())}: cannot "
                             f"import {name} from {module}: {exc}")
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise AgentSpecError(f"agent {spec!r}: {module}.{name} is not a subclass of "
                             f"agents.base.Agent")
    _check_keywords(cls, spec, kwargs)
    try:
        agent = cls(game=game, num_players=num_players, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a user's class: any failure is its own
        raise AgentSpecError(f"agent {spec!r}: {name}(game={game!r}, num_players="
                             f"{num_players}) failed: {type(exc).__name__}: {exc}") from exc
    if agent.name == Agent.name:
        agent.name = spec
    return agent


def _named() -> list[str]:
    """The agents a name picks: the built-in ones and ``pretrained:<name>``."""
    return [*BUILTIN_AGENTS, *(PRETRAINED_PREFIX + name for name in pretrained_names())]


def _did_you_mean(word: str, choices: list[str]) -> str:
    """``" (did you mean 'x'?)"`` for the choice closest to ``word`` (case and spaces
    aside), or ``""``."""
    folded = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(word.strip().lower(), list(folded), n=1)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""


def _construct(build: Callable[..., Agent], spec: Any, **kwargs: Any) -> Agent:
    """``build(**kwargs)``, its keywords checked first (:func:`_check_keywords`)."""
    _check_keywords(build, spec, kwargs)
    return build(**kwargs)


def _check_keywords(build: Callable[..., Agent], spec: Any, kwargs: dict[str, Any]) -> None:
    """AgentSpecError naming a keyword argument ``build`` does not take (Python's
    TypeError would not say which agent, nor what it takes)."""
    params = inspect.signature(build).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            takes = sorted(set(params) - {"game", "num_players", "network"})
            raise AgentSpecError(f"agent {os.fspath(spec)!r} takes no setting {unknown}; "
                                 f"its settings: {takes or 'none'}")


def _spec_settings(spec: str) -> tuple[str, dict[str, Any]]:
    """``search[a=1,b=x,preset]:<checkpoint>`` -> (``search:<checkpoint>``, settings): the
    bracket's ``name=value`` items (numbers as numbers) and a bare word as ``preset``."""
    if not spec.startswith(SEARCH_SETTINGS_PREFIX):
        return spec, {}
    inside, close, rest = spec[len(SEARCH_PREFIX):].partition("]:")
    if not close:
        raise AgentSpecError(f"{spec!r}: settings go in brackets before the checkpoint, "
                             f"e.g. 'search[samples=32,turns=0]:pretrained:dice-2p'")
    settings: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in inside.split(","))):
        name, equals, text = item.partition("=")
        if not equals:
            name, text = "preset", item
        if name.strip() in settings:
            raise AgentSpecError(f"{spec!r}: setting {name.strip()!r} given twice")
        settings[name.strip()] = _number_or_text(text.strip())
    return SEARCH_PREFIX + rest, settings


def _number_or_text(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _planner(spec: str, game: str, num_players: int, kwargs: dict[str, Any]) -> Agent:
    """A ``lookahead:`` or ``search:`` agent planning with the checkpoint it names (a
    ``search[...]:`` spec carries settings, which keyword arguments may not repeat)."""
    plain, settings = _spec_settings(spec)
    both = sorted(set(settings) & set(kwargs))
    if both:
        raise AgentSpecError(f"{spec!r}: settings {both} given both in the spec and as "
                             f"keyword arguments")
    kwargs = {**settings, **kwargs}
    prefix = next(p for p in PLANNERS if plain.startswith(p))
    inner = plain[len(prefix):]
    if not inner or inner in BUILTIN_AGENTS or inner.startswith(PLANNERS):
        raise AgentSpecError(f"{spec!r}: {prefix[:-1]} plays a checkpoint (a path or "
                             f"pretrained:<name>), " + (f"not {inner!r}" if inner else
                                                        "and names none"))
    from .policy import CheckpointError

    if prefix == LOOKAHEAD_PREFIX:
        from .lookahead import LookaheadAgent as planner
    else:
        from .search import SearchAgent as planner
    _check_keywords(planner, spec, kwargs)
    network, data = read_checkpoint(inner, game, num_players)
    try:
        agent = planner.from_checkpoint(network, data, **kwargs)
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint {inner!r}: {exc}") from exc
    except AgentSpecError as exc:  # a bad setting: which of several agents is to blame
        raise AgentSpecError(f"{spec!r}: {exc}") from exc
    agent.name = spec
    return agent


def read_checkpoint(spec: str | os.PathLike, game: str, num_players: int) -> tuple[Any, dict]:
    """The network and checkpoint dict of a path or ``pretrained:<name>`` spec, checked
    against the game and player count (what ``load`` plays; trainers start from it too)."""
    given = spec
    if isinstance(spec, str) and spec.startswith(PRETRAINED_PREFIX):
        name = spec[len(PRETRAINED_PREFIX):]
        if name not in pretrained_names():
            raise AgentSpecError(f"no pretrained bot {name!r}"
                                 f"{_did_you_mean(name, pretrained_names())}; shipped: "
                                 f"{pretrained_names()}")
        spec = PRETRAINED_DIR / f"{name}.pt"
    path = os.path.expanduser(os.fspath(spec))  # the shell leaves "x,~/run.pt" alone
    looks_like_path = os.sep in path or path.endswith((".pt", ".pth")) or os.path.exists(path)
    if not looks_like_path and (path in BUILTIN_AGENTS or has_spec_prefix(path)):
        raise AgentSpecError(f"{path!r} names an agent, not a checkpoint: give a checkpoint "
                             f"path or {PRETRAINED_PREFIX}<name> ({pretrained_names()})")
    if not looks_like_path:
        raise AgentSpecError(f"unknown agent spec {path!r}{_did_you_mean(path, _named())}: "
                             f"expected one of "
                             f"{sorted(BUILTIN_AGENTS)}, {PRETRAINED_PREFIX}<name>, "
                             f"{LOOKAHEAD_PREFIX}<checkpoint>, {SEARCH_PREFIX}<checkpoint>, "
                             f"module:Class or a path to a checkpoint file")
    if not os.path.exists(path):
        raise CheckpointNotFoundError(f"checkpoint file {path!r} does not exist")
    from .policy import CheckpointError, load_checkpoint

    network, data = load_checkpoint(path)
    if data["game"] != game or int(data["num_players"]) != num_players:
        named = given if given is not spec else path  # pretrained:<name> as the user wrote it
        raise CheckpointError(f"checkpoint {named!r} is for the {data['game']} game with "
                              f"{data['num_players']} players, not the {game} game with "
                              f"{num_players} players")
    return network, data
