"""Simple scripted baselines: ``random`` (uniform legal) and ``greedy`` (natural positions).

Both play both games (dice and cards) with any player count.

Both read the game through :func:`qwinto_env.view.decode` and the rules through
:mod:`qwinto_env.rules`; neither ever picks an action outside the mask.

``greedy`` for the dice game:

* every field has a *natural value*, rising evenly along the sheet's 12 grid columns
  from 1 (column 0) to 18 (column 11);
* at entry it writes into the legal field whose natural value is closest to the roll,
  if the distance is at most ``tolerance``; otherwise it passes, except when passing
  is a misthrow (it is active): then it writes into the closest legal field anyway;
* it rolls the dice subset with the highest probability of a value that fits some
  field of the rolled colours within ``tolerance`` and re-rolls once when the first
  roll fits nowhere.

``greedy`` for the card game enters the same way and plays the card(s) whose announced
value fits some field of the announced colours most closely.

Both decide a batch at once (``act_batch``, numpy or torch on any device, no host sync).
``greedy``'s batched decisions equal its :meth:`~GreedyAgent.act` on every row, ties
included (``tests/test_batched_greedy.py``): it compares the same float64 distances and
probabilities as ``act``, through tables of their ranks.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from qwinto_env import rules
from qwinto_env.batched.backend import SEED_LIMIT, Backend, backend_of
from qwinto_env.spec import cards
from qwinto_env.spec.dice import (CHOOSE, KEEP, PASS, REROLL, REROLL_DECISION, ROLL_FIRST,
                                  ROLL_OFFSET, ROLLS, SUBSET_ROWS)
from qwinto_env.view import BatchView, CardsView, DiceView, allowed_values, play_announcements

from .base import Agent, DecodingAgent, check_number, legal_indices, legal_rows
from .chance_tables import SUBSET_DISTRIBUTIONS

__all__ = ["RandomAgent", "GreedyAgent", "NATURAL_VALUE"]

#: Natural value of every cell: 1 at grid column 0 rising evenly to 18 at column 11.
NATURAL_VALUE = np.array([1 + col * (rules.MAX_VALUE - 1) / (rules.NUM_GRID_COLUMNS - 1)
                          for col in rules.CELL_COLUMN])


class RandomAgent(Agent):
    """Uniformly random legal actions (for either game, any player count)."""

    name = "random"
    supports_batch = True
    accepts_tensors = True

    def __init__(self, game: str = "dice", num_players: int = 2):
        super().__init__(game, num_players)
        self._generators: dict[Backend, Any] = {}

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self._generators = {}

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.check_inputs(observation, action_mask, batch=False)
        return int(self.rng.choice(legal_indices(action_mask)))

    def act_batch(self, observations: Any, masks: Any) -> Any:
        """Uniform legal actions; torch masks get a tensor drawn on their device by a torch
        generator that the agent's ``rng`` seeds the first time the device is used after
        a (seeded) reset, so numpy batches draw as if torch were never used."""
        self.check_inputs(observations, masks)
        B = backend_of(masks)
        masks = legal_rows(masks)
        if B.name != "numpy" and B not in self._generators:
            self._generators[B] = B.generator(self.rng.integers(SEED_LIMIT, dtype=np.uint64))
        gen = self.rng if B.name == "numpy" else self._generators[B]
        # Uniform over the legal entries: the argmax of random keys restricted to the mask.
        keys = B.where(masks, B.uniform(gen, masks.shape), -1.0)
        return B.astype(keys.argmax(1), B.int64)


class GreedyAgent(DecodingAgent):
    """Writes where the roll fits a field's natural value; see the module docstring."""

    name = "greedy"
    supports_batch = True
    accepts_tensors = True

    def __init__(self, game: str = "dice", num_players: int = 2, tolerance: float = 1.5):
        super().__init__(game, num_players)
        if game not in ("dice", "cards"):
            raise ValueError(f"unknown game {game!r}; the greedy agent plays dice and cards")
        self.tolerance = check_number("greedy setting tolerance", tolerance, 0.0)
        # Per cell, the values within ``tolerance`` of its natural value, as a bitmask.
        self._near_bits = [sum(1 << v for v in range(1, rules.MAX_VALUE + 1)
                               if abs(NATURAL_VALUE[c] - v) <= self.tolerance)
                           for c in range(rules.NUM_CELLS)]

    def _fit(self, cells: np.ndarray, value: int, rows: tuple[int, ...]) -> tuple[int, float]:
        """Closest legal cell for ``value`` in ``rows`` and its distance (-1, inf if none)."""
        allowed = rules.cells_allowed_values([int(c) for c in cells])
        best, dist = -1, np.inf
        for r in rows:
            for c in range(r * rules.NUM_FIELDS, (r + 1) * rules.NUM_FIELDS):
                if allowed[c] >> value & 1:
                    d = abs(NATURAL_VALUE[c] - value)
                    if d < dist:
                        best, dist = c, d
        return best, dist

    def act_cards(self, view: CardsView, legal: np.ndarray) -> int:
        if view.phase == cards.PLAY:
            return self._card_play(view, legal)
        return self._entry(view)

    def act_dice(self, view: DiceView, legal: np.ndarray) -> int:
        cells = view.cells[0]
        if view.phase == CHOOSE:
            allowed = rules.cells_allowed_values([int(c) for c in cells])
            fit_bits = [0, 0, 0]  # per row, the values that fit some field within tolerance
            for c in range(rules.NUM_CELLS):
                fit_bits[c // rules.NUM_FIELDS] |= allowed[c] & self._near_bits[c]
            best_a, best_p = int(legal[-1]), -1.0
            for a in legal:
                subset = int(a) - ROLL_OFFSET
                bits = 0
                for r in SUBSET_ROWS[subset]:
                    bits |= fit_bits[r]
                p = float(SUBSET_DISTRIBUTIONS[subset] @ _bits_to_mask(bits))
                if p > best_p:
                    best_a, best_p = int(a), p
            return best_a
        if view.phase == REROLL_DECISION:
            _, dist = self._fit(cells, view.value, view.rows)
            return REROLL if dist > self.tolerance and REROLL in legal else KEEP
        return self._entry(view)

    def _entry(self, view) -> int:
        """Write at the closest fit, or pass (the active player passes only when forced)."""
        if not 1 <= view.value <= rules.MAX_VALUE:
            return PASS
        cell, dist = self._fit(view.cells[0], view.value, view.rows)
        if cell >= 0 and (dist <= self.tolerance or view.active == 0):
            return cell
        return PASS

    def _card_play(self, view, legal: np.ndarray) -> int:
        """The play whose announced value fits some field of its colours best."""
        best_a, best_dist = int(legal[0]), np.inf
        for a in legal:
            value, colours = cards.play_result(view.hand, view.tops, int(a))
            if not 1 <= value <= rules.MAX_VALUE:
                continue
            _, dist = self._fit(view.cells[0], value, cards.COLOUR_ROWS[colours])
            if dist < best_dist:
                best_a, best_dist = int(a), dist
        return best_a

    # -- a batch at once (the same decisions as above, as array code) ----------------------
    def decide_batch(self, view: BatchView, legal: Any) -> Any:
        B, t = view.backend, _greedy_tables(view.backend, self.tolerance)
        allowed = allowed_values(view.cells[:, 0])
        if self.game == "cards":
            return B.where(view.phase == cards.PLAY, _plays(B, t, view, allowed, legal),
                           _entries(B, t, view, allowed))
        cell, dist = _closest(B, t, allowed, view.value, view.colours)
        reroll = B.where((dist > t.tolerance_rank) & legal[:, REROLL], REROLL, KEEP)
        return B.where(view.phase == CHOOSE, _rolls(B, t, allowed, legal),
                       B.where(view.phase == REROLL_DECISION, reroll,
                               _entries(B, t, view, allowed, (cell, dist))))


#: ``|NATURAL_VALUE[c] - v|`` for every cell and value ``v`` = 0..18, the numbers
#: :meth:`GreedyAgent._fit` compares; and each one's rank among them all (equal numbers,
#: equal ranks), which the batched decisions compare instead.
_DISTANCE = np.abs(NATURAL_VALUE[:, None] - np.arange(rules.MAX_VALUE + 1))
_DISTANCE_RANK = np.unique(_DISTANCE, return_inverse=True)[1].reshape(_DISTANCE.shape)
#: The rank of "no legal cell" (the scalar's infinite distance).
_NO_FIT = int(_DISTANCE_RANK.max()) + 1


@functools.lru_cache(maxsize=None)
def _roll_ranks() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For the roll actions (column ``a - ROLL_FIRST``): the offset of its table in the
    returned ranks, the lowest sum its dice can show and the mask of the sums they can
    show above that; then the ranks of :meth:`GreedyAgent.act_dice`'s probabilities
    of a fitting sum, per dice subset and per bitmask of the fitting sums it can show
    (shifted down by the lowest sum), computed by ``act_dice``'s own expression (a
    float sum's last bit depends on the order it is summed in)."""
    tables, starts, offsets, widths, by_dist = [], [], [], [], {}
    for subset in range(1, len(SUBSET_ROWS)):
        dist = SUBSET_DISTRIBUTIONS[subset]
        support = np.flatnonzero(dist)
        starts.append(support[0])
        widths.append((1 << (support[-1] - support[0] + 1)) - 1)
        key = dist.tobytes()
        if key not in by_dist:
            by_dist[key] = sum(map(len, tables))
            tables.append([float(dist @ _bits_to_mask(bits << int(support[0])))
                           for bits in range(widths[-1] + 1)])
        offsets.append(by_dist[key])
    ranks = np.unique(np.concatenate(tables), return_inverse=True)[1]
    return np.array(offsets), np.array(starts), np.array(widths), ranks


@dataclass(frozen=True)
class _Tables:
    """The greedy agent's tables on one device, for one tolerance (see :func:`_greedy_tables`)."""

    distance_rank: Any     # (19, 27): rank of |natural value - v|, by value then cell
    tolerance_rank: int    # the largest rank within tolerance (-1 if none)
    near_bits: Any         # (27,): per cell, the values within tolerance (bit v)
    row_bit: Any           # (27,): per cell, 1 << its row
    roll_rows: Any         # (7, 3): 1 where the roll action's dice include the row's colour
    roll_offset: Any       # (7,) and the rest: see _roll_ranks
    roll_start: Any
    roll_width: Any
    roll_ranks: Any


@functools.lru_cache(maxsize=None)
def _greedy_tables(B: Backend, tolerance: float) -> _Tables:
    """The tables on ``B``'s device (made once per device and tolerance: a copy per call
    would make a GPU wait)."""
    near = _DISTANCE <= tolerance
    near[:, 0] = False
    within = _DISTANCE_RANK[near]
    cells = np.arange(rules.NUM_CELLS)
    rows = [[int(r in SUBSET_ROWS[a - ROLL_OFFSET]) for r in range(rules.NUM_ROWS)] for a in ROLLS]
    offset, start, width, ranks = _roll_ranks()
    i64 = B.int64
    return _Tables(
        B.asarray(_DISTANCE_RANK.T, i64), int(within.max()) if within.size else -1,
        B.asarray((near << np.arange(rules.MAX_VALUE + 1)).sum(1), i64),
        B.asarray(1 << (cells // rules.NUM_FIELDS), i64), B.asarray(rows, i64),
        B.asarray(offset, i64), B.asarray(start, i64), B.asarray(width, i64),
        B.asarray(ranks, i64))


def _closest(B: Backend, t: _Tables, allowed: Any, value: Any, colours: Any) -> tuple[Any, Any]:
    """Per row, :meth:`GreedyAgent._fit` as ranks: the first legal cell closest to
    ``value`` in the rows of ``colours``, and its distance rank (``_NO_FIT`` if none)."""
    v = B.clip(value, 0, rules.MAX_VALUE)  # 0 (and the card game's values below) fit nowhere
    fits = (((allowed >> v[:, None]) & 1) > 0) & ((colours[:, None] & t.row_bit) > 0)
    rank = B.where(fits, B.take(t.distance_rank, v, 0), _NO_FIT)
    return rank.argmin(1), -B.amax(-rank, 1)


def _entries(B: Backend, t: _Tables, view: BatchView, allowed: Any,
             closest: tuple[Any, Any] | None = None) -> Any:
    """:meth:`GreedyAgent._entry` of every row."""
    cell, dist = closest or _closest(B, t, allowed, view.value, view.colours)
    write = (dist < _NO_FIT) & ((dist <= t.tolerance_rank) | (view.active == 0))
    return B.where(write, cell, PASS)


def _rolls(B: Backend, t: _Tables, allowed: Any, legal: Any) -> Any:
    """The choice of :meth:`GreedyAgent.act_dice`: the legal roll with the highest
    probability of a sum that fits within tolerance (the first of equals)."""
    per_field = (allowed & t.near_bits).reshape(-1, rules.NUM_ROWS, rules.NUM_FIELDS)
    fit_bits = per_field[..., 0]
    for f in range(1, rules.NUM_FIELDS):
        fit_bits = fit_bits | per_field[..., f]
    by_row = fit_bits[:, None, :] * t.roll_rows  # (B, 7, 3)
    bits = by_row[..., 0] | by_row[..., 1] | by_row[..., 2]
    p = B.take(t.roll_ranks, t.roll_offset + ((bits >> t.roll_start) & t.roll_width), 0)
    return ROLL_FIRST + B.where(legal[:, ROLL_FIRST:ROLLS.stop], p, -1).argmax(1)


def _plays(B: Backend, t: _Tables, view: BatchView, allowed: Any, legal: Any) -> Any:
    """:meth:`GreedyAgent._card_play` of every row: the first legal play whose
    announcement fits closest (the first legal play if none fits)."""
    n, V = allowed.shape[0], rules.MAX_VALUE + 1
    writable = B.unpack_bits(allowed, V) > 0  # (B, 27, 19)
    rank = B.where(writable, t.distance_rank.T, _NO_FIT)
    row_best = -B.amax(-rank.reshape(n, rules.NUM_ROWS, rules.NUM_FIELDS, V), 2).reshape(-1)
    value, colours = play_announcements(view)
    at = B.arange(n)[:, None] * (rules.NUM_ROWS * V) + B.clip(value, 0, rules.MAX_VALUE)
    fit = B.zeros(value.shape, B.int64) + _NO_FIT
    for r in range(rules.NUM_ROWS):
        in_row = B.take(row_best, at + r * V, 0)
        fit = B.where((((colours >> r) & 1) > 0) & (in_row < fit), in_row, fit)
    return cards.SINGLE_FIRST + B.where(legal[:, cards.SINGLE_FIRST:], fit, _NO_FIT + 1).argmin(1)


def _bits_to_mask(bits: int) -> np.ndarray:
    """A value bitmask (bit v for value v) as a 0/1 float vector indexed by value 0..18."""
    return np.array([bits >> v & 1 for v in range(rules.MAX_VALUE + 1)], dtype=np.float64)
