"""``qwinto_dice_v0``: Qwinto, the dice game, as a versioned PettingZoo module.

As PettingZoo's classic games (``pettingzoo.classic.connect_four_v3``)::

    from qwinto_env import qwinto_dice_v0

    env = qwinto_dice_v0.env(num_players=2)           # AEC, in OrderEnforcingWrapper
    raw = qwinto_dice_v0.raw_env(num_players=2)       # AEC, unwrapped
    par = qwinto_dice_v0.parallel_env(num_players=2)  # ParallelEnv

Each takes every option of :mod:`qwinto_env.parallel` but ``game``. Illegal actions are
refused by the env itself (``illegal_action="raise"``, or ``"pass"`` with a penalty), so
``env()`` adds no ``TerminateIllegalWrapper``. The version in the name changes when a
change of the env would change what an agent trained on it sees or gets; history in
:mod:`qwinto_env.parallel` (docs/dice.md).
"""

from .parallel import versioned_makers

env, raw_env, parallel_env = versioned_makers("dice")

__all__ = ["env", "raw_env", "parallel_env"]
