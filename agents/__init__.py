"""Everything that chooses actions: the agent interface, scripted bots, neural policies,
``load(spec)`` and the tournament evaluator (``python -m agents.evaluate``).

>>> from agents import load
>>> load("expert", game="dice", num_players=2).name
'expert'
"""

from .base import Agent, AgentSpecError
from .load import CheckpointNotFoundError, load

__all__ = ["Agent", "load", "AgentSpecError", "CheckpointNotFoundError"]
