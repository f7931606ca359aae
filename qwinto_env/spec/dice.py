"""Qwinto, the dice game: its facts, declared once.

The single-game engine (:mod:`qwinto_env.dice`), the batched engine
(:mod:`qwinto_env.batched.dice`), :mod:`qwinto_env.view` and the bots read them from here.

Game properties (OpenSpiel style): 1-6 players (1 = solo variant); explicit chance
(three dice: orange, yellow, purple); the active player rotates; decisions are
sequential for the active player and simultaneous for everybody at entry; perfect
information; the game always terminates.

Actions (``Discrete(37)``), one turn in three steps:

===============  ====================================  ===========================
phase            active player                         everybody else
===============  ====================================  ===========================
``CHOOSE``       28..34: roll the colour subset a-27   27 (nothing to decide)
``REROLL``       35 keep, 36 re-roll the same dice     27
``ENTRY``        0..26 write r*9+f, 27 misthrow        0..26 write, 27 pass
===============  ====================================  ===========================

Observation (ego-centric: "seat k" is the k-th seat after me, k = 0 is me), laid out by
:func:`observation_layout`:

===================  =====  ====================================================
piece                size   content
===================  =====  ====================================================
``seats``            31n    per seat k a :data:`SEAT` block: ``cells`` (27, value /
                            18, 0 = empty), ``misthrows`` (4, thermometer)
``active``           n      active player, one-hot by relative seat
``common.phase``     3      phase one-hot: choose, re-roll decision, entry (all 0
                            once the game is over)
``common.colours``   3      colours rolled: orange, yellow, purple
``common.value``     18     rolled value one-hot (1..18); all 0 before a roll
``common.reroll``    1      re-roll still available
===================  =====  ====================================================

The global features (``state()``) have the same layout in absolute seat order.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from .. import rules
from .base import COLOUR_ROWS, NUMERIC_INFOS, PASS, SHEET, GameSpec, Layout, ego_indices

__all__ = ["DIE_FACES", "PASS", "SUM_WAYS", "ROLLS", "ROLL_OFFSET", "ROLL_FIRST", "KEEP",
           "REROLL", "NUM_ACTIONS", "CHOOSE", "REROLL_DECISION", "ENTRY", "OVER", "PHASE_NAMES",
           "SUBSET_ROWS", "SEAT", "COMMON", "observation_layout", "observation_size",
           "observation_indices", "numeric_infos", "SPEC"]

DIE_FACES = 6

#: ``SUM_WAYS[n][v]``: of the ``DIE_FACES ** n`` throws of ``n`` dice (1..3), how many
#: sum to ``v`` (0..18): the chance of a roll.
SUM_WAYS: dict[int, tuple[int, ...]] = {
    n: tuple(sum(sum(throw) == v for throw in itertools.product(range(1, DIE_FACES + 1),
                                                                 repeat=n))
             for v in range(rules.MAX_VALUE + 1))
    for n in range(1, rules.NUM_ROWS + 1)}

# -- actions (0..26 write and 27 pass: see qwinto_env.spec.base) -------------------------
#: Action ``ROLL_OFFSET + m`` rolls the dice of the colour subset with bitmask ``m``
#: (1..7: 28 orange ... 34 all three dice); ``SUBSET_ROWS[m]`` are their rows.
ROLL_OFFSET = PASS
ROLLS = range(ROLL_OFFSET + 1, ROLL_OFFSET + len(COLOUR_ROWS))
ROLL_FIRST = ROLLS.start
KEEP = ROLLS.stop
REROLL = KEEP + 1
NUM_ACTIONS = REROLL + 1

# -- phases ------------------------------------------------------------------------------
CHOOSE, REROLL_DECISION, ENTRY, OVER = range(4)
PHASE_NAMES = ("choose", "reroll", "entry", "over")

#: Rows (colours) of each dice subset bitmask 1..7; 0 is "nothing rolled yet".
SUBSET_ROWS = COLOUR_ROWS

# -- observation -------------------------------------------------------------------------
#: A seat's block is its sheet block.
SEAT = SHEET
#: After the seat blocks and the active one-hot (one flag per phase but OVER).
COMMON = Layout(phase=OVER, colours=rules.NUM_ROWS, value=rules.MAX_VALUE, reroll=1)


@functools.lru_cache(maxsize=None)
def observation_layout(num_players: int) -> Layout:
    """The pieces of an ``num_players``-player observation (module docstring)."""
    return Layout(seats=num_players * SEAT.size, active=num_players, common=COMMON)


def observation_size(num_players: int) -> int:
    """Length of the dice game's observation vector (``32 n + 25``)."""
    return observation_layout(num_players).size


def observation_indices(num_players: int) -> list[np.ndarray]:
    """Per seat, the permutation of the global features that makes its observation."""
    return ego_indices(observation_layout(num_players), num_players,
                       rotate=("seats", "active"))


def numeric_infos(num_players: int) -> dict[str, tuple[int, ...]]:
    """The dice game's ``infos="numeric"`` keys and shapes: both games' and the faces
    rolled, ``roll_dice`` (the same for every player count)."""
    return {**NUMERIC_INFOS, "roll_dice": (rules.NUM_ROWS,)}


SPEC = GameSpec(name="dice", title="dice game", min_players=1, max_players=6,
                num_actions=NUM_ACTIONS, pass_action=PASS, phases=PHASE_NAMES,
                steps_per_turn=3, observation_size=observation_size,
                numeric_infos=numeric_infos)
