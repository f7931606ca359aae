"""Structured view of an ego-centric observation: the documented way for bots to read it.

Bots that follow the rules (the scripted baselines, search bots, tools) should not
re-parse the flat observation vector themselves. :func:`decode` turns one dice-game
observation, or a batch of them, back into named numpy arrays: every sheet, every
misthrow count, the active seat, the phase, the roll and whether a re-roll is left.
It inverts the layout documented in :mod:`qwinto_env.parallel` using the constants of
:mod:`qwinto_env.dice`, and a test checks that the view equals the engine's own state
on random games. :func:`decode_cards` does the same for the card game (layout and
constants in :mod:`qwinto_env.cards`): sheets, misthrows, hand sizes, the observer's
own hand, the stack tops, the draw-pile size, the phase and the announced play.

Seats are **relative**, as in the observation: seat 0 is the observer, seat ``k`` the
``k``-th seat after it in turn order.

>>> from qwinto_env.dice import DiceGame
>>> game = DiceGame(num_players=2, seed=0)
>>> obs = game.features()[game.observation_index(1)]
>>> v = decode(obs)
>>> v.num_players, v.phase_name, v.active, int(v.cells.sum())
(2, 'choose', 1, 0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import rules
from . import cards as _cards
from .dice import COMMON, PHASE_NAMES, SEAT_BLOCK, SUBSET_ROWS, OVER

__all__ = ["DiceView", "CardsView", "decode", "decode_cards", "decode_sheets",
           "dice_num_players", "cards_num_players"]


class ObservationLayoutError(ValueError):
    """An array that does not have the shape of a dice-game observation."""


def dice_num_players(obs_size: int) -> int:
    """Number of players of a dice-game observation of length ``obs_size``.

    The observation holds ``n`` seat blocks of 31, ``n`` active-player flags and 25
    common features, so ``obs_size = 32 n + 25``.
    """
    n, rest = divmod(int(obs_size) - COMMON, SEAT_BLOCK + 1)
    if rest or not 1 <= n <= 6:
        raise ObservationLayoutError(
            f"an observation of length {obs_size} is not a dice-game observation "
            f"(expected 32*n + 25 for n = 1..6 players)")
    return n


@dataclass(frozen=True)
class DiceView:
    """One dice-game observation (or a batch: every field gains a leading batch axis).

    Attributes:
        cells: ``(n, 27)`` int, per relative seat the sheet cells ``r*9+f`` (0 = empty).
        misthrows: ``(n,)`` int, per relative seat.
        active: relative seat of the active player (0 = the observer).
        phase: 0 choose, 1 re-roll decision, 2 entry, 3 over (see ``qwinto_env.dice``).
        subset: bitmask of the rolled colours (bit 0 orange, 1 yellow, 2 purple); 0 before
            a roll.
        value: the rolled value 1..18, 0 before a roll.
        reroll_available: whether the active player may still re-roll.
    """

    cells: np.ndarray
    misthrows: np.ndarray
    active: np.ndarray | int
    phase: np.ndarray | int
    subset: np.ndarray | int
    value: np.ndarray | int
    reroll_available: np.ndarray | bool

    @property
    def num_players(self) -> int:
        """Number of seats."""
        return int(self.cells.shape[-2])

    @property
    def sheets(self) -> np.ndarray:
        """Sheets as ``(..., n, 3, 9)`` int arrays (rows orange, yellow, purple)."""
        return self.cells.reshape(self.cells.shape[:-1] + (rules.NUM_ROWS, rules.NUM_FIELDS))

    @property
    def phase_name(self) -> str:
        """Phase name of a single view: ``"choose"``, ``"reroll"``, ``"entry"``, ``"over"``."""
        return PHASE_NAMES[int(self.phase)]

    @property
    def rows(self) -> tuple[int, ...]:
        """Row indices of the rolled colours (single view)."""
        return SUBSET_ROWS[int(self.subset)]


def decode(obs: np.ndarray) -> DiceView:
    """Decode a dice-game observation ``(32n+25,)`` or a batch ``(B, 32n+25)``.

    The number of players is read from the length. Values are recovered exactly (cells
    are stored as ``value / 18`` in float32 and rounded back).
    """
    arr = np.asarray(obs, dtype=np.float32)
    if arr.ndim not in (1, 2):
        raise ObservationLayoutError(
            f"expected one observation (1-D) or a batch (2-D), got shape {arr.shape}")
    n = dice_num_players(arr.shape[-1])
    seats = arr[..., :n * SEAT_BLOCK].reshape(arr.shape[:-1] + (n, SEAT_BLOCK))
    cells = np.rint(seats[..., :rules.NUM_CELLS] * rules.MAX_VALUE).astype(np.int64)
    misthrows = np.rint(seats[..., rules.NUM_CELLS:].sum(-1)).astype(np.int64)
    base = n * SEAT_BLOCK
    active = arr[..., base:base + n].argmax(-1)
    base += n
    phase_bits = arr[..., base:base + 3]
    phase = np.where(phase_bits.max(-1) > 0.5, phase_bits.argmax(-1), OVER)
    colours = arr[..., base + 3:base + 6] > 0.5
    subset = (colours * np.array([1, 2, 4])).sum(-1)
    value_bits = arr[..., base + 6:base + 6 + rules.MAX_VALUE]
    value = np.where(value_bits.max(-1) > 0.5, value_bits.argmax(-1) + 1, 0)
    reroll = arr[..., base + 6 + rules.MAX_VALUE] > 0.5
    if arr.ndim == 1:
        return DiceView(cells, misthrows, int(active), int(phase), int(subset), int(value),
                        bool(reroll))
    return DiceView(cells, misthrows, active.astype(np.int64), phase.astype(np.int64),
                    subset.astype(np.int64), value.astype(np.int64), reroll)


# -- the card game -------------------------------------------------------------------

def cards_num_players(obs_size: int) -> int:
    """Number of players of a card-game observation of length ``obs_size`` (``33n + 149``)."""
    n, rest = divmod(int(obs_size) - _cards.HAND_BLOCK - _cards.COMMON,
                     _cards.PUBLIC_BLOCK + 1)
    if rest or not 1 <= n <= 4:
        raise ObservationLayoutError(
            f"an observation of length {obs_size} is not a card-game observation "
            f"(expected 33*n + 149 for n = 1..4 players)")
    return n


@dataclass(frozen=True)
class CardsView:
    """One card-game observation (single observations only).

    Attributes:
        cells: ``(n, 27)`` int, per relative seat the sheet (0 = empty).
        misthrows: ``(n,)`` int.
        hand_sizes: ``(n,)`` int, cards in each seat's hand.
        active: relative seat of the active player.
        hand: the observer's hand as card ids in slot order (sorted; empty slots left out).
        phase: 0 play, 1 entry, 2 over (see ``qwinto_env.cards``).
        tops: the four stack tops (card ids), stacks 0..3.
        pile_size: cards left in the draw pile.
        covered: ``(32,)`` bool, the cards lying under the tops.
        played: ``(4,)`` bool, the stacks that received a card this turn.
        counting_stack: the stack whose card's neighbours count, -1 before the play.
        value: the announced value (-6..18), 0 before the play.
        colours: bitmask of the announced colours (bit r = row r), 0 before the play.
    """

    cells: np.ndarray
    misthrows: np.ndarray
    hand_sizes: np.ndarray
    active: int
    hand: tuple[int, ...]
    phase: int
    tops: tuple[int, ...]
    pile_size: int
    covered: np.ndarray
    played: np.ndarray
    counting_stack: int
    value: int
    colours: int

    @property
    def num_players(self) -> int:
        return int(self.cells.shape[0])

    @property
    def sheets(self) -> np.ndarray:
        return self.cells.reshape(-1, rules.NUM_ROWS, rules.NUM_FIELDS)

    @property
    def phase_name(self) -> str:
        return _cards.PHASE_NAMES[self.phase]

    @property
    def rows(self) -> tuple[int, ...]:
        """Row indices of the announced colours."""
        return _cards.COLOUR_ROWS[self.colours]


def _card_ids(block: np.ndarray) -> list[int]:
    """Card ids of consecutive ``feat(card)`` blocks; -1 for an all-zero (empty) block."""
    feats = block.reshape(-1, _cards.CARD_FEATS)
    colour = feats[:, :_cards.NUM_COLOURS].argmax(1)
    value = feats[:, _cards.NUM_COLOURS:].argmax(1)
    present = feats.max(1) > 0.5
    return [int(c * len(_cards.CARD_VALUES) + v) if p else -1
            for c, v, p in zip(colour, value, present)]


def decode_cards(obs: np.ndarray) -> CardsView:
    """Decode one card-game observation ``(33n+149,)``; see :class:`CardsView`."""
    arr = np.asarray(obs, dtype=np.float32)
    if arr.ndim != 1:
        raise ObservationLayoutError(f"expected one card-game observation (1-D), got shape "
                                     f"{arr.shape}")
    n = cards_num_players(arr.shape[0])
    pb = _cards.PUBLIC_BLOCK
    seats = arr[:n * pb].reshape(n, pb)
    cells = np.rint(seats[:, :rules.NUM_CELLS] * rules.MAX_VALUE).astype(np.int64)
    misthrows = np.rint(seats[:, rules.NUM_CELLS:rules.NUM_CELLS + rules.MAX_MISTHROWS]
                        .sum(1)).astype(np.int64)
    hand_sizes = np.rint(seats[:, -1] * _cards.HAND_SIZE).astype(np.int64)
    base = n * pb
    active = int(arr[base:base + n].argmax())
    base += n
    hand = tuple(c for c in _card_ids(arr[base:base + _cards.HAND_BLOCK]) if c >= 0)
    common = arr[base + _cards.HAND_BLOCK:]
    phase_bits = common[_cards.C_PHASE:_cards.C_PHASE + 2]
    phase = int(phase_bits.argmax()) if phase_bits.max() > 0.5 else _cards.OVER
    tops = tuple(_card_ids(common[_cards.C_TOPS:_cards.C_PILE]))
    pile = int(round(float(common[_cards.C_PILE]) * _cards.MAX_PILE))
    covered = common[_cards.C_COVERED:_cards.C_PLAYED] > 0.5
    played = common[_cards.C_PLAYED:_cards.C_COUNTING] > 0.5
    counting = common[_cards.C_COUNTING:_cards.C_VALUE]
    counting_stack = int(counting.argmax()) if counting.max() > 0.5 else -1
    value = 0
    if played.any():
        value = int(round(float(common[_cards.C_RAW_VALUE]) * _cards.PLAY_VALUE_SPAN
                          + _cards.MIN_PLAY_VALUE))
    colours = int(((common[_cards.C_COLOURS:_cards.C_COLOURS + 3] > 0.5)
                   * np.array([1, 2, 4])).sum())
    return CardsView(cells, misthrows, hand_sizes, active, hand, phase, tops, pile, covered,
                     played, counting_stack, value, colours)


# -- either game -------------------------------------------------------------------------

def decode_sheets(obs: np.ndarray, game: str = "dice") -> tuple[np.ndarray, np.ndarray]:
    """Just the sheets ``(..., n, 27)`` and misthrows ``(..., n)`` of one observation or a
    batch, for either game (both start with one block per seat: 27 cells, 4 misthrows)."""
    arr = np.asarray(obs, dtype=np.float32)
    if game == "dice":
        n, block = dice_num_players(arr.shape[-1]), SEAT_BLOCK
    elif game == "cards":
        n, block = cards_num_players(arr.shape[-1]), _cards.PUBLIC_BLOCK
    else:
        raise ValueError(f"unknown game {game!r}; choose 'dice' or 'cards'")
    seats = arr[..., :n * block].reshape(arr.shape[:-1] + (n, block))
    cells = np.rint(seats[..., :rules.NUM_CELLS] * rules.MAX_VALUE).astype(np.int64)
    misthrows = np.rint(seats[..., rules.NUM_CELLS:rules.NUM_CELLS + rules.MAX_MISTHROWS]
                        .sum(-1)).astype(np.int64)
    return cells, misthrows
