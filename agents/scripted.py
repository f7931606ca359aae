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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qwinto_env import rules
from qwinto_env.batched.backend import SEED_LIMIT, Backend, backend_of
from qwinto_env.spec import cards
from qwinto_env.spec.dice import CHOOSE, KEEP, PASS, REROLL, REROLL_DECISION, SUBSET_ROWS
from qwinto_env.view import CardsView, DiceView

from .base import Agent, DecodingAgent, IllegalMaskError, legal_indices
from .chance_tables import SUBSET_DISTRIBUTIONS

__all__ = ["RandomAgent", "GreedyAgent", "NATURAL_VALUE"]

#: Natural value of every cell: 1 at grid column 0 rising evenly to 18 at column 11.
NATURAL_VALUE = np.array([1 + col * (rules.MAX_VALUE - 1) / (rules.NUM_GRID_COLUMNS - 1)
                          for col in rules.CELL_COLUMN])


class RandomAgent(Agent):
    """Uniformly random legal actions (for either game, any player count)."""

    name = "random"
    supports_batch = True

    def __init__(self, game: str = "dice", num_players: int = 2):
        super().__init__(game, num_players)
        self._generators: dict[Backend, Any] = {}

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self._generators = {}

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.rng.choice(legal_indices(action_mask)))

    def act_batch(self, observations: Any, masks: Any) -> Any:
        """Uniform legal actions; torch masks get a tensor drawn on their device by a torch
        generator that the agent's ``rng`` seeds the first time the device is used after
        a (seeded) reset, so numpy batches draw as if torch were never used."""
        B = backend_of(masks)
        if B.name == "numpy":
            masks = np.asarray(masks) > 0
            if not masks.any(axis=1).all():
                raise IllegalMaskError("an action mask of the batch has no legal action")
            gen = self.rng
        else:
            masks = masks > 0
            if B not in self._generators:
                self._generators[B] = B.generator(self.rng.integers(SEED_LIMIT, dtype=np.uint64))
            gen = self._generators[B]
        # Uniform over the legal entries: the argmax of random keys restricted to the mask.
        keys = B.where(masks, B.uniform(gen, masks.shape), -1.0)
        return B.astype(keys.argmax(1), B.int64)


class GreedyAgent(DecodingAgent):
    """Writes where the roll fits a field's natural value; see the module docstring."""

    name = "greedy"

    def __init__(self, game: str = "dice", num_players: int = 2, tolerance: float = 1.5):
        super().__init__(game, num_players)
        if game not in ("dice", "cards"):
            raise ValueError(f"unknown game {game!r}; the greedy agent plays dice and cards")
        self.tolerance = float(tolerance)
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
                subset = int(a) - PASS
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


def _bits_to_mask(bits: int) -> np.ndarray:
    """A value bitmask (bit v for value v) as a 0/1 float vector indexed by value 0..18."""
    return np.array([bits >> v & 1 for v in range(rules.MAX_VALUE + 1)], dtype=np.float64)
