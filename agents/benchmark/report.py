"""The benchmark's table and plots, rebuilt from finished cells.

Per task and algorithm, over its seeds: the interquartile mean (IQM) and the mean of the
task's metric, each with the 95% percentile interval of the stratified bootstrap over
seeds (``rliable``, Agarwal et al. 2021, 2,000 resamples, seeded; over three seeds it is
their range, since a resample of three values is all one of them 1 time in 27: the spread
of the seeds, not a 95% confidence interval), the mean win rate against each reference
and the mean training time. Learning curves (the metric against learner steps and
against training wall-clock; the mean over seeds, the band min to max) are drawn as one
PNG per task. :func:`build` writes ``results.json`` (every cell, raw), ``table.csv`` and
the PNGs, and returns the Markdown table.
"""

from __future__ import annotations

import csv
import io
import json
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from qwinto_env.fileio import atomic_write, atomic_write_text

from .extras import require
from .protocol import metric, win_keys
from .tasks import get_task

__all__ = ["aggregate", "build", "markdown"]

#: bootstrap resamples of the confidence intervals, and their seed
REPS, SEED = 2_000, 0


def aggregate(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (task, algorithm): seeds, IQM and mean with bootstrap intervals, win
    rates."""
    require("rliable", "benchmark", "the benchmark table (IQM, bootstrap intervals)")
    from rliable import library as rly, metrics as rm

    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        cells[r["task"], r["algorithm"]].append(r)
    rows = []
    for (task_id, algorithm), runs in sorted(cells.items()):
        task = get_task(task_id)
        values = np.array([[metric(r["final"], task)] for r in runs])
        with warnings.catch_warnings():  # arch's notice that random_state is deprecated
            warnings.simplefilter("ignore", FutureWarning)
            point, ci = rly.get_interval_estimates(
                {algorithm: values},
                lambda x: np.array([rm.aggregate_iqm(x), rm.aggregate_mean(x)]),
                reps=REPS, random_state=np.random.RandomState(SEED))
        (iqm, mean), ((iqm_lo, mean_lo), (iqm_hi, mean_hi)) = point[algorithm], ci[algorithm]
        row = {"task": task_id, "algorithm": algorithm, "family": runs[0]["family"],
               "masks": runs[0]["masks"], "seeds": sorted(r["seed"] for r in runs),
               "metric": task.evaluation.metric, "iqm": iqm, "iqm_low": iqm_lo,
               "iqm_high": iqm_hi, "mean": mean, "mean_low": mean_lo, "mean_high": mean_hi,
               "budget": runs[0]["budget"], "steps": runs[0]["steps"],
               "train_minutes": float(np.mean([r["train_seconds"] for r in runs])) / 60}
        for key in win_keys(task):
            row[key] = float(np.mean([r["final"][key] for r in runs]))
        rows.append(row)
    return [{k: float(v) if isinstance(v, np.floating) else v for k, v in row.items()}
            for row in rows]


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table of :func:`aggregate`'s rows, one section per task, best IQM first."""
    out = []
    for task_id in dict.fromkeys(r["task"] for r in rows):
        task = get_task(task_id)
        keys = win_keys(task)
        mine = [r for r in rows if r["task"] == task_id]
        wins = [k.replace("win_rate/", "win vs ").replace("_", " ") for k in keys]
        head = ["algorithm", "family", "seeds", f"{task.evaluation.metric} IQM [bootstrap]",
                "mean [bootstrap]", *wins, "train min"]
        out += [f"**{task_id}** ({task.description}; {mine[0]['steps']:,} steps)", "",
                "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in sorted(mine, key=lambda r: -r["iqm"]):
            cells = [f"`{r['algorithm']}`", r["family"], str(len(r["seeds"])),
                     f"{r['iqm']:.1f} [{r['iqm_low']:.1f}, {r['iqm_high']:.1f}]",
                     f"{r['mean']:.1f} [{r['mean_low']:.1f}, {r['mean_high']:.1f}]",
                     *[f"{r[k]:.1%}" for k in keys],
                     f"{r['train_minutes']:.1f}"]
            out.append("| " + " | ".join(cells) + " |")
        budget = {"cpu": "", "gpu": " --budget gpu"}.get(mine[0]["budget"],
                                                          f" --steps {mine[0]['steps']}")
        out += ["", f"Each cell: `python -m agents.benchmark run --task {task_id} --algo "
                f"<algorithm> --seed <seed>{budget}`; curves: "
                f"[curves_{task_id}.png](benchmark/curves_{task_id}.png).", ""]
    return "\n".join(out)


def plot_curves(results: list[dict[str, Any]], task_id: str, path: Path) -> None:
    """The task's learning curves: metric against steps and against wall-clock."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    task = get_task(task_id)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    by_algorithm: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        if r["task"] == task_id:
            by_algorithm[r["algorithm"]].append(r)
    for algorithm, runs in sorted(by_algorithm.items()):
        n = min(len(r["curve"]) for r in runs)
        y = np.array([[metric(p, task) for p in r["curve"][:n]] for r in runs])
        for ax, key in zip(axes, ("steps", "seconds")):
            x = np.mean([[p[key] for p in r["curve"][:n]] for r in runs], axis=0)
            x = x / 60 if key == "seconds" else x
            ax.plot(x, y.mean(0), marker="o", label=f"{algorithm} ({len(runs)} seeds)")
            ax.fill_between(x, y.min(0), y.max(0), alpha=0.2)
    axes[0].set_xlabel("learner steps")
    axes[1].set_xlabel("training wall-clock (minutes)")
    axes[0].set_ylabel(f"{task.evaluation.metric} ({task.evaluation.curve_games} games "
                       f"per reference)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{task_id}: mean over seeds, band min to max")
    fig.tight_layout()
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=90))
    plt.close(fig)


def build(results: list[dict[str, Any]], out: str | Path,
          keep: Sequence[dict[str, Any]] = ()) -> str:
    """Write ``results.json`` (``results``, then the cells ``keep``: other budgets'),
    ``table.csv`` and ``curves_<task>.png`` of ``results`` to ``out``; return the
    Markdown table."""
    rows = aggregate(results)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.json", json.dumps([*results, *keep], indent=1) + "\n")
    fields = list(dict.fromkeys(k for r in rows for k in r))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=fields)
    writer.writeheader()
    writer.writerows({**r, "seeds": " ".join(map(str, r["seeds"]))} for r in rows)
    atomic_write_text(out / "table.csv", text.getvalue())
    for task_id in dict.fromkeys(r["task"] for r in results):
        plot_curves(results, task_id, out / f"curves_{task_id}.png")
    return markdown(rows)
