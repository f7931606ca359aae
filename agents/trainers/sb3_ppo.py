"""sb3-contrib's MaskablePPO on the batched SB3 VecEnv: the reference trainer a
benchmarking user knows, writing the project's checkpoint format.

The VecEnv seats the learner once per game (``learner_seat`` 0, random start player);
the other seats are played by the opponent pool. Unlike the torch trainer, where
self-play games put the learner in every seat, here a ``self_play`` game seats the
current policy (sampling, no gradient) in the other seats. Opponents are drawn per game
at the start of every rollout (SB3 collects rollouts in one piece), so a game in
progress may change opponent at a rollout boundary.

MaskablePPO's ``MlpPolicy`` has separate actor and critic MLPs, each with
``network.hidden`` layers; the exported checkpoint holds the actor (torso + policy
head); its value head is left at zero (the critic does not fit the shared-torso format).
Rewards are multiplied by ``ppo.reward_scale`` as in the torch trainer.

SB3 finishes the rollout it is in, so a run trains whole rollouts, up to one beyond
``run.total_steps``; the trainer asks for exactly that many steps and anneals the step size
over them as the torch trainer does (:func:`step_size`).
"""

from __future__ import annotations

import functools
import io
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import VecEnvWrapper
from torch import nn

from qwinto_env.fileio import sigint_held
from qwinto_env.vector import QwintoVecEnv

from ..features import FEATURES
from ..policy import PolicyNetwork
from .config import TrainConfig
from .pool import OpponentPool
from .run import Bookkeeping, ResumeError, Run

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


class _ScaledRewards(VecEnvWrapper):
    """Multiplies rewards by a constant (episode infos keep the true returns)."""

    def __init__(self, venv: Any, scale: float):
        super().__init__(venv)
        self.scale = scale

    def reset(self) -> np.ndarray:
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        return obs, rewards * self.scale, dones, infos

    def action_masks(self) -> np.ndarray:
        return self.venv.action_masks()


class _Features(BaseFeaturesExtractor):
    """``network.features`` as an SB3 features extractor (no parameters)."""

    def __init__(self, observation_space: Any, features: str):
        size = observation_space.shape[0]
        transform = FEATURES[features](size)
        super().__init__(observation_space, size + transform.extra_size)
        self.transform = transform

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.transform(observations)


class _PoolOpponent:
    """The VecEnv's opponent callable: per game, a pool entry or the current policy."""

    def __init__(self, pool: OpponentPool, num_games: int, self_play_share: float):
        self.pool = pool
        self.self_play_share = self_play_share
        self.model: MaskablePPO | None = None
        self.assignment = np.full(num_games, -1)  # -1: the current policy

    def redraw(self) -> None:
        n = len(self.assignment)
        self_play = self.pool.rng.random(n) < self.self_play_share
        self.assignment = np.where(self_play, -1, self.pool.draw(n))

    def __call__(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        actions = np.argmax(masks, axis=1)  # the only legal action, where there is one
        deciding = masks.sum(axis=1) > 1
        for opponent in np.unique(self.assignment[deciding]):
            rows = deciding & (self.assignment == opponent)
            if opponent < 0:
                actions[rows], _ = self.model.predict(obs[rows], action_masks=masks[rows] > 0,
                                                      deterministic=False)
            else:
                actions[rows] = self.pool.act(int(opponent), torch.as_tensor(obs[rows]),
                                              torch.as_tensor(masks[rows] > 0)).numpy()
        return actions


def step_size(pc: Any, batch: int, planned: int) -> Any:
    """``learning_rate`` for MaskablePPO: constant, or with ``ppo.anneal_lr`` annealed
    linearly over the ``planned`` steps as in the torch trainer (update ``k`` of
    ``batch`` steps at ``learning_rate * (1 - (k - 1) * batch / planned)``, the last one
    above zero).

    SB3 calls the schedule with ``1 - num_timesteps / total_timesteps`` counted after the
    rollout; ``planned`` must be that total, a whole number of rollouts. (Scaling that
    fraction alone goes below zero in the last update of a run that is not a whole number
    of rollouts, and a negative step size climbs the loss: a 50,000-step run of 16,384-step
    rollouts ended worse than random.)"""
    if not pc.anneal_lr:
        return pc.learning_rate
    ahead = batch / planned  # the schedule is read after the rollout, torch's before it
    return lambda remaining: pc.learning_rate * (remaining + ahead)


def export_policy(model: MaskablePPO, cfg: TrainConfig, obs_size: int, num_actions: int) -> PolicyNetwork:
    """The MaskablePPO actor as a :class:`PolicyNetwork` (value head zero)."""
    net = PolicyNetwork(obs_size, num_actions, **vars(cfg.network))
    policy = model.policy
    actor = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    torso = [m for m in net.torso if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for src, dst in zip(actor, torso):
            dst.weight.copy_(src.weight)
            dst.bias.copy_(src.bias)
        net.policy_head.weight.copy_(policy.action_net.weight)
        net.policy_head.bias.copy_(policy.action_net.bias)
        net.value_head.weight.zero_()
        net.value_head.bias.zero_()
    return net.eval()


class _TrainingCallback(BaseCallback):
    """Opponent redraws before each rollout; the bookkeeping every trainer shares after it."""

    def __init__(self, cfg: TrainConfig, run: Run, pool: OpponentPool, opponent: _PoolOpponent,
                 obs_size: int, num_actions: int, progress: bool):
        super().__init__()
        self.cfg, self.run, self.pool, self.opponent = cfg, run, pool, opponent
        self.obs_size, self.num_actions = obs_size, num_actions
        self.progress = progress

    def _on_training_start(self) -> None:
        snapshot = self.pool.add_snapshot if self.cfg.opponents.snapshots > 0 else None
        self.books = Bookkeeping(self.run, "sb3 MaskablePPO", self.model.num_timesteps,
                                 self.progress, snapshot)

    def _on_rollout_start(self) -> None:
        self.run.between_updates()
        self.opponent.redraw()

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        postfix = {}
        if self.model.ep_info_buffer:
            postfix["score"] = f"{np.mean([e['r'] for e in self.model.ep_info_buffer]):.1f}"
        fps = self.model.logger.name_to_value.get("time/fps")
        if fps:
            postfix["sps"] = f"{fps:,.0f}"
        model, cfg, shape = self.model, self.cfg, (self.obs_size, self.num_actions)
        policy = functools.partial(export_policy, model, cfg, *shape)
        checkpoint = functools.partial(save, model, self.run, self.pool, cfg, *shape)
        self.books.after_update(model.num_timesteps, policy, checkpoint, postfix=postfix)

    def _on_training_end(self) -> None:
        self.books.close()


def save(model: MaskablePPO, run: Run, pool: OpponentPool, cfg: TrainConfig,
         obs_size: int, num_actions: int) -> PolicyNetwork:
    """A checkpoint; the exported policy. The trainer state holds SB3's own save (its zip
    file's bytes), so one atomic file has all that ``--resume`` needs, never parts of
    two checkpoints. A Ctrl-C during it interrupts once the checkpoint is written."""
    network = export_policy(model, cfg, obs_size, num_actions)
    zipped = io.BytesIO()
    with sigint_held():
        model.save(zipped)
        run.save(network, model.num_timesteps, {"pool": pool.state_dict(),
                                                "sb3_model": zipped.getvalue()})
    return network


def train(cfg: TrainConfig, run: Run, resume: bool = False, progress: bool = True) -> PolicyNetwork:
    """Train with MaskablePPO; checkpoints, logs and evaluations go to ``run``."""
    if cfg.env.num_players < 2:
        raise ValueError("the sb3 trainer seats the learner against opponents: "
                         "env.num_players must be 2 or more (use the torch trainer for solo)")
    pc, N = cfg.ppo, cfg.env.num_games
    pool = OpponentPool(cfg.opponents, cfg.env.game, cfg.env.num_players, cfg.run.seed)
    opponent = _PoolOpponent(pool, N, pool.self_play_share)
    venv = QwintoVecEnv(N, cfg.env.num_players, game=cfg.env.game, opponents=opponent,
                        reward=cfg.env.reward, random_start=True, seed=run.seed)
    env = _ScaledRewards(venv, pc.reward_scale)
    obs_size, num_actions = venv.engine.obs_size, venv.engine.num_actions
    batch = pc.rollout_steps * N
    kwargs = dict(n_steps=pc.rollout_steps, batch_size=max(1, batch // pc.num_minibatches),
                  n_epochs=pc.update_epochs, gamma=pc.gamma, gae_lambda=pc.gae_lambda,
                  clip_range=pc.clip_coef, ent_coef=pc.ent_coef, vf_coef=pc.vf_coef,
                  max_grad_norm=pc.max_grad_norm, normalize_advantage=pc.normalize_advantages,
                  seed=run.seed, verbose=0, tensorboard_log=str(run.log_dir))
    done = run.step  # what the resumed state trained (0 for a new run)
    remaining = -(-max(0, cfg.run.total_steps - done) // batch) * batch  # whole rollouts
    kwargs["learning_rate"] = step_size(pc, batch, done + remaining)
    if resume:
        state = run.state
        # The settings in kwargs replace the saved ones: the config says what trains on.
        # Runs saved before the trainer state held the model keep it in sb3_model.zip.
        saved = io.BytesIO(state["sb3_model"]) if "sb3_model" in state else \
            run.ckpt_dir / "sb3_model.zip"
        try:
            model = MaskablePPO.load(saved, env=env, device=run.device, **kwargs)
        except Exception as exc:  # SB3 and zipfile raise many types for a damaged model
            raise ResumeError(f"cannot resume from {run.state_path}: the SB3 model it holds "
                              f"does not load ({type(exc).__name__}: {exc})") from exc
        pool.load_state_dict(state["pool"], PolicyNetwork(obs_size, num_actions, **vars(cfg.network)))
    else:
        model = MaskablePPO("MlpPolicy", env, policy_kwargs=dict(
            net_arch=dict(pi=list(cfg.network.hidden), vf=list(cfg.network.hidden)),
            activation_fn=_ACTIVATIONS[cfg.network.activation],
            features_extractor_class=_Features,
            features_extractor_kwargs=dict(features=cfg.network.features)),
            device=run.device, **kwargs)
        if cfg.opponents.snapshots > 0:
            pool.add_snapshot(export_policy(model, cfg, obs_size, num_actions))
    opponent.model = model
    callback = _TrainingCallback(cfg, run, pool, opponent, obs_size, num_actions, progress)
    model.learn(remaining, callback=callback, reset_num_timesteps=not resume,
                tb_log_name="sb3")
    return save(model, run, pool, cfg, obs_size, num_actions)
