"""The benchmark's tasks: stable, versioned ids, each fixing everything a result depends on.

=================  =======  =====  =========  ===================  ============  ===========
task               game     seats  reward     training opponents   CPU budget    GPU budget
=================  =======  =====  =========  ===================  ============  ===========
``dice-2p-v0``     dice     2      score      ``expert``           50,000        20,000,000
``dice-4p-v0``     dice     4      score      3 x ``expert``       50,000        20,000,000
``cards-2p-v0``    cards    2      score      ``expert``           50,000        20,000,000
``dice-solo-v0``   dice     1      score      none                 50,000        20,000,000
=================  =======  =====  =========  ===================  ============  ===========

Budgets count **learner steps**: ``step`` calls of the task's ``Qwinto-v0`` environment
(one per decision of the learner; the steps without a choice are played for it). A
self-play method counts every seat's decision as a step.

The training environment is ``gymnasium.make("Qwinto-v0", **task.env_kwargs())``: the
learner in a seat drawn at every reset, the other seats played by the task's opponents.
A method made for multi-agent games may train by self-play instead (``opponents`` is
then what it is evaluated against, not what it trains with); the table says so.

Evaluation (:class:`Evaluation`): every agent plays the same games: ``games`` against
each reference agent (seats rotated, :func:`agents.evaluate.play` with ``seed``), the
primary metric is the rating on the task's frozen ladder when it has one, else the mean
score. Changing anything here, or the ladder's frozen ratings
(``agents/benchmark/ladder.json``), makes a new version (``-v1``); a version, once
published, never changes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Task", "Budget", "Evaluation", "TASKS", "get_task", "task_ids"]


@dataclasses.dataclass(frozen=True)
class Budget:
    """Training budgets in learner steps."""

    cpu: int
    gpu: int

    def steps(self, name: str) -> int:
        if name not in ("cpu", "gpu"):
            raise ValueError(f"budget must be 'cpu' or 'gpu', got {name!r}")
        return getattr(self, name)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """How a trained agent is scored: ``games`` against each of ``references`` (seats
    rotated), the engine and agents seeded from ``seed``; ``metric`` is what the table
    ranks by (``"rating"``: the ladder's Elo-scale rating; ``"score"``: mean score)."""

    games: int
    seed: int
    references: tuple[str, ...]
    metric: str
    #: games per reference at each point of a learning curve
    curve_games: int = 200


@dataclasses.dataclass(frozen=True)
class Task:
    """One benchmark task (see the module's table)."""

    id: str
    game: str
    num_players: int
    reward: str
    opponents: tuple[str, ...]
    budget: Budget
    evaluation: Evaluation
    description: str = ""

    @property
    def ladder(self) -> str:
        """The rating ladder this task's ratings are on (:mod:`agents.benchmark.ladder`)."""
        return f"{self.game}-{self.num_players}p"

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``gymnasium.make("Qwinto-v0", ...)`` for training."""
        kwargs: dict[str, Any] = {"game": self.game, "num_players": self.num_players,
                                  "reward": self.reward}
        if self.num_players > 1:
            kwargs.update(opponents=list(self.opponents), learner_seat="random")
        return kwargs

    def make_env(self, **overrides: Any) -> Any:
        """The training environment (``Qwinto-v0``); ``overrides`` change single options
        (``illegal_action="pass"`` for unmasked algorithms)."""
        import gymnasium

        import qwinto_env  # noqa: F401  registers Qwinto-v0
        return gymnasium.make("Qwinto-v0", **{**self.env_kwargs(), **overrides})


_SCRIPTED = ("random", "greedy", "expert")
_CPU, _GPU = 50_000, 20_000_000

TASKS: dict[str, Task] = {task.id: task for task in [
    Task("dice-2p-v0", "dice", 2, "score", ("expert",), Budget(_CPU, _GPU),
         Evaluation(500, 20_261_202, _SCRIPTED + ("pretrained:dice-2p",), "rating"),
         "2-player dice game against the expert"),
    Task("dice-4p-v0", "dice", 4, "score", ("expert",) * 3, Budget(_CPU, _GPU),
         Evaluation(500, 20_261_203, _SCRIPTED, "rating"),
         "4-player dice game against three experts"),
    Task("cards-2p-v0", "cards", 2, "score", ("expert",), Budget(_CPU, _GPU),
         Evaluation(500, 20_261_204, _SCRIPTED + ("pretrained:cards-2p",), "rating"),
         "2-player card game against the expert"),
    Task("dice-solo-v0", "dice", 1, "score", (), Budget(_CPU, _GPU),
         Evaluation(2_000, 20_261_205, (), "score"),
         "the dice game alone: the highest score"),
]}


def task_ids() -> list[str]:
    return list(TASKS)


def get_task(task_id: str) -> Task:
    """The task with this id; a ``KeyError`` naming the known ids otherwise."""
    if task_id not in TASKS:
        raise KeyError(f"unknown task {task_id!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[task_id]
