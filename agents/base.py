"""The agent interface every Qwinto bot follows (scripted, neural, loaded from a file).

An agent sees exactly what a PettingZoo agent sees: its ego-centric observation vector
and the ``int8`` action mask. It returns one legal action:

>>> import numpy as np
>>> from agents import load
>>> agent = load("random", game="dice", num_players=2)
>>> agent.reset(seed=0)
>>> mask = np.zeros(37, dtype=np.int8); mask[[28, 34]] = 1
>>> agent.act(np.zeros(89, dtype=np.float32), mask) in (28, 34)
True

``act_batch(observations, masks)`` does the same for a batch ``(B, obs)`` / ``(B, A)``
and returns an ``int64`` array ``(B,)``. The base class implements it with a loop over
:meth:`Agent.act`; agents that can decide a batch at once (the random, greedy and expert
agents, the neural policy) override it so that they serve as opponents inside batched
engines without a Python loop per game. ``supports_batch`` says which. Those with
``accepts_tensors`` (random, greedy, expert; not the neural policy, which takes numpy)
also take torch tensors (observations and masks on any device, masks int8 or bool) and
answer a tensor on that device without waiting for it (no host sync); torch input is
trusted, so an empty mask row raises :class:`IllegalMaskError` on numpy input only.
Inputs of another shape than the agent's game and player count take
(:meth:`Agent.check_inputs`) raise :class:`InputShapeError`, on either kind of input
(only shapes are read).

Contract (checked by the tests over many random games): an agent never returns an
action outside the mask; it may keep state between calls but must forget it on
:meth:`Agent.reset`; all randomness comes from the generator that ``reset(seed=...)``
seeds, so a seeded agent is reproducible.
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np

from qwinto_env.batched.backend import backend_of
from qwinto_env.opponents import bot_action
from qwinto_env.spec import SPECS
from qwinto_env.view import BatchView, CardsView, DiceView, decode, decode_batch, decode_cards

__all__ = ["Agent", "DecodingAgent", "IllegalMaskError", "InputShapeError", "AgentSpecError",
           "legal_batch", "legal_rows", "check_integer", "check_number", "check_flag"]


class IllegalMaskError(ValueError):
    """An action mask with no legal action (the environments never produce one)."""


class InputShapeError(ValueError):
    """Observations or masks of another shape than the agent's game and player count."""


class AgentSpecError(ValueError):
    """A spec that names no agent, or an agent that cannot play the requested game."""


def check_integer(what: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int; :class:`AgentSpecError` ``"<what> must be an integer ..."``
    unless it is an integer (not a bool) from ``low`` to ``high``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"from {low} to {high}"
        raise AgentSpecError(f"{what} must be an integer {bounds}, got {value!r}")
    return int(value)


def check_number(what: str, value: Any, low: float = -math.inf, high: float = math.inf,
                 strict: bool = False) -> float:
    """``value`` as a float; :class:`AgentSpecError` ``"<what> must be a finite number
    ..."`` unless it is a finite real (not a bool) from ``low`` (excluded if ``strict``)
    to ``high``."""
    if isinstance(value, (bool, np.bool_)) \
            or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value < low or (strict and value == low) \
            or value > high:
        bounds = " and ".join(([f"{'>' if strict else '>='} {low:g}"] if low > -math.inf
                               else []) + ([f"<= {high:g}"] if high < math.inf else []))
        raise AgentSpecError(f"{what} must be a finite number{' ' if bounds else ''}"
                             f"{bounds}, got {value!r}")
    return float(value)


def check_flag(what: str, value: Any) -> bool:
    """``value`` as a bool; :class:`AgentSpecError` unless it is one (the string
    ``"False"`` is not: ``bool("False")`` is True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise AgentSpecError(f"{what} must be True or False, got {value!r}")
    return bool(value)


class Agent(abc.ABC):
    """A bot for one game (``"dice"`` or ``"cards"``) and one player count."""

    #: Short name used in tables, e.g. ``"expert"``.
    name: str = "agent"
    #: Whether :meth:`act_batch` decides a whole batch without a per-game Python loop.
    supports_batch: bool = False
    #: Whether :meth:`act_batch` also takes torch tensors (any device) and answers with a
    #: tensor on that device, without a host sync: such an agent plays inside the torch
    #: trainer's rollout on a GPU without stalling it.
    accepts_tensors: bool = False

    def __init__(self, game: str = "dice", num_players: int = 2):
        self.game = game
        self.num_players = int(num_players)
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; ``seed`` reseeds the agent's random generator."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    @abc.abstractmethod
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """One legal action (an index where ``action_mask`` is 1) for one observation."""

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Legal actions ``(B,)`` for observations ``(B, obs)`` and masks ``(B, A)``; by
        default :meth:`act` row by row, each answer checked
        (:func:`qwinto_env.opponents.bot_action`: BotActionError for no legal integer)."""
        self.check_inputs(observations, masks)
        return np.array([bot_action(self, o, m) for o, m in zip(observations, masks)],
                        dtype=np.int64)

    def check_inputs(self, observations: Any, masks: Any, batch: bool = True) -> None:
        """:class:`InputShapeError` unless ``observations`` and ``masks`` have the shapes
        of this agent's game and player count: ``(B, obs)`` and ``(B, A)``, or without
        ``batch`` ``(obs,)`` and ``(A,)``. Reads shapes only (a tensor costs no sync)."""
        spec = SPECS[self.game]
        size, actions = spec.observation_size(self.num_players), spec.num_actions
        got = tuple(np.shape(observations)), tuple(np.shape(masks))
        rows = got[0][:1] if batch else ()
        if got != (rows + (size,), rows + (actions,)):
            shape = "(B, {}) and (B, {})" if batch else "({},) and ({},)"
            raise InputShapeError(
                f"{self.name} plays the {spec.title} with {self.num_players} players: its "
                f"observations and masks are {shape.format(size, actions)}, got {got[0]} "
                f"and {got[1]}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(game={self.game!r}, num_players={self.num_players})"


class DecodingAgent(Agent):
    """A bot that reads the observation through :mod:`qwinto_env.view`: :meth:`act` plays a
    forced action itself and hands the decoded view and the legal actions (ascending) to
    :meth:`act_dice` or :meth:`act_cards`."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.check_inputs(observation, action_mask, batch=False)
        legal = legal_indices(action_mask)
        if legal.size == 1:
            return int(legal[0])
        if self.game == "cards":
            return self.act_cards(decode_cards(observation), legal)
        return self.act_dice(decode(observation), legal)

    def act_batch(self, observations: Any, masks: Any) -> Any:
        """Without ``supports_batch``, one row at a time; with it, the batch decoded once
        (:func:`qwinto_env.view.decode_batch`) and decided by :meth:`decide_batch`, rows
        with one legal action playing it."""
        if not self.supports_batch:
            return super().act_batch(observations, masks)
        self.check_inputs(observations, masks)
        legal, only = legal_batch(masks)
        B = backend_of(legal)
        if not legal.shape[0]:  # a pool's opponent with no seats (decoding needs rows)
            return B.astype(only, B.int64)
        decided = self.decide_batch(decode_batch(observations, self.game), legal)
        return B.astype(B.where(only >= 0, only, decided), B.int64)

    def decide_batch(self, view: BatchView, legal: Any) -> Any:
        """Actions ``(B,)`` for a batch view and its legal actions ``(B, A)`` (bool), in
        the view's kind of array; what a row with one legal action gets is ignored. Bots
        with ``supports_batch`` implement it, without host syncs on torch."""
        raise NotImplementedError(f"{type(self).__name__} decides one row at a time")

    @abc.abstractmethod
    def act_dice(self, view: DiceView, legal: np.ndarray) -> int:
        """One of ``legal`` (two or more) in the dice game."""

    @abc.abstractmethod
    def act_cards(self, view: CardsView, legal: np.ndarray) -> int:
        """One of ``legal`` (two or more) in the card game."""


def legal_rows(masks: Any) -> Any:
    """The legal actions ``(B, A)`` (bool) of a batch of masks (numpy or torch). Raises
    :class:`IllegalMaskError` for an empty row of a numpy batch (torch input is trusted:
    checking it would make the device wait)."""
    if backend_of(masks).name != "numpy":
        return masks > 0
    legal = np.asarray(masks) > 0
    if not legal.any(axis=1).all():
        raise IllegalMaskError("an action mask of the batch has no legal action")
    return legal


def legal_batch(masks: Any) -> tuple[Any, Any]:
    """:func:`legal_rows`, and per row its only legal action, or -1 where it has several."""
    B = backend_of(masks)
    legal = legal_rows(masks)
    counts = B.astype(legal, B.int64)
    return legal, B.where(counts.sum(1) == 1, counts.argmax(1), -1)


def legal_indices(action_mask: np.ndarray) -> np.ndarray:
    """The legal actions of one mask; raises :class:`IllegalMaskError` when there are none."""
    legal = np.flatnonzero(action_mask)
    if legal.size == 0:
        raise IllegalMaskError("the action mask has no legal action")
    return legal
