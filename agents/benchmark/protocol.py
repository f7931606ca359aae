"""The evaluation protocol: how every agent on a task is scored, the same way.

:func:`evaluate` plays the task's evaluation (:class:`~agents.benchmark.tasks.Evaluation`)
and returns a flat dict of metrics; the task is a :class:`~agents.benchmark.tasks.Task` or
its id, the agent an :class:`~agents.base.Agent` or an :func:`agents.load` spec
(``evaluate("greedy", "dice-2p-v0")``):

=========================  ==========================================================
key                        value
=========================  ==========================================================
``rating``                 the agent's rating on the task's frozen ladder
                           (:mod:`agents.benchmark.ladder`), ``rating_low`` and
                           ``rating_high`` its 95% interval (tasks with a ladder)
``mean_score``             the agent's mean score over all evaluation games
``win_rate/<reference>``   2 players: its win rate in its match with ``<reference>``
``win_rate``               more players: its win rate at the table with every reference
``games``                  evaluation games played
=========================  ==========================================================

Same agent, same task: the same games (dice and seats from the task's seed; the
agent's own randomness, if any, reseeded per game by the evaluator), so the numbers
are identical on every run; ``games`` (at most :data:`agents.evaluate.MAX_GAMES` per
reference) and ``seed`` may be overridden for curve points (fewer games) but a result for
the table uses the task's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Agent
from ..evaluate import Results, play, win_shares
from .tasks import TASKS, Task, get_task

__all__ = ["evaluate", "tournaments", "metric", "win_keys"]


def _as_task(task: Task | str) -> Task:
    """``task``, or the task with this id (:func:`get_task`: a KeyError naming the known
    ids); a TypeError for anything else."""
    if isinstance(task, str):
        return get_task(task)
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task or a task id ({', '.join(TASKS)}), got {task!r}")
    return task


def tournaments(agent: Agent | str, task: Task | str, games: int | None = None,
                seed: int | None = None, workers: int = 1) -> list[Results]:
    """The evaluation games of ``agent`` on ``task``: one :class:`Results` per table."""
    task = _as_task(task)
    ev = task.evaluation
    games = ev.games if games is None else games
    seed = ev.seed if seed is None else seed
    # One engine for every agent, so that every agent plays the same games (the two engines
    # draw chance differently); one without act_batch is asked row by row.
    kw = dict(game=task.game, num_players=task.num_players, games=games, workers=workers,
              progress=False, engine="batched")
    if task.num_players == 1:
        return [play([agent], seed=seed, **kw)]
    if task.num_players == 2:
        return [play([agent, ref], seed=seed + k, **kw) for k, ref in enumerate(ev.references)]
    if len(ev.references) != task.num_players - 1:
        raise ValueError(f"task {task.id}: {task.num_players} seats need "
                         f"{task.num_players - 1} references, it has {len(ev.references)}")
    return [play([agent, *ev.references], seed=seed, **kw)]


def evaluate(agent: Agent | str, task: Task | str, games: int | None = None,
             seed: int | None = None, workers: int = 1) -> dict[str, Any]:
    """The metrics of ``agent`` on ``task`` (see the module's table)."""
    task = _as_task(task)
    tables = tournaments(agent, task, games, seed, workers)
    out: dict[str, Any] = {
        "games": int(sum(t.games for t in tables)),
        "mean_score": float(np.concatenate([t.score[:, 0] for t in tables]).mean())}
    for key, table in zip(win_keys(task), tables):
        out[key] = float(win_shares(table.score)[:, 0].mean())
    if task.evaluation.metric == "rating":
        from .ladder import get_ladder

        r = get_ladder(task.ladder).rate(tables[0].entrants[0], tables)
        out.update(rating=r.rating, rating_low=r.low, rating_high=r.high)
    return out


def metric(result: dict[str, Any], task: Task | str) -> float:
    """The number the table ranks ``task``'s agents by (its evaluation's ``metric``)."""
    return float(result[metric_key(task)])


def metric_key(task: Task | str) -> str:
    """The key of :func:`metric` in ``task``'s metrics."""
    return "rating" if _as_task(task).evaluation.metric == "rating" else "mean_score"


def win_keys(task: Task | str) -> list[str]:
    """The win-rate keys of ``task``'s metrics: one per reference in 2 players (its own
    match), one (``win_rate``, the table with every reference) in more, none solo."""
    task = _as_task(task)
    if task.num_players == 2:
        return [f"win_rate/{ref}" for ref in task.evaluation.references]
    return ["win_rate"] if task.num_players > 2 else []
