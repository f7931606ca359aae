"""What every trainer shares: the run folder, checkpoints, resume, evaluation and logging.

A run lives in ``runs/<name>/``::

    config.yaml            the resolved config (what was actually trained)
    checkpoints/
        step_<n>.pt        policy checkpoints (agents.load accepts them)
        latest.pt          the newest policy checkpoint
        trainer_state.pt   optimizer, opponent pool, counters: what --resume needs
    final.pt               the policy at the end of training (written last)
    evaluation.txt         the final evaluation table
    tb/                    TensorBoard logs (``tensorboard --logdir runs``)

Kill safety: every file a user may load is written atomically (:mod:`qwinto_env.fileio`),
so a kill leaves the previous file or the new one, never a truncated one. A checkpoint
writes the trainer state before its policy files, so ``--resume`` continues from a state
at least as new as ``latest.pt`` (losing at most one ``run.checkpoint_every``) and
writes the policy files the kill kept from being written. ``final.pt`` comes after
``evaluation.txt``: a run whose ``final.pt`` holds the newest state's policy is finished,
and ``--resume`` leaves it alone; one killed during its final evaluation is evaluated.
A write killed outright leaves a hidden temporary file beside its target; the run
removes those of its own files when it writes ``config.yaml`` (see :class:`Run`).
"""

from __future__ import annotations

import functools
import io
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from tqdm import tqdm

from qwinto_env.fileio import (atomic_torch_save, atomic_write_text, leftover_temporaries,
                               sigint_held)
from qwinto_env.spec import SPECS

from ..evaluate import format_table, play
from ..load import AgentSpecError, read_checkpoint
from ..policy import (CheckpointError, PolicyAgent, PolicyNetwork, archive_problem,
                      load_checkpoint, save_checkpoint)
from .config import DEVICE, MAX_SEED, ConfigError, TrainConfig, save_config
from .threads import ThreadGovernor

#: The names in a run's folder (the layout above); :mod:`~agents.trainers.preflight`
#: checks them before a run starts.
CONFIG, FINAL, EVALUATION = "config.yaml", "final.pt", "evaluation.txt"
CHECKPOINTS, LOGS = "checkpoints", "tb"
STATE, LATEST = "trainer_state.pt", "latest.pt"  # in CHECKPOINTS
RUN_FOLDERS, RUN_FILES = (CHECKPOINTS, LOGS), (CONFIG, FINAL, EVALUATION)
#: The files a run writes atomically, by folder ("" the run's own), as glob patterns.
WRITTEN = {"": RUN_FILES, CHECKPOINTS: (STATE, LATEST, "step_*.pt")}


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
        raise ConfigError(f"run.init_from: {exc}{_not_a_policy(cfg.run.init_from)}") from exc
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


def _not_a_policy(spec: str) -> str:
    """Advice when ``spec`` names a run's trainer state (users take it for the run's
    checkpoint): which files of that run to start from, or how to continue it."""
    path = Path(spec)
    if path.name != STATE:
        return ""
    return (f"; {STATE} is the trainer state that --resume reads, not a policy: start from "
            f"the run's {path.parent / LATEST} or {path.parent.parent / FINAL}, or continue "
            f"that run with --resume")


class ResumeError(ValueError):
    """A run that cannot be resumed (no state, a corrupt one, or one for another config)."""


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; the message says what ``--resume`` continues from."""


STATE_KEYS = ("step", "config", "network")  # what every trainer's state holds


def read_trainer_state(path: str | Path, cfg: TrainConfig,
                       device: str | torch.device = "cpu") -> dict[str, Any]:
    """The trainer state at ``path``, checked against ``cfg``; reads, never writes.

    Raises :class:`ResumeError` naming the file and the reason when it is missing,
    corrupt, or was written by another trainer or for another game or network.
    """
    path = Path(path)
    if not path.is_file():
        raise ResumeError(f"cannot resume run {cfg.run.name!r}: {path} does not exist "
                          f"(a run stopped before its first checkpoint starts again "
                          f"without --resume)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResumeError(f"cannot resume from {path}: {exc.strerror or exc}") from exc
    if (problem := archive_problem(raw)) is not None:
        raise ResumeError(f"cannot resume from {path}: the file {problem}")
    try:  # weights only: a trainer state holds tensors and plain data, never code to run
        state = torch.load(io.BytesIO(raw), map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many types for a foreign file
        raise ResumeError(f"cannot resume from {path}: the file is corrupt or not a trainer "
                          f"state ({type(exc).__name__}: {exc})") from exc
    missing = [k for k in STATE_KEYS if not isinstance(state, dict) or k not in state]
    if missing:
        raise ResumeError(f"cannot resume from {path}: not a trainer state (no {missing})")
    saved, now = state["config"], cfg.to_dict()
    lost = [s for s in ("run", "env", "network")
            if not isinstance(saved, dict) or not isinstance(saved.get(s), dict)]
    if lost or "trainer" not in saved["run"]:
        raise ResumeError(f"cannot resume from {path}: not a trainer state (its config "
                          f"lacks {lost or ['run.trainer']})")
    if saved["run"]["trainer"] != cfg.run.trainer:
        raise ResumeError(f"cannot resume from {path}: the run was trained by the "
                          f"{saved['run']['trainer']} trainer, the config now says "
                          f"{cfg.run.trainer}")
    for section in ("env", "network"):
        if saved[section] != now[section]:
            raise ResumeError(f"cannot resume from {path}: the run was trained with "
                              f"{section} = {saved[section]}, the config now says "
                              f"{now[section]}")
    return state


#: The config sections, and fields, that shape training from a resumed state on (or that
#: the run's config.yaml records); a resume that changes them is allowed (a smaller
#: learning rate to finish) but said, since config.yaml then records only the new values.
RESUME_SETTINGS = ("ppo", "opponents", "run.seed", "run.init_from")


def _say_changed_settings(cfg: TrainConfig, saved: dict[str, Any]) -> None:
    """Warn, naming each field, when ``cfg`` resumes a state saved with other
    :data:`RESUME_SETTINGS` (a resume without the run's overrides gets the defaults)."""
    now = cfg.to_dict()
    fields = [(section, key) for name in RESUME_SETTINGS
              for section, _, field in [name.partition(".")]
              for key in ([field] if field else now[section])]
    changed = [f"{section}.{key} {old!r} -> {now[section][key]!r}" for section, key in fields
               if (old := saved.get(section, {}).get(key)) != now[section][key]]
    if changed:
        warnings.warn(f"resuming run {cfg.run.name!r} with settings other than its saved "
                      f"state's: {', '.join(changed)} (the run goes on with the new ones; "
                      f"pass the saved ones again to keep them)", UserWarning, stacklevel=3)


def resolve_device(name: str) -> torch.device:
    """The torch device that ``run.device`` names (:data:`~.config.DEVICE`): ``"auto"`` ->
    cuda when torch sees a GPU, else cpu. :class:`ConfigError` naming ``run.device`` for
    a GPU that torch does not see: any without CUDA, ``"cuda:N"`` past the ones it sees."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"run.device: is {name!r} but torch sees no CUDA device (use "
                          f"--device cpu or auto)")
    index = (match := DEVICE.fullmatch(name)) and match["index"]
    count = torch.cuda.device_count() if index else 0
    if index and int(index) >= count:  # before torch.device, which wraps a large index
        seen = "cuda:0" + (f" to cuda:{count - 1}" if count > 1 else "")
        raise ConfigError(f"run.device: is {name!r} but torch sees {count} CUDA "
                          f"device{'s' * (count != 1)} ({seen}; CUDA_VISIBLE_DEVICES numbers "
                          f"them from 0)")
    return torch.device(name)


class Run:
    """The folder, logs and checkpoints of one training run.

    With ``resume`` the saved trainer state is read and checked before anything is
    written (``state``), so a refused resume raises :class:`ResumeError` and changes no
    file, and a :attr:`finished` run is left as it is; a resume completes the policy
    checkpoints of its state that a kill cut short, and writes ``config.yaml`` with its
    first checkpoint (so that a trainer refusing the state later changes no file either,
    and ``config.yaml`` describes the state beside it). A new run writes the folder and
    ``config.yaml`` at once, and is refused where the folder holds a run's state or
    policy files. With ``config.yaml`` a run removes the temporary files that writes of
    its files (only those: :data:`WRITTEN`), killed outright, left.
    """

    def __init__(self, cfg: TrainConfig, root: str | Path = "runs", resume: bool = False):
        self.cfg = cfg
        self.dir = Path(root) / cfg.run.name
        self.ckpt_dir, self.log_dir = self.dir / CHECKPOINTS, self.dir / LOGS
        self.state_path = self.ckpt_dir / STATE
        self.final_path, self.evaluation_path = self.dir / FINAL, self.dir / EVALUATION
        self.device = resolve_device(cfg.run.device)
        held = [p for p in (self.state_path, self.final_path, self.ckpt_dir / LATEST)
                if p.is_file()]
        if not resume and held:
            raise ResumeError(f"run folder {self.dir} already holds a run ({held[0]}); pass "
                              f"--resume to continue it or choose another run.name")
        #: the trainer state resumed from (``None`` for a fresh run)
        self.state = read_trainer_state(self.state_path, cfg, self.device) if resume else None
        #: the step of the newest trainer state on disk
        self.step = int(self.state["step"]) if resume else 0
        #: trained, evaluated and final.pt written: a resume has nothing left to do
        self.finished = self.trained and self.evaluation_path.is_file() and \
            _holds(self.final_path, self.state["network"])
        self._writer = None
        self._begun_writing = False
        self._started = time.perf_counter()
        #: called after every update as ``observer(step, policy)`` (``policy()`` returns
        #: the current policy network): how a caller follows a run (the benchmark's curves)
        self.observers: list[Callable[[int, Callable[[], PolicyNetwork]], None]] = []
        if self.finished:
            return
        if resume:
            _say_changed_settings(cfg, self.state["config"])
        self.threads = ThreadGovernor(cfg.run.torch_threads)
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        if resume:
            self._complete_checkpoints()
        else:
            self._begin_writing()

    @property
    def seed(self) -> int:
        """The seed of the trainer's random streams (engine, torch) from :attr:`step` on:
        ``run.seed`` for a new run; for a resumed one, drawn from ``run.seed`` and the
        step, so that it does not replay the draws the run started with (in ``run.seed``'s
        range, which leaves room for the offsets trainers add)."""
        if self.step == 0:
            return self.cfg.run.seed
        draw = np.random.SeedSequence([self.cfg.run.seed, self.step]).generate_state(1)[0]
        return int(draw) % (MAX_SEED + 1)

    @property
    def trained(self) -> bool:
        """The newest state has reached ``run.total_steps`` (the final evaluation may be left)."""
        return self.step >= self.cfg.run.total_steps

    # -- logging -------------------------------------------------------------------------
    @property
    def writer(self):
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package
            # A resume drops the points logged past its state's step (a kill left them).
            self._writer = SummaryWriter(str(self.log_dir),
                                         purge_step=self.step + 1 if self.step else None)
        return self._writer

    def log(self, step: int, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)

    def between_updates(self) -> None:
        """Every trainer calls this between two updates: the moment to give torch the
        cores the machine leaves free now (:mod:`agents.trainers.threads`)."""
        self.threads.update()

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

    def _begin_writing(self) -> None:
        """Clear the temporary files killed writes left, and write ``config.yaml``: once."""
        if not self._begun_writing:
            for folder, names in WRITTEN.items():
                for name in names:
                    for path in leftover_temporaries(self.dir / folder, name):
                        path.unlink(missing_ok=True)
            save_config(self.cfg, self.dir / CONFIG)
            self._begun_writing = True

    def save(self, network: PolicyNetwork, step: int, trainer_state: dict[str, Any]) -> Path:
        """What resuming needs, then the policy checkpoints ``step_<step>.pt`` and
        ``latest.pt``; returns the ``step_<step>.pt`` path.

        Every file is written atomically, the trainer state first: a kill at any moment
        leaves a state to resume from that is at least as new as every policy checkpoint.
        A Ctrl-C during the save interrupts once all three files are written.
        """
        self._begin_writing()
        path = self.ckpt_dir / f"step_{step}.pt"
        with sigint_held():
            atomic_torch_save({"step": step, "config": self.cfg.to_dict(),
                               "network": network.state_dict(), **trainer_state},
                              self.state_path)
            self.step = step
            self.save_policy(network, path, step)
            self.save_policy(network, self.ckpt_dir / LATEST, step)
        return path

    def state_network(self) -> PolicyNetwork:
        """The policy of the state resumed from, on the CPU."""
        cfg = self.cfg
        net = PolicyNetwork(*policy_shape(cfg.env.game, cfg.env.num_players), **vars(cfg.network))
        net.load_state_dict({k: v.cpu() for k, v in self.state["network"].items()})
        return net.eval()

    def _complete_checkpoints(self) -> None:
        """Write the resumed state's policy checkpoints that a kill kept from being written."""
        network = self.state_network()
        for path in (self.ckpt_dir / f"step_{self.step}.pt", self.ckpt_dir / LATEST):
            if not _holds(path, network.state_dict()):
                self.save_policy(network, path, self.step)

    def finish(self, network: PolicyNetwork, report: str) -> None:
        """Write ``evaluation.txt``, then ``final.pt``: a ``final.pt`` holding the newest
        state's policy marks the run :attr:`finished`."""
        self._begin_writing()
        atomic_write_text(self.evaluation_path, report + "\n")
        self.save_policy(network, self.final_path, self.step)

    def finished_message(self) -> str:
        return (f"run {self.cfg.run.name} is already finished at step {self.step:,} "
                f"(run.total_steps {self.cfg.run.total_steps:,}): the policy is "
                f"{self.final_path}, its evaluation {self.evaluation_path}; "
                f"nothing to do (raise run.total_steps to train on)")

    def interrupted_message(self) -> str:
        """What ``--resume`` continues from, read from the state on disk (an interrupt
        may land between a state's write and this object's note of it)."""
        if not self.state_path.is_file():
            return (f"interrupted before the first checkpoint of run {self.cfg.run.name}: "
                    f"nothing to resume, start it again")
        step = read_trainer_state(self.state_path, self.cfg)["step"]
        return (f"interrupted; train.py --resume with the same config continues run "
                f"{self.cfg.run.name} from its checkpoint at step {step:,}")

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
            # The batched engine plays the learner's seats in one forward pass per step
            # and asks a scripted opponent for all its rows at once.
            res = play(seats, game=cfg.env.game, num_players=cfg.env.num_players,
                       games=games, seed=seed, progress=progress, engine="batched")
            results[spec] = res.summary
        return results

    def elapsed(self) -> float:
        return time.perf_counter() - self._started


class Bookkeeping:
    """The side effects every trainer shares between two of its updates, written once.

    After each update, :meth:`after_update` moves the progress bar on, logs the trainer's
    scalars and shows its postfix, then, where due, in this order:

    ========================  ==========================================================
    every                     what
    ========================  ==========================================================
    every update              ``observer(step, policy)`` for each of ``run.observers``
    opponents.snapshot_every  ``snapshot(policy)``: a copy into the opponent pool (only
                              for a trainer that passes ``snapshot``)
    eval.every (0: never)     ``eval.games`` games against each ``eval.opponents`` spec,
                              seeded ``run.seed + step``, logged as
                              ``eval/<spec>/win_rate`` and ``eval/<spec>/mean_score``,
                              shown as ``vs <spec>``; none at ``run.total_steps`` (the
                              final evaluation is the trainer's caller's)
    run.checkpoint_every      ``checkpoint()``
    ========================  ==========================================================

    Each period counts from the step the run starts or resumes at; an update that passes
    several periods acts once.
    """

    def __init__(self, run: Run, name: str, step: int, progress: bool,
                 snapshot: Callable[[PolicyNetwork], None] | None = None):
        cfg = run.cfg
        self.run, self.step, self.snapshot = run, step, snapshot
        self.postfix: dict[str, str] = {}
        self.bar = tqdm(total=cfg.run.total_steps, initial=step, unit="step",
                        disable=not progress, dynamic_ncols=True,
                        desc=f"{name} {cfg.env.game} {cfg.env.num_players}p")
        self.next_snapshot = step + cfg.opponents.snapshot_every
        self.next_eval = step + cfg.eval.every if cfg.eval.every else None
        self.next_checkpoint = step + cfg.run.checkpoint_every

    def after_update(self, step: int, policy: Callable[[], PolicyNetwork],
                     checkpoint: Callable[[], Any], logs: dict[str, float] | None = None,
                     postfix: dict[str, str] | None = None) -> None:
        """Bookkeeping at learner step ``step`` (see the class table). ``policy`` returns
        the current policy; it is called once at most, and only when a snapshot or an
        evaluation is due (exporting one may cost time and random draws)."""
        cfg = self.run.cfg
        self.bar.update(step - self.step)
        self.step = step
        if logs:
            self.run.log(step, logs)
        self.postfix.update(postfix or {})
        policy = functools.cache(policy)
        for observe in self.run.observers:
            observe(step, policy)
        if self.snapshot is not None and step >= self.next_snapshot:
            self.snapshot(policy())
            self.next_snapshot += cfg.opponents.snapshot_every
        if self.next_eval is not None and self.next_eval <= step < cfg.run.total_steps:
            self._evaluate(policy(), step)
            self.next_eval += cfg.eval.every
        if step >= self.next_checkpoint:
            checkpoint()
            self.next_checkpoint += cfg.run.checkpoint_every
        self.bar.set_postfix(self.postfix, refresh=False)

    def _evaluate(self, network: PolicyNetwork, step: int) -> None:
        cfg = self.run.cfg
        for spec, summary in self.run.evaluate(network, cfg.eval.games,
                                               seed=cfg.run.seed + step).items():
            row = learner_row(summary)
            self.run.log(step, {f"eval/{spec}/win_rate": row["win_rate"],
                                f"eval/{spec}/mean_score": row["mean_score"]})
            self.postfix[f"vs {spec}"] = f"{row['win_rate']:.0%}"

    def close(self) -> None:
        self.bar.close()


def policy_shape(game: str, num_players: int) -> tuple[int, int]:
    """Observation size and number of actions of a policy for ``game`` (the env's spaces)."""
    spec = SPECS[game]
    return spec.observation_size(num_players), spec.num_actions


def _holds(path: Path, weights: dict[str, torch.Tensor]) -> bool:
    """Whether ``path`` is a readable policy checkpoint holding exactly ``weights``."""
    if not path.is_file():
        return False
    try:
        saved = load_checkpoint(path)[1]["state_dict"]
    except CheckpointError:
        return False
    return saved.keys() == weights.keys() and all(torch.equal(saved[k], v.cpu())
                                                  for k, v in weights.items())


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
