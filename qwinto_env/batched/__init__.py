"""Batched Qwinto engines: N games per call on numpy (CPU) or torch (any device).

* :class:`BatchedDiceGame`: the dice game (see :mod:`qwinto_env.batched.dice`).
* :class:`BatchedCardGame`: the card game (see :mod:`qwinto_env.batched.cards`).
* :data:`BATCHED_GAMES`: game name -> batched engine class.
* :class:`StepResult`: what a batched step reports (both engines).
* :func:`uniform_legal`, :func:`pack_masks`: batched random play over legal actions.
* :func:`sheet_scores`: scores of sheets by the rules, on numpy arrays or torch tensors.
* :func:`get_backend`: the numpy/torch array shim the engines are written against.
"""

from .backend import Backend, get_backend
from .base import StepResult
from .cards import BatchedCardGame
from .dice import BatchedDiceGame
from .sampling import pack_masks, uniform_legal
from .sheets import sheet_scores

#: Game name (as in ``qwinto_env.parallel.GAMES``) -> batched engine class.
BATCHED_GAMES = {"dice": BatchedDiceGame, "cards": BatchedCardGame}

__all__ = ["Backend", "get_backend", "BatchedDiceGame", "BatchedCardGame", "BATCHED_GAMES",
           "StepResult", "pack_masks", "uniform_legal", "sheet_scores"]
