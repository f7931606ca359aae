"""Batched Qwinto engines: N games per call on numpy (CPU) or torch (any device).

* :class:`BatchedDiceGame`: the dice game (see :mod:`qwinto_env.batched.dice`).
* :class:`BatchedCardGame`: the card game (see :mod:`qwinto_env.batched.cards`).
* :data:`BATCHED_GAMES`: game name -> batched engine class.
* :func:`uniform_legal`, :func:`pack_masks`: batched random play over legal actions.
* :func:`get_backend`: the numpy/torch array shim the engines are written against.
"""

from .backend import Backend, get_backend
from .cards import BatchedCardGame
from .dice import BatchedDiceGame, DiceStepResult
from .sampling import pack_masks, uniform_legal

#: Game name (as in ``qwinto_env.parallel.GAMES``) -> batched engine class.
BATCHED_GAMES = {"dice": BatchedDiceGame, "cards": BatchedCardGame}

__all__ = ["Backend", "get_backend", "BatchedDiceGame", "BatchedCardGame", "BATCHED_GAMES",
           "DiceStepResult", "pack_masks", "uniform_legal"]
