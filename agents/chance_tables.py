"""Exact chance tables, precomputed once (tiny: at most 6**3 dice or 32**3 card outcomes).

``SUM_DISTRIBUTIONS[n][v]`` is the probability that ``n`` six-sided dice (``n`` = 1..3)
sum to ``v`` (index 0..18); ``SUBSET_DISTRIBUTIONS[s]`` the same for the dice subset
with bitmask ``s`` (1..7; row 0 is all zero because an empty subset is no roll).
``ATTAINABILITY[game][v]`` weighs how easily a value comes up, for the bots' sheet
evaluation: in the dice game the best probability over 1, 2 or 3 dice (the active
player picks the dice); in the card game the probability that three distinct random
cards sum to ``v``, scaled to the dice table's total so that the expert's ``tau`` means
the same in both games.
"""

from __future__ import annotations

import itertools

import numpy as np

from qwinto_env import rules
from qwinto_env.spec import cards
from qwinto_env.spec.dice import DIE_FACES, SUBSET_ROWS, SUM_WAYS

__all__ = ["SUM_DISTRIBUTIONS", "SUBSET_DISTRIBUTIONS", "ATTAINABILITY"]


# One die per colour (row): 0..3 dice.
SUM_DISTRIBUTIONS: tuple[np.ndarray, ...] = (np.zeros(rules.MAX_VALUE + 1),) + tuple(
    np.array(SUM_WAYS[n], dtype=np.float64) / DIE_FACES ** n
    for n in range(1, rules.NUM_ROWS + 1))
SUBSET_DISTRIBUTIONS = np.stack([SUM_DISTRIBUTIONS[len(rows)] for rows in SUBSET_ROWS])
SUBSET_DISTRIBUTIONS.setflags(write=False)


def _card_sum_distribution() -> np.ndarray:
    values = [cards.CARD_VALUE[c] for c in range(cards.DECK_SIZE)]
    dist = np.zeros(rules.MAX_VALUE + 1)
    triples = list(itertools.combinations(values, 3))
    for triple in triples:
        if 1 <= sum(triple) <= rules.MAX_VALUE:
            dist[sum(triple)] += 1
    return dist / len(triples)


_DICE_ATTAINABILITY = np.max(np.stack(SUM_DISTRIBUTIONS[1:]), axis=0)
_CARD_SUMS = _card_sum_distribution()
ATTAINABILITY: dict[str, np.ndarray] = {
    "dice": _DICE_ATTAINABILITY,
    "cards": _CARD_SUMS * (_DICE_ATTAINABILITY.sum() / _CARD_SUMS.sum()),
}
for _table in ATTAINABILITY.values():
    _table.setflags(write=False)
