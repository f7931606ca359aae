"""Running the benchmark's cells (task x algorithm x seed), resumably.

A cell's result lives in ``<root>/<task>/<algorithm>/<budget>/seed_<k>/result.json``
(written atomically, last): a cell with a result is done and is not run again; one
without (never started, or killed) is run from the start, its ``work/`` folder (what the
algorithm wrote) cleared first. A cell is short on the CPU budget, so the cell is the
unit of resumption.

``result.json``:

===================  ===============================================================
key                  value
===================  ===============================================================
``task``, ...        ``algorithm``, ``seed``, ``budget`` (``"cpu"``, ``"gpu"`` or
                     ``"custom"`` for a ``steps`` override), ``steps``
``family`` ...       ``masks``, ``library``: the algorithm module's facts
``final``            :func:`agents.benchmark.protocol.evaluate` of the trained agent
``curve``            per curve point: ``steps``, ``seconds`` (training wall-clock,
                     evaluations excluded) and the protocol's metrics on
                     ``curve_games`` games per reference
``train_seconds``    training wall-clock, curve evaluations excluded
``threads``          torch threads; ``versions``: Python, torch, numpy, this package
``command``          the command that reproduces the cell
===================  ===============================================================
"""

from __future__ import annotations

import json
import platform
import shutil
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from qwinto_env.fileio import atomic_write_text

from ..base import Agent
from . import protocol
from .algorithms import AlgorithmError, Progress, check_steps, require_algorithm
from .tasks import TASKS, Task, get_task

__all__ = ["run_cell", "cell_dir", "read_results", "read_results_file", "merge_results",
           "CURVE_POINTS"]

#: points of a learning curve, evenly spaced over the budget (the last at its end)
CURVE_POINTS = 8


def cell_dir(root: str | Path, task: str, algorithm: str, budget: str, seed: int) -> Path:
    return Path(root) / task / algorithm / budget / f"seed_{seed}"


class CellProgress(Progress):
    """Evaluates the agent at each curve point (on the clock of the evaluations, not of
    training) and moves a progress bar over the cell's steps."""

    def __init__(self, task: Task, steps: int, points: int, label: str, show: bool):
        super().__init__([round(steps * (k + 1) / points) for k in range(points)])
        self.task, self.label = task, label
        self.curve: list[dict[str, Any]] = []
        self.started = time.perf_counter()
        self.evaluating = 0.0
        self.bar = tqdm(total=steps, desc=label, unit="step", disable=not show,
                        dynamic_ncols=True)

    def training_seconds(self) -> float:
        return time.perf_counter() - self.started - self.evaluating

    def update(self, steps_done: int, make_agent: Any) -> None:
        self.bar.update(max(0, min(steps_done, self.bar.total) - self.bar.n))
        super().update(steps_done, make_agent)

    def on_point(self, steps_done: int, agent: Any) -> None:
        _check_agent(agent, f"{self.label}: make_agent() at step {steps_done:,}")
        seconds = self.training_seconds()
        tick = time.perf_counter()
        metrics = protocol.evaluate(agent, self.task, games=self.task.evaluation.curve_games)
        self.evaluating += time.perf_counter() - tick
        self.curve.append({"steps": steps_done, "seconds": seconds, **metrics})
        self.bar.set_postfix({"metric": f"{protocol.metric(metrics, self.task):.1f}"})


def run_cell(task_id: str, algorithm: str, seed: int, budget: str = "cpu",
             steps: int | None = None, root: str | Path = "benchmark_runs",
             threads: int = 1, progress: bool = True) -> dict[str, Any]:
    """Train ``algorithm`` on task ``task_id`` from ``seed`` and evaluate it; the result
    dict (see the module's table), read back when the cell is already done. ``steps``
    overrides the budget (the cell's budget is then ``"custom"``)."""
    task, module = get_task(task_id), require_algorithm(algorithm)
    if steps is not None:
        budget = "custom"
    steps = task.budget.steps(budget) if steps is None else int(steps)
    check_steps(algorithm, task, steps)
    out = cell_dir(root, task_id, algorithm, budget, seed)
    done = out / "result.json"
    if done.is_file():
        result = read_result(done)
        if result.get("steps") != steps:  # a custom budget's cell is kept by seed alone
            raise ValueError(f"{done} holds a run of {result.get('steps')} steps, not "
                             f"{steps}: remove its folder {out}, or use another --root")
        return result
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    torch.set_num_threads(threads)
    tracker = CellProgress(task, steps, CURVE_POINTS, f"{task_id} {algorithm} seed {seed}",
                           progress)
    try:
        agent = module.train(task, seed, steps, work, tracker)
    finally:
        tracker.bar.close()
    _check_agent(agent, f"{task_id} {algorithm} seed {seed}: train")
    if tracker.steps < steps:  # the cell would claim a budget it has no record of
        raise AlgorithmError(f"{task_id} {algorithm} seed {seed}: train reported "
                             f"{tracker.steps:,} of the cell's {steps:,} learner steps (the "
                             f"contract: progress.update(steps_done, make_agent) when it ends)")
    train_seconds = tracker.training_seconds()
    result = {"task": task_id, "algorithm": algorithm, "seed": seed, "budget": budget,
              "steps": steps, "family": module.FAMILY, "masks": module.MASKS,
              "library": module.LIBRARY, "final": protocol.evaluate(agent, task),
              "curve": tracker.curve, "train_seconds": train_seconds, "threads": threads,
              "versions": _versions(),
              "command": _command(task_id, algorithm, seed, budget, steps, threads)}
    atomic_write_text(done, json.dumps(result, indent=1, default=_plain) + "\n")
    return result


def _check_agent(agent: Any, what: str) -> None:
    """AlgorithmError unless ``what`` (an algorithm's call) returned an Agent: the
    protocol's complaint about its entrant would blame the command line."""
    if not isinstance(agent, Agent):
        raise AlgorithmError(f"{what} returned {agent!r}, not an agents.base.Agent (the "
                             f"contract: agents.benchmark.algorithms)")


def read_results(root: str | Path, budget: str = "cpu") -> list[dict[str, Any]]:
    """Every finished cell's result under ``root`` for ``budget``, in a stable order."""
    paths = sorted(Path(root).glob(f"*/*/{budget}/seed_*/result.json"))
    return [read_result(p) for p in paths]


#: What every cell's result.json holds, at least (the module's table).
RESULT_KEYS = ("task", "algorithm", "seed", "budget", "steps", "family", "masks", "final",
               "curve", "train_seconds")


def read_result(path: Path) -> dict[str, Any]:
    """A cell's ``result.json``; ValueError naming the file unless it is a JSON object
    with :data:`RESULT_KEYS` for a known task, of their types (the scores that the table
    reads in ``final`` and every curve point numbers)."""
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a cell's result ({exc})") from None
    return _checked(result, str(path))


def read_results_file(path: str | Path, budget: str | None = "cpu") -> list[dict[str, Any]]:
    """The cells for ``budget`` (None: every budget) of a ``results.json`` as the table
    writes it (a list of cells' results: the shipped baselines are
    ``docs/benchmark/results.json``); ValueError naming the file, and the cell, unless it
    is one."""
    try:
        results = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a table's results.json ({exc})") from None
    if not isinstance(results, list):
        raise ValueError(f"{path}: not a table's results.json (a list of cells' results)")
    return [r for k, r in enumerate(results)
            if _checked(r, f"{path}, cell {k}")["budget"] == budget or budget is None]


def merge_results(own: list[dict[str, Any]],
                  baselines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``own`` and the cells of ``baselines`` that ``own`` lacks (a cell: task, algorithm,
    budget, seed), sorted by cell."""
    def cell(r: dict[str, Any]) -> tuple[str, str, str, int]:
        return r["task"], r["algorithm"], r["budget"], r["seed"]

    have = {cell(r) for r in own}
    return sorted(own + [r for r in baselines if cell(r) not in have], key=cell)


def _checked(result: Any, where: str) -> dict[str, Any]:
    """``result`` if it is a dict with :data:`RESULT_KEYS` for a known task; ValueError
    naming ``where`` otherwise."""
    missing = [k for k in RESULT_KEYS if not isinstance(result, dict) or k not in result]
    if missing:
        raise ValueError(f"{where}: not a cell's result (no {', '.join(missing)})")
    if not isinstance(result["task"], str) or result["task"] not in TASKS:
        raise ValueError(f"{where}: unknown task {result['task']!r}")
    kinds = {"algorithm": str, "budget": str, "seed": int, "family": str, "masks": str,
             "steps": int, "final": dict, "curve": list}
    wrong = [k for k, kind in kinds.items() if not isinstance(result[k], kind)]
    if wrong:
        raise ValueError(f"{where}: not a cell's result ({', '.join(wrong)} of another type)")
    task = get_task(result["task"])
    scores = [protocol.metric_key(task), *protocol.win_keys(task)]
    _numbers(result, ["train_seconds"], where)
    _numbers(result["final"], scores, f"{where}: final")
    for k, point in enumerate(result["curve"]):
        _numbers(point, ["steps", "seconds", protocol.metric_key(task)], f"{where}: curve {k}")
    return result


def _numbers(holder: Any, keys: list[str], where: str) -> None:
    """ValueError naming ``where`` unless ``holder`` is a dict with a number at each key
    (a hand-edited result reached the table's sums as a traceback)."""
    if not isinstance(holder, dict):
        raise ValueError(f"{where}: not a cell's result ({holder!r} is not an object)")
    for key in keys:
        value = holder.get(key)
        if key not in holder or isinstance(value, bool) or not isinstance(value, (int, float)):
            problem = f"{key} is {value!r}, not a number" if key in holder else f"no {key}"
            raise ValueError(f"{where}: not a cell's result ({problem})")


def _command(task: str, algorithm: str, seed: int, budget: str, steps: int, threads: int) -> str:
    size = f"--steps {steps}" if budget == "custom" else f"--budget {budget}"
    return (f"python -m agents.benchmark run --task {task} --algo {algorithm} --seed {seed} "
            f"{size} --threads {threads}")


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "numpy": np.__version__}
    try:
        versions["qwinto-env"] = metadata.version("qwinto-env")
    except metadata.PackageNotFoundError:
        versions["qwinto-env"] = "source"
    return versions


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {value!r}")
