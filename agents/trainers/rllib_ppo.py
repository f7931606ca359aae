"""Ray RLlib's PPO (new API stack) on Qwinto, writing the project's checkpoint format.

Needs the ``rllib`` extra (``pip install -e ".[rllib]"``). ``train.py --trainer rllib``
(see ``configs/dice-2p-rllib.yaml`` and ``docs/rllib.md``) starts a local Ray instance
with ``rllib.num_cpus`` CPUs, or joins the cluster at ``rllib.address``.

* Env: :class:`~agents.trainers.rllib_env.QwintoMultiAgentEnv` (the ParallelEnv; only
  agents with a real decision act), ``rllib.num_env_runners`` sampling actors with
  ``rllib.num_envs_per_env_runner`` games each.
* Module: :class:`~agents.trainers.rllib_env.MaskedPPOModule`, a
  :class:`~agents.policy.PolicyNetwork` (``network.*``) with illegal logits masked.
* Opponents: per episode, self-play with share ``opponents.self_play`` (every seat is
  the learner, parameters shared), else the learner in seat 0 against one of
  ``opponents.scripted`` (``agents.load`` specs: bots or ``.pt`` checkpoints), each a
  non-trained :class:`~agents.trainers.rllib_env.AgentModule`, drawn from the episode's
  ID, which :class:`~agents.trainers.rllib_env.SeededEpisodeIds` derives from the
  run's seed (``run.seed``; on a resume, drawn from it and the step). There is no
  snapshot pool (``opponents.snapshots`` must be 0).
* PPO: ``ppo.*`` maps onto RLlib's settings (learning rate, its linear decay, gamma,
  lambda, clip, entropy and value coefficients, gradient clip, epochs); a PPO update
  uses ``rllib.train_batch_size`` agent steps in minibatches of ``rllib.minibatch_size``.
  Rewards are multiplied by ``ppo.reward_scale``. RLlib always standardises advantages.
* Steps: ``run.total_steps`` counts the learner module's steps (decisions it made).

Checkpoints: ``run.checkpoint_every`` learner steps, the policy exported to
``checkpoints/step_<n>.pt`` (``agents.load`` takes it) plus RLlib's own checkpoint
``checkpoints/rllib_<n>/`` (only the newest is kept) that ``--resume`` restores.
"""

from __future__ import annotations

import functools
import os
import shutil
import time
from typing import Any

from qwinto_env.fileio import sigint_held

from ..policy import PolicyNetwork
from .config import ConfigError, TrainConfig
from .run import Bookkeeping, ResumeError, Run, policy_shape

#: Result keys (RLlib's metrics layout of the new API stack).
_ENV_RUNNERS = "env_runners"
_MODULE_STEPS = "num_module_steps_sampled_lifetime"


def _import_ray():
    try:
        import ray
        from ray.rllib.algorithms.ppo import PPOConfig
    except ImportError as exc:
        raise ConfigError("run.trainer rllib needs Ray RLlib: pip install -e \".[rllib]\" "
                          f"({exc})") from exc
    return ray, PPOConfig


def opponent_modules(cfg: TrainConfig) -> dict[str, str]:
    """Module ID -> ``agents.load`` spec of every fixed opponent with a positive share."""
    return {f"opponent_{i}": spec
            for i, (spec, share) in enumerate(cfg.opponents.scripted.items()) if share > 0}


def build_config(cfg: TrainConfig, num_gpus_per_learner: int = 0, seed: int | None = None):
    """The ``PPOConfig`` for ``cfg`` (``num_gpus_per_learner``: 1 to learn on a GPU), its
    env runners and opponent modules seeded from ``seed`` (default ``run.seed``; a resumed
    run passes :attr:`Run.seed`, so that it does not replay the games it began with)."""
    _, PPOConfig = _import_ray()
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from .rllib_env import LEARNER, AgentModule, MaskedPPOModule, QwintoMultiAgentEnv, \
        SeededEpisodeIds, policy_mapping

    pc, rc, env = cfg.ppo, cfg.rllib, cfg.env
    seed = cfg.run.seed if seed is None else seed
    opponents = opponent_modules(cfg)
    shares = {mid: cfg.opponents.scripted[spec] for mid, spec in opponents.items()}
    self_play = cfg.opponents.self_play if env.num_players > 1 else 1.0
    specs = {LEARNER: RLModuleSpec(module_class=MaskedPPOModule,
                                   model_config=dict(vars(cfg.network)))}
    for i, (mid, spec) in enumerate(opponents.items()):
        specs[mid] = RLModuleSpec(module_class=AgentModule, model_config={
            "spec": spec, "game": env.game, "num_players": env.num_players,
            "seed": seed + 1000 + i})
    lr: Any = pc.learning_rate
    if pc.anneal_lr:  # RLlib's schedules count env steps; every agent step is one or less
        lr = [[0, pc.learning_rate], [cfg.run.total_steps, pc.learning_rate * 1e-3]]
    return (
        PPOConfig()
        # RLlib's env checker steps random, unmasked actions, which the env rightly refuses
        .environment(QwintoMultiAgentEnv, disable_env_checking=True, env_config={
            "game": env.game, "num_players": env.num_players, "reward": env.reward,
            "reward_scale": pc.reward_scale, "seed": seed})
        .framework("torch")
        .env_runners(num_env_runners=rc.num_env_runners,
                     num_envs_per_env_runner=rc.num_envs_per_env_runner, num_cpus_per_env_runner=1)
        .learners(num_learners=rc.num_learners, num_gpus_per_learner=num_gpus_per_learner)
        .training(lr=lr, gamma=pc.gamma, lambda_=pc.gae_lambda, clip_param=pc.clip_coef,
                  entropy_coeff=pc.ent_coef, vf_loss_coeff=pc.vf_coef, grad_clip=pc.max_grad_norm,
                  num_epochs=pc.update_epochs, use_kl_loss=False,
                  train_batch_size_per_learner=rc.train_batch_size // max(1, rc.num_learners),
                  minibatch_size=rc.minibatch_size)
        .multi_agent(policies={LEARNER, *opponents},
                     policy_mapping_fn=policy_mapping(self_play, shares),
                     policies_to_train=[LEARNER])
        .callbacks(SeededEpisodeIds)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .debugging(seed=seed, log_level="ERROR")
    )


def init_ray(cfg: TrainConfig) -> None:
    """Join ``rllib.address`` or start a local instance (once per process)."""
    ray, _ = _import_ray()
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                  configure_logging=False)
    if cfg.rllib.address:
        try:
            ray.init(address=cfg.rllib.address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:  # Ray's ways to say no
            raise ConfigError(f"rllib.address: cannot join the Ray cluster at "
                              f"{cfg.rllib.address!r}: {exc}") from exc
    else:
        ray.init(num_cpus=cfg.rllib.num_cpus or os.cpu_count(), **kwargs)


def learner_steps(result: dict[str, Any]) -> int:
    """Lifetime steps sampled for the learner module, from an ``algo.train()`` result."""
    from .rllib_env import LEARNER
    return int(result.get(_ENV_RUNNERS, {}).get(_MODULE_STEPS, {}).get(LEARNER, 0))


def export(algo: Any, cfg: TrainConfig) -> PolicyNetwork:
    """The learner module's current weights, from the learner group (local or remote
    learners alike), as a plain :class:`PolicyNetwork`."""
    from .rllib_env import LEARNER, export_network
    weights = algo.learner_group.get_weights(module_ids=[LEARNER])[LEARNER]
    return export_network(weights, *policy_shape(cfg.env.game, cfg.env.num_players),
                          vars(cfg.network))


def train(cfg: TrainConfig, run: Run, resume: bool = False, progress: bool = True) -> PolicyNetwork:
    """Train with RLlib's PPO; checkpoints, logs and evaluations go to ``run``.
    :class:`ResumeError` names an RLlib checkpoint folder that is missing or does not
    restore."""
    # runs saved before states named their folder kept it in rllib/
    folder = run.ckpt_dir / run.state.get("rllib_dir", "rllib") if resume else None
    if folder is not None and not folder.is_dir():
        raise ResumeError(f"--resume: RLlib's checkpoint {str(folder)!r}, which "
                          f"{str(run.state_path)!r} names, is missing")
    init_ray(cfg)
    gpus = 1 if run.device.type == "cuda" else 0
    algo = build_config(cfg, num_gpus_per_learner=gpus, seed=run.seed).build_algo()
    try:
        step, lifetime = 0, 0
        if folder is not None:
            _restore(algo, folder)
            step, lifetime = int(run.state["step"]), int(run.state["rllib_lifetime"])
        books = Bookkeeping(run, "rllib PPO", step, progress)
        while step < cfg.run.total_steps:
            run.between_updates()
            started = time.perf_counter()
            result = algo.train()
            now = learner_steps(result)
            # a restored algorithm may count on from its checkpoint or from 0
            delta = now - lifetime if now >= lifetime else now
            lifetime, step = now, step + delta
            runners = result.get(_ENV_RUNNERS, {})
            env_steps = runners.get("num_env_steps_sampled", 0)
            stats = {"rllib/episode_return_mean": runners.get("episode_return_mean"),
                     "rllib/env_steps_per_s": env_steps / (time.perf_counter() - started)}
            books.after_update(step, functools.partial(export, algo, cfg),
                               functools.partial(save, algo, run, step, lifetime),
                               {k: float(v) for k, v in stats.items() if v is not None},
                               {"sps": f"{stats['rllib/env_steps_per_s']:,.0f}"})
        books.close()
        return save(algo, run, step, lifetime)
    finally:
        algo.stop()


def _restore(algo: Any, folder: Any) -> None:
    try:
        algo.restore_from_path(str(folder.resolve()))
    except Exception as exc:  # noqa: BLE001 - RLlib's many ways to fail on a broken folder
        raise ResumeError(f"--resume: RLlib's checkpoint {str(folder)!r} does not restore: "
                          f"{type(exc).__name__}: {exc}") from exc


def save(algo: Any, run: Run, step: int, lifetime: int) -> PolicyNetwork:
    """The exported policy checkpoint plus RLlib's own (for ``--resume``); the policy.

    RLlib writes a folder, which cannot be replaced atomically: each checkpoint gets a
    new one, ``rllib_<step>/``, that the trainer state names once it is complete; the
    older folders (and any a kill left half-written) go after the state is saved. A
    Ctrl-C during it interrupts once the checkpoint is written.
    """
    folder = f"rllib_{step}"
    with sigint_held():
        algo.save_to_path(str((run.ckpt_dir / folder).resolve()))
        network = export(algo, run.cfg)
        run.save(network, step, {"rllib_lifetime": lifetime, "rllib_dir": folder})
        for old in run.ckpt_dir.glob("rllib*"):
            if old.is_dir() and old.name != folder:
                shutil.rmtree(old)
    return network
