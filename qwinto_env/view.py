"""Structured view of an ego-centric observation: the documented way for bots to read it.

Bots that follow the rules (the scripted baselines, search bots, tools) should not
re-parse the flat observation vector themselves. :func:`decode` turns one dice-game
observation, or a batch of them, back into named numpy arrays: every sheet, every
misthrow count, the active seat, the phase, the roll and whether a re-roll is left.
It reads the observation through the named pieces of the layout the engines write it
by (:mod:`qwinto_env.spec.dice`), and a test checks that the view equals the engine's
own state on random games. :func:`decode_cards` does the same for the card game (layout
in :mod:`qwinto_env.spec.cards`): sheets, misthrows, hand sizes, the observer's own
hand, the stack tops, the draw-pile size, the phase and the announced play.

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

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import rules
from .spec import cards, dice
from .batched.backend import Backend, backend_of
from .spec.base import COLOUR_ROWS, SHEET, GameSpec, decode_sheet_blocks

__all__ = ["DiceView", "CardsView", "BatchView", "decode", "decode_cards",
           "decode_cards_public", "decode_batch",
           "play_announcements", "allowed_values", "decode_sheets", "dice_num_players",
           "cards_num_players"]


#: Bit ``r`` of a colour bitmask per row ``r``: colour flags -> bitmask.
_ROW_BITS = 1 << np.arange(rules.NUM_ROWS)
#: Game name -> its spec module.
_GAMES = {"dice": dice, "cards": cards}


class ObservationLayoutError(ValueError):
    """An array that does not have the shape of a dice-game observation."""


def _num_players(game: GameSpec, obs_size: int) -> int:
    """Number of players of ``game``'s observations of length ``obs_size``."""
    n = game.players_for_size(int(obs_size))
    if n is None:
        one, two = game.observation_size(1), game.observation_size(2)
        raise ObservationLayoutError(
            f"an observation of length {obs_size} is not a {game.title.replace(' ', '-')} "
            f"observation "
            f"(expected {two - one}*n + {2 * one - two} for n = {game.min_players}.."
            f"{game.max_players} players)")
    return n


def dice_num_players(obs_size: int) -> int:
    """Number of players of a dice-game observation of length ``obs_size``.

    The observation holds ``n`` seat blocks of 31, ``n`` active-player flags and 25
    common features, so ``obs_size = 32 n + 25``.
    """
    return _num_players(dice.SPEC, obs_size)


@dataclass(frozen=True)
class DiceView:
    """One dice-game observation (or a batch: every field gains a leading batch axis).

    Attributes:
        cells: ``(n, 27)`` int, per relative seat the sheet cells ``r*9+f`` (0 = empty).
        misthrows: ``(n,)`` int, per relative seat.
        active: relative seat of the active player (0 = the observer).
        phase: 0 choose, 1 re-roll decision, 2 entry, 3 over (see ``qwinto_env.spec.dice``).
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
        return dice.PHASE_NAMES[int(self.phase)]

    @property
    def rows(self) -> tuple[int, ...]:
        """Row indices of the rolled colours (single view)."""
        return dice.SUBSET_ROWS[int(self.subset)]


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
    layout = dice.observation_layout(n)
    common = layout.common
    seats = arr[..., layout.seats].reshape(arr.shape[:-1] + (n, dice.SEAT.size))
    cells, misthrows = decode_sheet_blocks(seats)
    active = arr[..., layout.active].argmax(-1)
    phase_bits = arr[..., common.phase]
    phase = np.where(phase_bits.max(-1) > 0.5, phase_bits.argmax(-1), dice.OVER)
    subset = ((arr[..., common.colours] > 0.5) * _ROW_BITS).sum(-1)
    value_bits = arr[..., common.value]
    value = np.where(value_bits.max(-1) > 0.5, value_bits.argmax(-1) + 1, 0)
    reroll = arr[..., common.reroll.start] > 0.5
    if arr.ndim == 1:
        return DiceView(cells, misthrows, int(active), int(phase), int(subset), int(value),
                        bool(reroll))
    return DiceView(cells, misthrows, active.astype(np.int64), phase.astype(np.int64),
                    subset.astype(np.int64), value.astype(np.int64), reroll)


# -- the card game -------------------------------------------------------------------

def cards_num_players(obs_size: int) -> int:
    """Number of players of a card-game observation of length ``obs_size`` (``33n + 149``)."""
    return _num_players(cards.SPEC, obs_size)


@dataclass(frozen=True)
class CardsView:
    """One card-game observation (single observations only).

    Attributes:
        cells: ``(n, 27)`` int, per relative seat the sheet (0 = empty).
        misthrows: ``(n,)`` int.
        hand_sizes: ``(n,)`` int, cards in each seat's hand.
        active: relative seat of the active player.
        hand: the observer's hand as card ids in slot order (sorted; empty slots left out).
        phase: 0 play, 1 entry, 2 over (see ``qwinto_env.spec.cards``).
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
        return cards.PHASE_NAMES[self.phase]

    @property
    def rows(self) -> tuple[int, ...]:
        """Row indices of the announced colours."""
        return COLOUR_ROWS[self.colours]


def _card_ids(block: np.ndarray) -> list[int]:
    """Card ids of consecutive ``feat(card)`` blocks; -1 for an all-zero (empty) block."""
    feats = block.reshape(-1, cards.CARD.size)
    colour = feats[:, cards.CARD.colour].argmax(1)
    value = feats[:, cards.CARD.value].argmax(1)
    present = feats.max(1) > 0.5
    return [int(c * len(cards.CARD_VALUES) + v) if p else -1
            for c, v, p in zip(colour, value, present)]


def decode_cards_public(obs: np.ndarray) -> dict[str, np.ndarray]:
    """What card-game observations ``(B, 33n+149)`` show besides :func:`decode_batch`'s
    fields (numpy): per seat ``hand_sizes`` (B, n), the draw ``pile`` size (B,), the
    ``covered`` cards (B, 32) and the stacks ``played`` this turn (B, 4) as bools, and the
    ``counting`` stack (B,), -1 before the play."""
    arr = np.asarray(obs, dtype=np.float32)
    n = cards_num_players(arr.shape[-1])
    layout = cards.observation_layout(n)
    common = layout.common
    seats = arr[:, layout.seats].reshape(len(arr), n, cards.SEAT.size)
    counting = arr[:, common.counting]
    return {"hand_sizes": np.rint(seats[..., cards.SEAT.hand_size.start]
                                  * cards.HAND_SIZE).astype(np.int64),
            "pile": np.rint(arr[:, common.pile.start] * cards.MAX_PILE).astype(np.int64),
            "covered": arr[:, common.covered] > 0.5,
            "played": arr[:, common.played] > 0.5,
            "counting": np.where(counting.max(1) > 0.5, counting.argmax(1), -1)}


def decode_cards(obs: np.ndarray) -> CardsView:
    """Decode one card-game observation ``(33n+149,)``; see :class:`CardsView`."""
    arr = np.asarray(obs, dtype=np.float32)
    if arr.ndim != 1:
        raise ObservationLayoutError(f"expected one card-game observation (1-D), got shape "
                                     f"{arr.shape}")
    n = cards_num_players(arr.shape[0])
    layout = cards.observation_layout(n)
    common = layout.common
    seats = arr[layout.seats].reshape(n, cards.SEAT.size)
    cells, misthrows = decode_sheet_blocks(seats)
    public = {k: v[0] for k, v in decode_cards_public(arr[None]).items()}
    active = int(arr[layout.active].argmax())
    hand = tuple(c for c in _card_ids(arr[layout.hand]) if c >= 0)
    phase_bits = arr[common.phase]
    phase = int(phase_bits.argmax()) if phase_bits.max() > 0.5 else cards.OVER
    tops = tuple(_card_ids(arr[common.tops]))
    played = public["played"]
    value = 0
    if played.any():
        value = int(round(float(arr[common.raw_value.start]) * cards.PLAY_VALUE_SPAN
                          + cards.MIN_PLAY_VALUE))
    colours = int(((arr[common.colours] > 0.5) * _ROW_BITS).sum())
    return CardsView(cells, misthrows, public["hand_sizes"], active, hand, phase, tops,
                     int(public["pile"]), public["covered"], played, int(public["counting"]),
                     value, colours)


# -- either game -------------------------------------------------------------------------

def decode_sheets(obs: np.ndarray, game: str = "dice") -> tuple[np.ndarray, np.ndarray]:
    """Just the sheets ``(..., n, 27)`` and misthrows ``(..., n)`` of one observation or a
    batch, for either game (both start with one block per seat: 27 cells, 4 misthrows)."""
    arr = np.asarray(obs, dtype=np.float32)
    if game not in _GAMES:
        raise ValueError(f"unknown game {game!r}; choose 'dice' or 'cards'")
    spec = _GAMES[game]
    n = _num_players(spec.SPEC, arr.shape[-1])
    seats = arr[..., spec.observation_layout(n).seats]
    return decode_sheet_blocks(seats.reshape(arr.shape[:-1] + (n, spec.SEAT.size)))


# -- batches of either game, on any backend ---------------------------------------------

@dataclass(frozen=True)
class BatchView:
    """A batch of observations of either game, as arrays of the batch's own kind (numpy,
    or torch on the observations' device): what batched bots read.

    Attributes (``B`` observations of ``n`` seats; seats relative, as in :class:`DiceView`):
        cells: ``(B, n, 27)`` int64 sheets; misthrows: ``(B, n)`` int64.
        active: ``(B,)`` relative seat of the active player.
        phase: ``(B,)`` the game's phase number (``spec.dice`` or ``spec.cards``).
        value: ``(B,)`` the rolled or announced value (0 before the roll or play; the
            card game's announcements may be ``MIN_PLAY_VALUE..0``).
        colours: ``(B,)`` bitmask of the rolled or announced colours (bit r = row r).
        reroll: ``(B,)`` bool, a re-roll is left (dice; all false for cards).
        hand: ``(B, 3)`` the observer's card ids by slot, -1 for an empty slot (cards only).
        tops: ``(B, 4)`` the stack tops' card ids (cards only).
    """

    cells: Any
    misthrows: Any
    active: Any
    phase: Any
    value: Any
    colours: Any
    reroll: Any
    hand: Any = None
    tops: Any = None

    @property
    def backend(self) -> Backend:
        return backend_of(self.cells)


def _rounded(B: Backend, x: Any) -> Any:
    """Non-negative ``x`` rounded to int64 (the observations' exact values, both backends)."""
    return B.astype(x + 0.5, B.int64)


def _colour_bits(flags: Any) -> Any:
    """Colour flags ``(..., 3)`` as bitmasks (bit r = row r)."""
    return sum((flags[..., r] > 0.5) * (1 << r) for r in range(rules.NUM_ROWS))


def _batch_card_ids(B: Backend, block: Any, count: int) -> Any:
    """Card ids ``(B, count)`` of ``count`` consecutive ``feat(card)`` blocks; -1 where empty.

    A card's block holds exactly two ones (its colour's and its value's), so one matrix
    product gives ``colour * 8 + value`` and the number of ones (a max and two argmaxes
    over such short axes cost several times more)."""
    feats = block.reshape(block.shape[0], count, cards.CARD.size)
    id_and_ones = feats @ _card_id_weights(B)
    ids = B.astype(id_and_ones[..., 0] + 0.5, B.int64)
    return B.where(id_and_ones[..., 1] > 0.5, ids, -1)


@functools.lru_cache(maxsize=None)
def _card_id_weights(B: Backend) -> Any:
    """``(CARD.size, 2)``: a block's weights to its card id, and to its count of ones."""
    weights = np.zeros((cards.CARD.size, 2), dtype=np.float32)
    weights[cards.CARD.colour, 0] = np.arange(cards.NUM_COLOURS) * len(cards.CARD_VALUES)
    weights[cards.CARD.value, 0] = np.arange(len(cards.CARD_VALUES))
    weights[:, 1] = 1.0
    return B.asarray(weights, B.float32)


def decode_batch(obs: Any, game: str = "dice") -> BatchView:
    """Decode observations ``(B, obs_size)`` of ``game`` (numpy or a torch tensor on any
    device) into a :class:`BatchView` of the same kind, without leaving the device."""
    if game not in _GAMES:
        raise ValueError(f"unknown game {game!r}; choose 'dice' or 'cards'")
    if len(obs.shape) != 2:
        raise ObservationLayoutError(f"expected a batch of observations (2-D), got shape "
                                     f"{tuple(obs.shape)}")
    spec, B = _GAMES[game], backend_of(obs)
    n = _num_players(spec.SPEC, obs.shape[1])
    layout = spec.observation_layout(n)
    common = layout.common  # its pieces index the whole observation
    seats = obs[:, layout.seats].reshape(obs.shape[0], n, spec.SEAT.size)
    cells = _rounded(B, seats[..., SHEET.cells] * rules.MAX_VALUE)
    misthrows = _rounded(B, seats[..., SHEET.misthrows].sum(-1))
    phase_bits = obs[:, common.phase]
    phase = B.where(B.amax(phase_bits, -1) > 0.5, phase_bits.argmax(-1), spec.OVER)
    colours = _colour_bits(obs[:, common.colours])
    active = obs[:, layout.active].argmax(-1)
    if game == "dice":
        value_bits = obs[:, common.value]
        value = B.where(B.amax(value_bits, -1) > 0.5, value_bits.argmax(-1) + 1, 0)
        return BatchView(cells, misthrows, active, phase, value, colours,
                         obs[:, common.reroll.start] > 0.5)
    played = B.amax(obs[:, common.played], -1) > 0.5
    raw = _rounded(B, obs[:, common.raw_value.start] * cards.PLAY_VALUE_SPAN)
    value = B.where(played, raw + cards.MIN_PLAY_VALUE, 0)
    return BatchView(cells, misthrows, active, phase, value, colours, phase < 0,
                     _batch_card_ids(B, obs[:, layout.hand], cards.HAND_SIZE),
                     _batch_card_ids(B, obs[:, common.tops], cards.NUM_STACKS))


@functools.lru_cache(maxsize=None)
def _card_tables(B: Backend) -> tuple[Any, Any, Any]:
    """The counted-card index, card values and colour bits on ``B``'s device (made once:
    a copy to the device per call would make a GPU wait)."""
    return (B.asarray(cards.PLAY_COUNTED.reshape(-1), B.int64),
            B.asarray(cards.CARD_VALUE, B.int64), B.asarray(cards.CARD_COLOUR_BIT, B.int64))


def play_announcements(view: BatchView) -> tuple[Any, Any]:
    """Value and colour bitmask ``(B, NUM_ACTIONS - SINGLE_FIRST)`` that each play action
    (column ``a - SINGLE_FIRST``) announces for a card-game batch: the array form of
    :func:`qwinto_env.spec.cards.play_result`. Plays that use an empty slot give
    meaningless entries (they are never legal)."""
    B = view.backend
    counted_index, values, colour_bits = _card_tables(B)
    known = B.concat([view.hand, view.tops], 1)
    counted = B.take(known, counted_index, 1).reshape(known.shape[0], -1, 3)
    counted = B.where(counted < 0, 0, counted)
    value = B.take(values, counted, 0).sum(-1)
    bits = B.take(colour_bits, counted, 0)
    return value, bits[..., 0] | bits[..., 1] | bits[..., 2]


@functools.lru_cache(maxsize=None)
def _peer_table(B: Backend) -> Any:
    """On ``B``'s device (made once): per cell its two column peers (index 27, an empty
    padding cell, where it has fewer)."""
    return B.asarray(rules.CELL_PEER_ARRAY.T.copy(), B.int64)


def allowed_values(cells: Any) -> Any:
    """The array form of :func:`qwinto_env.rules.cells_allowed_values`: for sheets
    ``(..., 27)`` (numpy or torch, e.g. ``BatchView.cells``), the int64 bitmasks ``(...,
    27)`` of the values each cell allows (bit ``v`` for value ``v``; 0 on a written cell),
    computed on the sheets' own backend and device."""
    B = backend_of(cells)
    flat = B.astype(cells, B.int64).reshape(-1, rules.NUM_CELLS)
    rows = flat.reshape(-1, rules.NUM_ROWS, rules.NUM_FIELDS)
    # A value fits an empty cell when it lies strictly between the largest number written
    # to its left (lo) and the smallest written to its right (hi): running extremes.
    edge = B.zeros(rows.shape[:-1] + (1,), B.int64)
    lo = B.concat([edge, B.cummax(rows, -1)[..., :-1]], -1)
    above = B.where(rows > 0, -rows, -(rules.MAX_VALUE + 1))
    hi = -B.concat([B.flip(B.cummax(B.flip(above, -1), -1), -1)[..., 1:],
                    edge - (rules.MAX_VALUE + 1)], -1)
    between = (1 << hi) - (2 << lo)  # bits lo+1 .. hi-1
    between = B.where(between > 0, between, 0).reshape(flat.shape)
    written = 1 << B.concat([flat, B.zeros((flat.shape[0], 1), B.int64)], 1)
    peers = _peer_table(B)
    taken = B.take(written, peers[0], 1) | B.take(written, peers[1], 1)
    allowed = B.where(flat > 0, 0, between & ~taken & rules.ALL_VALUES_BITS)
    return allowed.reshape(cells.shape)
