"""Qwinto and Qwinto: Das Kartenspiel as reinforcement-learning environments.

* :func:`parallel_env` / :func:`env`: PettingZoo parallel and AEC environments.
* :mod:`qwinto_env.rules`: the score sheet, legality and scoring.
"""

from . import rules
from .game import IllegalActionError
from .parallel import env, parallel_env

__version__ = "0.1.0"
__all__ = ["env", "parallel_env", "rules", "IllegalActionError", "__version__"]
