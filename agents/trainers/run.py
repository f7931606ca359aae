"""What every trainer shares: the run folder, checkpoints, resume, evaluation and logging.

A run lives in ``runs/<name>/``::

    config.yaml            the resolved config (what was actually trained)
    checkpoints/
        step_<n>.pt        policy checkpoints (agents.load accepts them)
        latest.pt          the newest policy checkpoint
        trainer_state.pt   optimizer, opponent pool, counters: what --resume needs
    final.pt               the policy at the end of training
    evaluation.txt         the final evaluation table
    tb/                    TensorBoard logs (``tensorboard --logdir runs``)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from ..evaluate import format_table, play
from ..load import AgentSpecError, read_checkpoint
from ..policy import CheckpointError, PolicyAgent, PolicyNetwork, save_checkpoint
from .config import ConfigError, TrainConfig, save_config


def init_network(net: PolicyNetwork, cfg: TrainConfig) -> None:
    """Copy the parameters of the checkpoint ``cfg.run.init_from`` into ``net``.

    The checkpoint may use a smaller feature set than ``net`` when ``net``'s extends it
    (``raw`` < ``sheet`` < ``cards``, see :mod:`agents.features`): the extra
    input columns come after the checkpoint's, and their first-layer weights start at
    zero, so ``net`` starts out playing exactly as the checkpoint does and training
    learns what the new columns are worth.

    Raises :class:`ConfigError` naming the field and the reason when the checkpoint is
    missing, corrupt, for another game or player count, or holds another network than the
    config describes (width, activation, features it cannot grow into); ``net`` is
    unchanged then.
    """
    try:
        source, _ = read_checkpoint(cfg.run.init_from, cfg.env.game, cfg.env.num_players)
    except (AgentSpecError, CheckpointError) as exc:
        raise ConfigError(f"run.init_from: {exc}") from exc
    ours = (net.observation_size, net.num_actions, net.config)
    theirs = (source.observation_size, source.num_actions, source.config)
    same_but_features = {**ours[2], "features": None} == {**theirs[2], "features": None}
    grows = isinstance(net.features, type(source.features))
    if ours[:2] != theirs[:2] or not same_but_features or not grows:
        raise ConfigError(f"run.init_from {cfg.run.init_from!r} holds the network "
                          f"{theirs[2]} for {theirs[0]} inputs and {theirs[1]} actions; the "
                          f"config asks for {ours[2]} for {ours[0]} and {ours[1]} (only "
                          f"the features may differ, and only by adding columns)")
    state = source.state_dict()
    first = "torso.0.weight"  # the only parameter whose shape depends on the features
    grown = torch.zeros_like(net.state_dict()[first])
    grown[:, :state[first].shape[1]] = state[first]
    net.load_state_dict({**state, first: grown})


class ResumeError(ValueError):
    """A run that cannot be resumed (no state, or a state for another config)."""


def resolve_device(name: str) -> torch.device:
    """``"auto"`` -> cuda when available, else cpu; ``"cuda"`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("run.device is 'cuda' but torch sees no CUDA device "
                         "(use --device cpu or auto)")
    return torch.device(name)


class Run:
    """The folder, logs and checkpoints of one training run."""

    def __init__(self, cfg: TrainConfig, root: str | Path = "runs", resume: bool = False):
        self.cfg = cfg
        self.dir = Path(root) / cfg.run.name
        self.ckpt_dir = self.dir / "checkpoints"
        state = self.ckpt_dir / "trainer_state.pt"
        if resume and not state.is_file():
            raise ResumeError(f"cannot resume run {cfg.run.name!r}: {state} does not exist")
        if not resume and state.is_file():
            raise ResumeError(f"run folder {self.dir} already holds a run; pass --resume to "
                              f"continue it or choose another run.name")
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        save_config(cfg, self.dir / "config.yaml")
        self.device = resolve_device(cfg.run.device)
        self._writer = None
        self._started = time.perf_counter()

    # -- logging -------------------------------------------------------------------------
    @property
    def writer(self):
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package
            self._writer = SummaryWriter(str(self.dir / "tb"))
        return self._writer

    def log(self, step: int, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    # -- checkpoints ---------------------------------------------------------------------
    def save_policy(self, network: PolicyNetwork, path: Path, step: int) -> None:
        cfg = self.cfg
        cpu_net = _cpu_copy(network)
        save_checkpoint(path, cpu_net, cfg.env.game, cfg.env.num_players,
                        cpu_net.observation_size, cpu_net.num_actions,
                        metadata={"trainer": cfg.run.trainer, "steps": step,
                                  "config": cfg.to_dict()})

    def save(self, network: PolicyNetwork, step: int, trainer_state: dict[str, Any]) -> Path:
        """A policy checkpoint for ``step`` plus what resuming needs; returns the policy path."""
        path = self.ckpt_dir / f"step_{step}.pt"
        self.save_policy(network, path, step)
        self.save_policy(network, self.ckpt_dir / "latest.pt", step)
        tmp = self.ckpt_dir / "trainer_state.pt.tmp"
        torch.save({"step": step, "config": self.cfg.to_dict(),
                    "network": network.state_dict(), **trainer_state}, tmp)
        tmp.replace(self.ckpt_dir / "trainer_state.pt")  # atomic: never a half-written state
        return path

    def load_state(self) -> dict[str, Any]:
        """The saved trainer state; refuses a state written under another game or network."""
        state = torch.load(self.ckpt_dir / "trainer_state.pt", map_location=self.device,
                           weights_only=False)
        saved, now = state["config"], self.cfg.to_dict()
        for section in ("env", "network"):
            if saved[section] != now[section]:
                raise ResumeError(f"cannot resume: the run was trained with {section} = "
                                  f"{saved[section]}, the config now says {now[section]}")
        return state

    # -- evaluation ----------------------------------------------------------------------
    def evaluate(self, network: PolicyNetwork, games: int, seed: int,
                 progress: bool = False) -> dict[str, dict[str, Any]]:
        """Head-to-head games of the policy against each ``eval.opponents`` spec."""
        cfg = self.cfg
        agent = PolicyAgent(_cpu_copy(network), cfg.env.game, cfg.env.num_players)
        agent.name = "learner"
        results = {}
        for spec in cfg.eval.opponents:
            seats = [agent] + [spec] * (cfg.env.num_players - 1)
            # The batched engine plays the learner's seats in one forward pass per step;
            # a scripted opponent is asked row by row (3.5-9x the single engine's speed).
            res = play(seats, game=cfg.env.game, num_players=cfg.env.num_players,
                       games=games, seed=seed, progress=progress, engine="batched")
            results[spec] = res.summary
        return results

    def elapsed(self) -> float:
        return time.perf_counter() - self._started


def _cpu_copy(network: PolicyNetwork) -> PolicyNetwork:
    net = PolicyNetwork(network.observation_size, network.num_actions, **network.config)
    net.load_state_dict({k: v.detach().cpu() for k, v in network.state_dict().items()})
    return net.eval()


def learner_row(summary: dict[str, Any]) -> dict[str, Any]:
    """The learner's row of an evaluator summary."""
    return next(a for a in summary["agents"] if a["agent"] == "learner")


def evaluation_report(results: dict[str, dict[str, Any]]) -> str:
    """Every evaluator table of a final evaluation, one per opponent."""
    return "\n\n".join(f"learner vs {spec}\n{format_table(summary)}"
                       for spec, summary in results.items())
