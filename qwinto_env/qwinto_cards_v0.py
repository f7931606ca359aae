"""``qwinto_cards_v0``: Qwinto: Das Kartenspiel, the card game, as a versioned PettingZoo
module: ``env()``, ``raw_env()`` and ``parallel_env()`` as in :mod:`qwinto_env.qwinto_dice_v0`
(with ``empty_pile`` among the options); the game's tables are in
:mod:`qwinto_env.spec.cards` (docs/cards.md).
"""

from .parallel import versioned_makers

env, raw_env, parallel_env = versioned_makers("cards")

__all__ = ["env", "raw_env", "parallel_env"]
