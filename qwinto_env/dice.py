"""Qwinto, the dice game, as a single-game engine.

Game properties (OpenSpiel style): 1-6 players (1 = solo variant); explicit chance
(three dice: orange, yellow, purple); the active player rotates; decisions are
sequential for the active player and simultaneous for everybody at entry; perfect
information; the game always terminates.

One turn is three steps:

===============  ====================================  ===========================
phase            active player                         everybody else
===============  ====================================  ===========================
``CHOOSE``       28..34: roll the colour subset a-27   27 (nothing to decide)
``REROLL``       35 keep, 36 re-roll the same dice     27
``ENTRY``        0..26 write r*9+f, 27 misthrow        0..26 write, 27 pass
===============  ====================================  ===========================

After the entry step the game ends if a player has two complete rows or four
misthrows; otherwise the next seat becomes active.

Chance is explicit: ``step(actions, chance=(o, y, p))`` rolls those die faces when
the step rolls (only the faces of the chosen colours count); without ``chance`` the
faces come from the game's own ``random.Random``, which ``reset(seed=...)`` seeds.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

import numpy as np

from . import rules
from .game import Game, IllegalActionError, check_seed

NUM_ACTIONS = 37
PASS = 27
ROLL_FIRST = 28  # 28..34: roll the colour subset with bitmask action - 27
KEEP = 35
REROLL = 36

CHOOSE, REROLL_DECISION, ENTRY, OVER = 0, 1, 2, 3
PHASE_NAMES = ("choose", "reroll", "entry", "over")

DIE_FACES = 6
#: Colours (row indices) of each dice subset bitmask 1..7.
SUBSET_ROWS: tuple[tuple[int, ...], ...] = tuple(
    tuple(r for r in range(rules.NUM_ROWS) if mask >> r & 1) for mask in range(8))

# Observation layout, per seat block then the common part (see encode tables in README).
SEAT_BLOCK = rules.NUM_CELLS + rules.MAX_MISTHROWS  # 27 cell values/18, 4 misthrow thermometer
COMMON = 3 + 3 + rules.MAX_VALUE + 1  # phase one-hot, rolled colours, value one-hot, re-roll left


def observation_size(num_players: int) -> int:
    """Length of the dice game's observation vector."""
    return num_players * SEAT_BLOCK + num_players + COMMON


def _observation_indices(num_players: int) -> list[np.ndarray]:
    """Per seat, the permutation of the global feature vector that makes it ego-centric."""
    common_start = num_players * SEAT_BLOCK + num_players
    per_seat = []
    for seat in range(num_players):
        order = [(seat + k) % num_players for k in range(num_players)]
        idx = [s * SEAT_BLOCK + i for s in order for i in range(SEAT_BLOCK)]
        idx += [num_players * SEAT_BLOCK + s for s in order]
        idx += list(range(common_start, common_start + COMMON))
        per_seat.append(np.array(idx, dtype=np.intp))
    return per_seat


class DiceGame(Game):
    """One game of Qwinto (dice). See the module docstring for phases and actions."""

    name = "dice"
    num_actions = NUM_ACTIONS
    pass_action = PASS

    def __init__(self, num_players: int = 2, seed: int | None = None):
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) \
                or not 1 <= num_players <= 6:
            raise ValueError(f"num_players must be an integer in 1..6 for the dice game "
                             f"(1 = solo variant), got {num_players!r}")
        self.num_players = int(num_players)
        self._obs_index = _observation_indices(self.num_players)
        self._size = observation_size(self.num_players)
        self.reset(seed)

    # -- state -------------------------------------------------------------
    def reset(self, seed: int | None = None, start_player: int = 0) -> None:
        seed = check_seed(seed)
        start_player = self.check_start_player(start_player)
        if seed is not None or not hasattr(self, "rng"):
            self.rng = random.Random(seed)
        n = self.num_players
        self._new_sheets()
        self.active = start_player
        self.phase = CHOOSE
        self.subset = 0          # bitmask of the rolled colours, 0 before the roll
        self.dice = (0, 0, 0)    # faces of the rolled dice (0 for dice not rolled)
        self.value = 0           # sum of the rolled dice
        self.reroll_left = False
        self.done = False
        self.turn = 0
        self.last_entries: list[int] = [PASS] * n  # what each seat did at the last entry
        # The seat blocks of the feature vector change only at entry; kept up to date there.
        self._feats = np.zeros(self._size, dtype=np.float32)
        self._legal = None

    # -- rules -------------------------------------------------------------
    def _compute_legal(self, seat: int) -> list[int]:
        phase = self.phase
        if phase == ENTRY:
            return self._entry_legal(seat, SUBSET_ROWS[self.subset], self.value)
        if seat != self.active or phase == OVER:
            return [PASS]
        if phase == CHOOSE:
            return list(range(ROLL_FIRST, ROLL_FIRST + 7))
        return [KEEP, REROLL]

    def _faces(self, chance: Sequence[int] | None) -> list[int]:
        """The three die faces of a roll: ``chance`` if given (validated), else drawn."""
        if chance is None:
            return [self.rng.randint(1, DIE_FACES) for _ in range(rules.NUM_ROWS)]
        faces = list(chance) if isinstance(chance, (Sequence, np.ndarray)) else []
        if len(faces) != rules.NUM_ROWS or not all(
                isinstance(f, (int, np.integer)) and not isinstance(f, (bool, np.bool_))
                and 1 <= f <= DIE_FACES for f in faces):
            raise ValueError(f"dice must be three faces in 1..6, integers (orange, yellow, "
                             f"purple), got {chance!r}")
        return [int(f) for f in faces]

    def _roll(self, faces: list[int]) -> None:
        rows = SUBSET_ROWS[self.subset]
        self.dice = tuple(faces[r] if r in rows else 0 for r in range(rules.NUM_ROWS))
        self.value = sum(self.dice)

    def step(self, actions: Sequence[int], chance: Sequence[int] | None = None, *,
             validate: bool = True) -> None:
        if self.done:
            raise IllegalActionError("the table", actions, "the game is over; call reset()")
        if validate:
            actions = self.check_actions(actions)
        phase = self.phase
        self._legal = None
        if phase == CHOOSE:
            faces = self._faces(chance)
            self.subset = actions[self.active] - PASS
            self._roll(faces)
            self.phase = REROLL_DECISION
            self.reroll_left = True
        elif phase == REROLL_DECISION:
            if actions[self.active] == REROLL:
                self._roll(self._faces(chance))
            self.reroll_left = False
            self.phase = ENTRY
        else:
            self._enter(actions)

    def _enter(self, actions: list[int]) -> None:
        value = self.value
        for seat, action in enumerate(actions):
            if action != PASS:
                self._write(seat, action, value)
            elif seat == self.active:
                self._misthrow(seat)
        self.last_entries = actions
        self.subset, self.dice, self.value = 0, (0, 0, 0), 0
        self.turn += 1
        if self.game_over():
            self.done = True
            self.phase = OVER
        else:
            self.active = (self.active + 1) % self.num_players
            self.phase = CHOOSE

    def _write(self, seat: int, cell: int, value: int) -> None:
        super()._write(seat, cell, value)
        self._feats[seat * SEAT_BLOCK + cell] = value / rules.MAX_VALUE
        self._legal = None

    def _misthrow(self, seat: int) -> None:
        super()._misthrow(seat)
        self._feats[seat * SEAT_BLOCK + rules.NUM_CELLS + self.misthrows[seat] - 1] = 1.0

    # -- observation ---------------------------------------------------------
    def features(self) -> np.ndarray:
        feats = self._feats
        base = self.num_players * SEAT_BLOCK
        feats[base:] = 0.0
        feats[base + self.active] = 1.0
        base += self.num_players
        if self.phase != OVER:
            feats[base + self.phase] = 1.0
        for r in SUBSET_ROWS[self.subset]:
            feats[base + 3 + r] = 1.0
        if self.value:
            feats[base + 6 + self.value - 1] = 1.0
        feats[base + 6 + rules.MAX_VALUE] = float(self.reroll_left)
        return feats.copy()

    def observation_index(self, seat: int) -> np.ndarray:
        return self._obs_index[seat]

    def public_info(self) -> dict[str, Any]:
        """Phase, roll, active player and re-roll flag. ``roll`` has the same keys on
        every step (for Gymnasium's vector envs, which stack infos key by key): before
        a roll its ``colours`` are ``()``, its ``dice`` ``(0, 0, 0)`` and its ``value`` 0."""
        roll = {"colours": tuple(rules.ROW_NAMES[r] for r in SUBSET_ROWS[self.subset]),
                "dice": self.dice, "value": self.value}
        return {"phase": PHASE_NAMES[self.phase], "roll": roll,
                "active_player": self.active, "reroll_available": self.reroll_left}

    def render(self) -> str:
        from .render import render_sheets  # render is a leaf; import lazily for speed
        info = self.public_info()
        if self.subset:
            r = info["roll"]
            roll = f"rolled {'+'.join(r['colours'])} = {r['value']}"
            if self.reroll_left:
                roll += " (re-roll available)"
        else:
            roll = "no roll yet"
        head = (f"Qwinto dice, turn {self.turn + 1}, player {self.active} active, "
                f"phase {info['phase']}, {roll}")
        return head + "\n" + render_sheets(self.cells, self.misthrows, self.scores())
