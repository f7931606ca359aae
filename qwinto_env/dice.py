"""Qwinto, the dice game, as a single-game engine.

The game's facts (actions, phases, player limits, observation layout) are declared in
:mod:`qwinto_env.spec.dice` and re-exported here: ``qwinto_env.dice`` is the dice game's
public module. One turn is three steps (choose dice, keep or re-roll, simultaneous
entry); after the entry step the game ends if a player has two complete rows or four
misthrows, otherwise the next seat becomes active.

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
from .spec.base import colour_flags
from .spec.dice import *  # noqa: F403 -- the game's facts are part of this module's API


class DiceGame(Game):
    """One game of Qwinto (dice). See the module docstring for phases and actions."""

    spec = SPEC

    def __init__(self, num_players: int = 2, seed: int | None = None):
        n = self.num_players = SPEC.check_num_players(num_players)
        self._obs_index = observation_indices(n)
        layout = observation_layout(n)
        self._size = layout.size
        self._locate_sheets(layout.seats.start, SEAT.size)
        # Where the pieces after the seat blocks start (ints: features() runs every step).
        self._active_at, common = layout.active.start, layout.common
        self._phase_at, self._colours_at = common.phase.start, common.colours.start
        self._value_at, self._reroll_at = common.value.start, common.reroll.start
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
            return list(ROLLS)
        return [KEEP, REROLL]

    def _faces(self, chance: Sequence[int] | None) -> list[int]:
        """The three die faces of a roll: ``chance`` if given (validated), else drawn."""
        if chance is None:
            return [self.rng.randint(1, DIE_FACES) for _ in range(rules.NUM_ROWS)]
        faces = list(chance) if isinstance(chance, (Sequence, np.ndarray)) else []
        if len(faces) != rules.NUM_ROWS or not all(
                isinstance(f, (int, np.integer)) and not isinstance(f, (bool, np.bool_))
                and 1 <= f <= DIE_FACES for f in faces):
            raise ValueError(f"dice must be {rules.NUM_ROWS} faces in 1..{DIE_FACES}, "
                             f"integers (orange, yellow, purple), got {chance!r}")
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
            self.subset = actions[self.active] - ROLL_OFFSET
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

    # -- observation ---------------------------------------------------------
    def features(self) -> np.ndarray:
        feats = self._feats
        feats[self._active_at:] = 0.0
        feats[self._active_at + self.active] = 1.0
        if self.phase != OVER:
            feats[self._phase_at + self.phase] = 1.0
        for r in SUBSET_ROWS[self.subset]:
            feats[self._colours_at + r] = 1.0
        if self.value:
            feats[self._value_at + self.value - 1] = 1.0
        feats[self._reroll_at] = float(self.reroll_left)
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

    def numeric_public_info(self) -> dict[str, Any]:
        """:meth:`public_info` as numbers (``roll_colours`` flags, ``roll_value``,
        ``roll_dice`` faces: all 0 before a roll)."""
        return {"phase": self.phase, "active_player": self.active,
                "reroll_available": int(self.reroll_left),
                "roll_colours": colour_flags(self.subset), "roll_value": self.value,
                "roll_dice": np.array(self.dice, dtype=np.int64)}

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
