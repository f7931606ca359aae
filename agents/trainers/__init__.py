"""Trainers: PPO on the batched engines (``torch``: on-device; ``sb3``: sb3-contrib's
MaskablePPO) or on Ray RLlib (``rllib``), one checkpoint format, one entry point for
``train.py``."""

from __future__ import annotations

from pathlib import Path

from .config import TrainConfig


def train_from_config(cfg: TrainConfig, root: str | Path = "runs", resume: bool = False,
                      progress: bool = True) -> str:
    """Train as ``cfg`` says (its warm start sized to the run: ``TrainConfig.sized_to_run``),
    evaluate the result, and return the report printed at the end."""
    from .run import Run, evaluation_report, learner_row  # torch: not needed to check a config

    cfg = cfg.sized_to_run()
    run = Run(cfg, root=root, resume=resume)
    try:
        if cfg.run.trainer == "torch":
            from .torch_ppo import train
        elif cfg.run.trainer == "rllib":
            from .rllib_ppo import train
        else:
            from .sb3_ppo import train
        network = train(cfg, run, resume=resume, progress=progress)
        run.save_policy(network, run.dir / "final.pt", cfg.run.total_steps)
        results = run.evaluate(network, cfg.eval.final_games, seed=cfg.run.seed + 1,
                               progress=progress)
    finally:
        run.close()
    table = evaluation_report(results)
    summary = ", ".join(f"vs {spec}: win {learner_row(s)['win_rate']:.1%}, "
                        f"score {learner_row(s)['mean_score']:.1f}" for spec, s in results.items())
    report = (f"run {cfg.run.name}: {cfg.run.trainer} trainer, {cfg.run.total_steps:,} steps in "
              f"{run.elapsed() / 60:.1f} min on {run.device}\n"
              f"policy: {run.dir / 'final.pt'} (agents.load accepts it)\n"
              f"{summary}\n\n{table}")
    (run.dir / "evaluation.txt").write_text(report + "\n")
    return report
