"""Qwinto and Qwinto: Das Kartenspiel as reinforcement-learning environments.

* :func:`parallel_env` / :func:`env`: PettingZoo parallel and AEC environments.
* ``gymnasium.make("Qwinto-v0", ...)`` / :class:`QwintoSingleEnv`: one learner
  against bots (registered with Gymnasium on import).
* :mod:`qwinto_env.rules`: the score sheet, legality and scoring.
"""

import gymnasium

from . import rules
from .game import IllegalActionError
from .parallel import env, parallel_env
from .single import QwintoSingleEnv

gymnasium.register(id="Qwinto-v0", entry_point="qwinto_env.single:QwintoSingleEnv")

__version__ = "0.1.0"
__all__ = ["env", "parallel_env", "QwintoSingleEnv", "rules", "IllegalActionError",
           "__version__"]
