"""Exact distributions of dice sums, precomputed once (tiny: at most 6**3 outcomes).

``SUM_DISTRIBUTIONS[n][v]`` is the probability that ``n`` six-sided dice (``n`` = 1..3)
sum to ``v`` (index 0..18); ``SUBSET_DISTRIBUTIONS[s]`` the same for the dice subset
with bitmask ``s`` (1..7; row 0 is all zero because an empty subset is no roll).
"""

from __future__ import annotations

import itertools

import numpy as np

from qwinto_env import rules

__all__ = ["SUM_DISTRIBUTIONS", "SUBSET_DISTRIBUTIONS", "ATTAINABILITY"]


def _sum_distribution(n: int) -> np.ndarray:
    dist = np.zeros(rules.MAX_VALUE + 1)
    for faces in itertools.product(range(1, 7), repeat=n):
        dist[sum(faces)] += 1
    return dist / 6 ** n


SUM_DISTRIBUTIONS: tuple[np.ndarray, ...] = (
    np.zeros(rules.MAX_VALUE + 1),) + tuple(_sum_distribution(n) for n in (1, 2, 3))
SUBSET_DISTRIBUTIONS = np.stack([SUM_DISTRIBUTIONS[bin(s).count("1")] for s in range(8)])
SUBSET_DISTRIBUTIONS.setflags(write=False)
#: How easily the active player can roll each value: the best probability over 1..3 dice.
ATTAINABILITY = np.max(np.stack(SUM_DISTRIBUTIONS[1:]), axis=0)
ATTAINABILITY.setflags(write=False)
