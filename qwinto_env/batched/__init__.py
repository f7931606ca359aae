"""Batched Qwinto engines: N games per call on numpy (CPU) or torch (any device).

* :class:`BatchedDiceGame`: the dice game (see :mod:`qwinto_env.batched.dice`).
* :func:`uniform_legal`, :func:`pack_masks`: batched random play over legal actions.
* :func:`get_backend`: the numpy/torch array shim the engines are written against.
"""

from .backend import Backend, get_backend
from .dice import BatchedDiceGame, DiceStepResult
from .sampling import pack_masks, uniform_legal

__all__ = ["Backend", "get_backend", "BatchedDiceGame", "DiceStepResult", "pack_masks",
           "uniform_legal"]
