"""The benchmark's baseline algorithms: one module each, one contract.

Every module named in :data:`ALGORITHMS`, and any module of yours that
:func:`get_algorithm` is given by its import path, defines

* ``FAMILY``: a few words (``"policy gradient"``, ``"value-based"``, ``"multi-agent"``);
* ``MASKS``: how the action mask is honoured (``"logits masked"``, ``"none: illegal
  actions pass with a penalty"``, ...);
* ``LIBRARY``: where the algorithm comes from (``"sb3-contrib MaskablePPO"``, ...);
* ``NEEDS`` (only where the base install lacks its library): ``(module, extra)``, the
  module it imports when it trains and the pip extra that installs it
  (:func:`require_algorithm` checks it before a cell starts);
* ``min_steps(task) -> int`` (only where a run needs more than one step): the fewest
  learner steps after which it has learnt anything, its first update
  (:func:`check_steps` refuses fewer before a cell starts: the cell would record the
  untrained agent);
* ``train(task, seed, steps, workdir, progress) -> Agent``: train on ``task``
  (:class:`agents.benchmark.tasks.Task`) for ``steps`` learner steps from ``seed``,
  writing what it needs under ``workdir`` (a fresh folder), and return the trained agent
  (:class:`agents.base.Agent`, deterministic, with a fast numpy ``act_batch``). It calls
  ``progress.update(steps_done, make_agent)`` every so often (cheap when no curve point
  is due; ``make_agent()`` builds the agent as it is now, only when one is), at least
  once when it ends, with ``steps_done`` at least ``steps`` there (the runner refuses
  a cell that reports fewer: its result would claim a budget it has no record of).
  Same seed, same machine, same thread count: the same agent.

The runner (:mod:`agents.benchmark.runner`) times training apart from the curve's
evaluations, and evaluates the returned agent with the task's protocol.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable

from ...load import import_own
from ..extras import require

__all__ = ["ALGORITHMS", "CONTRACT", "AlgorithmError", "get_algorithm", "require_algorithm",
           "check_steps", "Progress"]

#: name -> module (imported when the algorithm is used: each pulls its own library)
ALGORITHMS: dict[str, str] = {
    "ppo": "agents.benchmark.algorithms.torch_ppo",
    "maskable-ppo": "agents.benchmark.algorithms.maskable_ppo",
    "rllib-ppo": "agents.benchmark.algorithms.rllib_ppo",
    "dqn": "agents.benchmark.algorithms.dqn",
    "nfsp": "agents.benchmark.algorithms.nfsp",
}


#: what a module of yours must define to be run as an algorithm (``NEEDS`` and
#: ``min_steps`` are optional)
CONTRACT = ("FAMILY", "MASKS", "LIBRARY", "train")


class AlgorithmError(Exception):
    """An algorithm broke the contract while it ran (its ``train`` returned no agent):
    the algorithm's fault, not the command line's."""


def get_algorithm(name: str) -> ModuleType:
    """The module of algorithm ``name``: one named in :data:`ALGORITHMS`, or a module of
    yours that keeps the contract, named by its import path (``my_algo`` for
    ``my_algo.py`` on ``sys.path``), so that your algorithm runs without an edit of this
    package. A ``KeyError`` naming the known ones if ``name`` is neither; a ValueError
    naming the module if it fails to import or lacks part of the contract."""
    if name in ALGORITHMS:
        return importlib.import_module(ALGORITHMS[name])
    module = _import_own(name)
    missing = [part for part in CONTRACT if not hasattr(module, part)]
    if missing or not callable(module.train):
        raise ValueError(f"algorithm {name!r}: module {module.__name__} lacks "
                         f"{', '.join(missing) or 'a callable train'} (the contract: "
                         f"{', '.join(CONTRACT)}; see agents.benchmark.algorithms)")
    return module


def _import_own(name: str) -> ModuleType:
    unknown = KeyError(f"unknown algorithm {name!r}; known: {', '.join(ALGORITHMS)}, or "
                       f"the import path of a module of yours that keeps the contract")
    if not all(part.isidentifier() for part in name.split(".")):
        raise unknown
    try:
        return import_own(name)
    except ModuleNotFoundError as exc:  # the module itself, not one that it imports
        if exc.name is not None and (name + ".").startswith(exc.name + "."):
            raise unknown from None
        problem = exc
    except Exception as exc:  # noqa: BLE001 - a user's module: any failure is its own
        problem = exc
    raise ValueError(f"algorithm {name!r}: importing module {name} failed: "
                     f"{type(problem).__name__}: {problem}") from problem


def require_algorithm(name: str) -> ModuleType:
    """:func:`get_algorithm`, and a :class:`~agents.benchmark.extras.MissingExtra` naming
    the extra to install when the algorithm's library (``NEEDS``) is missing."""
    module = get_algorithm(name)
    if hasattr(module, "NEEDS"):
        require(*module.NEEDS, what=f"algorithm {name}")
    return module


def check_steps(name: str, task: Any, steps: int) -> None:
    """ValueError unless algorithm ``name`` can train on ``task`` for ``steps`` steps."""
    module = get_algorithm(name)
    fewest = module.min_steps(task) if hasattr(module, "min_steps") else 1
    if steps < fewest:
        raise ValueError(f"{steps:,} learner steps are fewer than algorithm {name!r} needs "
                         f"on {task.id} for its first update ({fewest:,})")


class Progress:
    """What an algorithm reports while it trains: learner steps done, and (at the curve's
    points) the agent as it is. The base class only remembers the last step count; the
    runner's subclass evaluates and draws a progress bar."""

    def __init__(self, points: list[int] | tuple[int, ...] = ()):
        self.points = sorted(points)
        self.steps = 0

    def due(self, steps_done: int) -> bool:
        """Whether ``update(steps_done, ...)`` would evaluate (a curve point passed)."""
        return bool(self.points) and steps_done >= self.points[0]

    def update(self, steps_done: int, make_agent: Callable[[], Any]) -> None:
        self.steps = int(steps_done)
        if self.due(self.steps):
            while self.due(self.steps):
                self.points.pop(0)
            self.on_point(self.steps, make_agent())

    def on_point(self, steps_done: int, agent: Any) -> None:
        """Called when an update passes one curve point or more (once: an algorithm that
        reports in large steps gets fewer points); the runner evaluates the agent here."""
