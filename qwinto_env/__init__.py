"""Qwinto and Qwinto: Das Kartenspiel as reinforcement-learning environments.

* :func:`parallel_env` / :func:`env` (``raw_env``: unwrapped): PettingZoo parallel and
  AEC environments; :mod:`qwinto_dice_v0`, :mod:`qwinto_cards_v0`: the same per game,
  as PettingZoo's versioned classic-game modules.
* ``gymnasium.make("Qwinto-v0", ...)`` / :class:`QwintoSingleEnv`: one learner
  against bots (registered with Gymnasium on import).
* :mod:`qwinto_env.rules`: the score sheet, legality and scoring.

The package in layers; a module imports only from its own layer and the layers listed
before it (``tests/test_layers.py`` checks it, and that nothing here imports
:mod:`agents`, which is the layer after the last):

===========  =================================================================
layer        modules
===========  =================================================================
rules        ``rules``: the sheet's tables, legality and scoring (both games)
spec         ``spec/``: per game the facts (action ids, phases, player limits,
             observation layout as named pieces, rewards), declared once
engines      ``game`` (the interface), ``dice``, ``cards`` (single-game engines,
             re-exporting their game's spec), ``render``; ``batched/`` (numpy and
             torch, held equal to the single engines by the differential tests)
envs         ``parallel`` (PettingZoo), ``single`` (Gymnasium), ``vector`` (SB3 and
             torch), ``opponents`` (bots by name, from a registry the agents fill),
             ``view`` (observations as named arrays), ``play`` (the terminal game),
             ``image`` (positions as pictures), ``video`` (a game as a GIF),
             ``qwinto_dice_v0``, ``qwinto_cards_v0`` (versioned PettingZoo modules),
             ``screen`` (the terminal game's 80x24 layout), ``web/`` (the browser
             game: server, page, records), ``fileio`` (atomic writes),
             ``openspiel`` (both games as OpenSpiel games; imports ``pyspiel``)
===========  =================================================================
"""

import gymnasium

from . import qwinto_cards_v0, qwinto_dice_v0, rules
from .game import IllegalActionError
from .parallel import env, parallel_env, raw_env
from .single import QwintoSingleEnv

gymnasium.register(id="Qwinto-v0", entry_point="qwinto_env.single:QwintoSingleEnv")

__version__ = "0.1.0"
__all__ = ["env", "raw_env", "parallel_env", "qwinto_dice_v0", "qwinto_cards_v0",
           "QwintoSingleEnv", "rules", "IllegalActionError", "__version__"]
