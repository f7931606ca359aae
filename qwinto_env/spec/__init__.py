"""Each game's facts, declared once: action ids, phases, player limits, the observation
layout as named pieces, the rewards.

* :mod:`qwinto_env.spec.base`: what both games share (entry actions, colour bitmasks,
  reward kinds, the sheet block, :class:`~qwinto_env.spec.base.Layout`).
* :mod:`qwinto_env.spec.dice`, :mod:`qwinto_env.spec.cards`: one module per game.
* :data:`SPECS`: game name -> :class:`~qwinto_env.spec.base.GameSpec`, for code that
  takes the game by name (player limits, action counts, observation sizes).

The engines, the environments, :mod:`qwinto_env.view`, the features and the bots read
these facts from here and restate none of them.
"""

from . import cards, dice
from .base import REWARDS, GameSpec

#: Game name -> its facts.
SPECS: dict[str, GameSpec] = {spec.name: spec for spec in (dice.SPEC, cards.SPEC)}

__all__ = ["SPECS", "GameSpec", "REWARDS", "dice", "cards"]
