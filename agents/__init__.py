"""Everything that chooses actions: the agent interface, scripted bots, neural policies,
``load(spec)`` and the tournament evaluator (``python -m agents.evaluate``); above them
:mod:`agents.trainers` (``train.py``) and :mod:`agents.benchmark` (tasks, baselines, the
rating ladder).

>>> from agents import load
>>> load("expert", game="dice", num_players=2).name
'expert'
"""

from .base import Agent, AgentSpecError
from .load import CheckpointNotFoundError, load

__all__ = ["Agent", "load", "AgentSpecError", "CheckpointNotFoundError"]
