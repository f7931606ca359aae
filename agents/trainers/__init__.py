"""Trainers: PPO on the batched engines (``torch``: on-device; ``sb3``: sb3-contrib's
MaskablePPO) or on Ray RLlib (``rllib``), one checkpoint format, one entry point for
the training command (:mod:`.cli`: ``qwinto-train``, ``train.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .config import TrainConfig


def train_from_config(cfg: TrainConfig, root: str | Path = "runs", resume: bool = False,
                      progress: bool = True, on_start: Callable[[], None] | None = None) -> str:
    """Train as ``cfg`` says, evaluate the result, and return the report printed at the end.

    With ``resume``, a run whose trainer state has reached ``run.total_steps`` is not
    trained again: one killed during its final evaluation is evaluated, and a finished
    one is left as it is (the report is then one line saying so). Ctrl-C raises
    :class:`~agents.trainers.run.TrainingInterrupted`, whose message says what
    ``--resume`` continues from. ``on_start`` is called once the run folder is accepted and
    there is work to do (train.py prints the plan there). The warm start is sized to the run
    (:meth:`~agents.trainers.config.TrainConfig.sized_to_run`).
    """
    # torch comes with .run: not imported until a config has passed its checks
    from .run import Run, TrainingInterrupted, evaluation_report, learner_row

    cfg = cfg.sized_to_run()
    run = Run(cfg, root=root, resume=resume)
    if run.finished:
        return run.finished_message()
    if on_start is not None:
        on_start()
    try:
        if run.trained:
            network = run.state_network()
        else:
            network = trainer_function(cfg.run.trainer)(cfg, run, resume=resume, progress=progress)
        results = run.evaluate(network, cfg.eval.final_games, seed=cfg.run.seed + 1,
                               progress=progress)
        table = evaluation_report(results)
        summary = ", ".join(f"vs {spec}: win {learner_row(s)['win_rate']:.1%}, "
                            f"score {learner_row(s)['mean_score']:.1f}"
                            for spec, s in results.items())
        report = (f"run {cfg.run.name}: {cfg.run.trainer} trainer, {run.step:,} steps in "
                  f"{run.elapsed() / 60:.1f} min on {run.device}\n"
                  f"policy: {run.final_path} (agents.load accepts it)\n"
                  f"{summary}\n\n{table}")
        run.finish(network, report)
    except KeyboardInterrupt as exc:
        raise TrainingInterrupted(run.interrupted_message()) from exc
    finally:
        run.close()
    return report


def trainer_function(name: str) -> Callable:
    """The ``train`` function of trainer ``name`` (imported on demand: each needs its extra)."""
    if name == "torch":
        from .torch_ppo import train
    elif name == "rllib":
        from .rllib_ppo import train
    else:
        from .sb3_ppo import train
    return train
