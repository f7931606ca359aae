"""Training configuration: nested dataclasses, loaded from YAML, overridable field by field.

Every field is declared with its doc and, for a number, its range (:func:`documented`,
:func:`ranged`); ``train.py --help-config`` prints them (:func:`describe_fields`), and the
checks read the same range. Loading is strict: an unknown or mistyped field, a value of
the wrong type, outside its range or choices, not finite, or at odds with another field
raises :class:`ConfigError` naming the field (with the closest valid name when it looks
like a typo), so a config never silently trains something else than it says.
:func:`agents.trainers.preflight.check_resources` then checks what only the machine can
tell (agent specs, checkpoints, the device), still before anything is built.

>>> cfg = load_config(None, overrides=["ppo.learning_rate=1e-3", "run.seed=3"])
>>> cfg.ppo.learning_rate, cfg.run.seed
(0.001, 3)
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import math
import re
import textwrap
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from qwinto_env.fileio import atomic_write_text
from qwinto_env.spec import SPECS

from ..load import is_search_spec


class ConfigError(ValueError):
    """A config file or override that does not describe a valid training run.

    The message reads ``<field>: <reason>`` (or ``<thing>: <reason>`` for a file or an
    override that names no field), on one line.
    """


@dataclass(frozen=True)
class Range:
    """The values a numeric field (each item of a list, each value of a mapping) may take:
    ``[low, high]``, ``(low, high]`` with ``low_open``, no upper bound for ``high=None``;
    floats must also be finite."""

    low: float
    high: float | None = None
    low_open: bool = False

    def contains(self, x: int | float) -> bool:
        if isinstance(x, float) and not math.isfinite(x):
            return False
        above = x > self.low if self.low_open else x >= self.low
        return above and (self.high is None or x <= self.high)

    def describe(self, integer: bool) -> str:
        if integer:
            return f"an integer in {self.low:,}..{self.high:,}"
        if self.high is None:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        return f"a finite number in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"


def documented(default: Any, doc: str, bounds: Range | None = None) -> Any:
    """A dataclass field with its documentation ``doc`` (``train.py --help-config`` prints
    it) and, for a numeric field, the ``bounds`` its values must lie in."""
    metadata = {"doc": doc, "range": bounds} if bounds else {"doc": doc}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def ranged(default: Any, low: float, high: float | None = None, *, doc: str,
           low_open: bool = False) -> Any:
    """A documented field whose values must lie in ``Range(low, high, low_open)``."""
    return documented(default, doc, Range(low, high, low_open))


#: The shipped configs: the repository's configs/ folder, package data in a wheel.
CONFIG_DIR = Path(__file__).resolve().parent / "configs"
MAX_STEPS = 10 ** 12   # any count of learner steps: a year at 30,000 steps/s
MAX_SEED = 2 ** 31 - 1  # numpy's legacy seeding (SB3, RLlib) stops at 2**32; trainers add offsets
MAX_THREADS = 1024     # torch threads: more than any machine's cores
MAX_PROCESSES = 256    # worker processes, a Python with its own imports each
#: Seats per game of each game (the engines' limits).
PLAYER_LIMITS = {name: (spec.min_players, spec.max_players) for name, spec in SPECS.items()}
#: A run folder name: one plain folder, never a path, never hidden.
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: What ray.init takes as an address: "auto", "local", "[ray://]host:port".
RAY_ADDRESS = re.compile(r"auto|local|(ray://)?[^\s:/]+:(?P<port>[0-9]{1,5})")
#: The devices a run may name (torch's names): these, and "cuda:N" for GPU N of several.
DEVICE_NAMES = ("auto", "cpu", "cuda")
DEVICE = re.compile("|".join(DEVICE_NAMES) + r"|cuda:(?P<index>0|[1-9][0-9]*)")
DEVICE_FORMS = ", ".join(DEVICE_NAMES) + ", cuda:N"
#: A field that holds a device name (:data:`DEVICE`).
Device = typing.NewType("Device", str)


@dataclass
class RunConfig:
    """The run: its folder, trainer, device, seed and length."""

    name: str = documented("dice-2p", "the run folder, runs/<name>/: 1-100 letters, digits, "
                           "'.', '_', '-', starting with a letter or digit (no paths)")
    trainer: Literal["torch", "sb3", "rllib"] = documented(
        "torch", "on-device PPO, sb3-contrib's MaskablePPO, or Ray RLlib's PPO (the rllib "
        "extra)")
    device: Device = documented("auto", (
        "auto = cuda when torch sees a GPU, else cpu; cuda needs a GPU torch sees, cuda:N "
        "the GPU of index N (of those CUDA_VISIBLE_DEVICES leaves; not with the rllib "
        "trainer, whose GPUs Ray places)"))
    seed: int = ranged(0, 0, MAX_SEED, doc="seeds the engine, the network and the opponents")
    total_steps: int = ranged(3_000_000, 1, MAX_STEPS, doc=(
        "learner steps to train on (one per seat the learner plays per engine step); torch, "
        "sb3: at least one rollout (ppo.rollout_steps * env.num_games)"))
    checkpoint_every: int = ranged(1_000_000, 1, MAX_STEPS,
                                   doc="learner steps between checkpoints")
    torch_threads: int = ranged(0, 0, MAX_THREADS, doc=(
        "torch CPU threads; 0 = the cores other processes leave free, looked at again as "
        "the run goes (agents/trainers/threads.py)"))
    init_from: str = documented("", (
        "torch trainer: start from this checkpoint's network (a path, or pretrained:<name>, "
        "for env.game and env.num_players; the same network config) instead of an "
        "imitation warm start (set imitation.games: 0; or imitation.refine: true to "
        "imitate from it); \"\" = a fresh network"))


@dataclass
class EnvConfig:
    """The game the learner plays."""

    game: Literal["dice", "cards"] = documented("dice", "which Qwinto: the dice game or the "
                                                "card game")
    num_players: int = ranged(2, 1, max(hi for _, hi in PLAYER_LIMITS.values()), doc=(
        "seats per game: " + ", ".join(f"{lo}..{hi} ({game})"
                                       for game, (lo, hi) in PLAYER_LIMITS.items())
        + "; sb3: 2 or more"))
    reward: Literal["win", "margin", "score"] = documented("score", (
        "what a seat is rewarded for (see qwinto_env.parallel); win needs 2+ players"))
    num_games: int = ranged(256, 1, 2 ** 20, doc="games the batched engine advances at once")


@dataclass
class NetworkConfig:
    """The policy network: an MLP torso shared by a policy and a value head."""

    hidden: list[int] = ranged([256, 256], 1, 8192,
                               doc="the MLP's layer widths, at least one layer")
    activation: Literal["tanh", "relu"] = documented("tanh", "the hidden layers' activation")
    features: Literal["raw", "sheet", "cards"] = documented("sheet", (
        "raw: the observation as it is; sheet: adds the rule-derived features of "
        "agents/features.py (the allowed values of each own cell); cards (card game only): "
        "also what each play would announce and who could write it"))


@dataclass
class PPOConfig:
    """PPO (every trainer; the rllib trainer maps them onto RLlib's settings)."""

    learning_rate: float = ranged(5e-4, 0, 1, low_open=True, doc="Adam's step size")
    anneal_lr: bool = documented(True, "decay the step size linearly to 0 over the run")
    rollout_steps: int = ranged(64, 1, 2 ** 16, doc="engine steps per game per update")
    reward_scale: float = ranged(0.05, 0, 1000, low_open=True, doc=(
        "rewards are multiplied by this before learning: returns of O(1) keep the shared "
        "torso's value loss from drowning the policy gradient"))
    gamma: float = ranged(0.999, 0, 1, doc="discount per engine step (a game is ~75)")
    gae_lambda: float = ranged(0.95, 0, 1, doc="GAE's lambda")
    update_epochs: int = ranged(4, 1, 1000, doc="passes over each rollout")
    num_minibatches: int = ranged(8, 1, 2 ** 20, doc=(
        "minibatches per pass; torch, sb3: at most one per rollout sample"))
    clip_coef: float = ranged(0.2, 0, 1000, low_open=True, doc="PPO's ratio clip")
    ent_coef: float = ranged(0.0, 0, 1000, doc="the entropy bonus's weight")
    vf_coef: float = ranged(0.5, 0, 1000, doc="the value loss's weight")
    max_grad_norm: float = ranged(0.5, 0, low_open=True, doc="gradient clipping")
    normalize_advantages: bool = documented(True, "normalise the advantages per minibatch")
    decisions_only: bool = documented(False, (
        "torch trainer: leave steps without a choice out of the update (faster, a little "
        "less learnt per step; docs/results.md, Trainer speed)"))


@dataclass
class ImitationConfig:
    """The warm start (torch trainer): fit the network to a demonstrator before PPO."""

    games: int = ranged(2000, 0, 10 ** 6, doc=(
        "demonstrator self-play games to imitate first (0 = off; torch trainer only); "
        "capped by imitation.steps_per_game"))
    steps_per_game: int = ranged(1500, 0, MAX_STEPS, doc=(
        "the warm start plays at most one game per this many run.total_steps (the default "
        "run's 3,000,000 steps: 2,000 games; 200,000: 133), so a short run gets a short "
        "warm start; 0 = no cap"))
    demonstrator: str = documented("expert", "agents.load spec of the player to imitate")
    workers: int = ranged(1, 1, MAX_PROCESSES, doc=(
        "processes that play the demonstration games (one core each; worth it for a "
        "search demonstrator, agents/trainers/imitation.py)"))
    epochs: int = ranged(8, 1, 1000, doc="passes over the demonstrations")
    batch_size: int = ranged(256, 1, 2 ** 20, doc="minibatch size")
    learning_rate: float = ranged(1e-3, 0, 1, low_open=True,
                                  doc="Adam's step size in the warm start")
    targets: Literal["actions", "search"] = documented("actions", (
        "what the policy is fitted to: the demonstrator's actions, or (a search "
        "demonstrator) its search-improved policy, softmax(logits + gain / "
        "imitation.temperature, less the gain's noise), which keeps the policy where the "
        "search found nothing (agents/trainers/imitation.py)"))
    temperature: float = ranged(1.0, 0, low_open=True, doc=(
        "imitation.targets search: the simulated gain (the search's objective units, "
        "points by default) that multiplies an action's odds by e"))
    refine: bool = documented(False, (
        "true: fit the network of run.init_from to the demonstrator (expert iteration: "
        "the demonstrator a search of that checkpoint, search[...]:<checkpoint>); false: "
        "run.init_from and imitation.games exclude each other"))


@dataclass
class OpponentConfig:
    """Whom the learner plays: shares of games (they need not sum to 1)."""

    self_play: float = ranged(0.6, 0, 1e6, doc="share of games where every seat is the learner")
    snapshots: float = ranged(0.2, 0, 1e6, doc=(
        "share of games against earlier snapshots of the learner (not with rllib)"))
    scripted: dict[str, float] = ranged(
        {"random": 0.05, "greedy": 0.1, "expert": 0.05}, 0, 1e6, doc=(
            "agents.load spec: share of games against it; the shares of the section must "
            "not all be 0; solo play: only self_play"))
    snapshot_every: int = ranged(200_000, 1, MAX_STEPS, doc=(
        "learner steps between snapshots added to the pool"))
    pool_size: int = ranged(5, 1, 1000, doc="snapshots kept (the oldest dropped)")


@dataclass
class EvalConfig:
    """Evaluations against fixed opponents, during training and at the end."""

    every: int = ranged(1_000_000, 0, MAX_STEPS, doc=(
        "learner steps between evaluations (0 = only the final one)"))
    games: int = ranged(200, 1, 10 ** 7, doc="games per opponent during training")
    final_games: int = ranged(2000, 1, 10 ** 7, doc="games per opponent in the final table")
    opponents: list[str] = documented(["random", "greedy", "expert"], (
        "agents.load specs for env.game, at least one, each once"))


@dataclass
class RLlibConfig:
    """Ray RLlib (only for run.trainer rllib)."""

    address: str = documented("", (
        "the Ray cluster to join (\"auto\", \"ray://head:10001\", \"host:port\"); \"\" = "
        "start a local Ray instance"))
    num_cpus: int = ranged(2, 0, 4096, doc=(
        "CPUs of the local Ray instance (0 = all); unused with an address; at least one "
        "per env runner"))
    num_env_runners: int = ranged(1, 0, 4096, doc="sampling actors (0 = sample in the driver)")
    num_envs_per_env_runner: int = ranged(4, 1, 4096,
                                          doc="games each env runner plays side by side")
    num_learners: int = ranged(0, 0, 1024, doc="learner actors (0 = learn in the driver)")
    train_batch_size: int = ranged(4000, 1, 2 ** 24, doc=(
        "agent steps (all modules) sampled per PPO update"))
    minibatch_size: int = ranged(500, 1, 2 ** 24, doc=(
        "SGD minibatch (agent steps); at most train_batch_size per learner"))


@dataclass
class TrainConfig:
    """A training run's configuration: one section per dataclass above; every field is
    listed, with its type, default, range and doc, by ``train.py --help-config``."""

    run: RunConfig = field(default_factory=RunConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    opponents: OpponentConfig = field(default_factory=OpponentConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    rllib: RLlibConfig = field(default_factory=RLlibConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> "TrainConfig":
        """Check every field's type and range, then the constraints between fields; raise
        :class:`ConfigError` naming the field. Returns ``self``."""
        for section in dataclasses.fields(self):
            _check_section(getattr(self, section.name), section.name)
        self._validate_run()
        self._validate_game()
        self._validate_trainer()
        self._validate_opponents()
        if self.run.trainer == "rllib":
            self._validate_rllib()
        return self

    def warm_start_games(self) -> int:
        """The demonstrator games the warm start plays: ``imitation.games``, at most one
        per ``imitation.steps_per_game`` learner steps of ``run.total_steps`` (no cap at 0)."""
        ic = self.imitation
        if not ic.steps_per_game:
            return ic.games
        return min(ic.games, self.run.total_steps // ic.steps_per_game)

    def sized_to_run(self) -> "TrainConfig":
        """A copy whose ``imitation.games`` is :meth:`warm_start_games` (what will be played)."""
        imitation = dataclasses.replace(self.imitation, games=self.warm_start_games())
        return dataclasses.replace(self, imitation=imitation)

    def _validate_run(self) -> None:
        if not RUN_NAME.fullmatch(self.run.name):
            raise ConfigError(f"run.name: must be a plain folder name (1-100 letters, digits, "
                              f"'.', '_', '-', starting with a letter or digit), got "
                              f"{_shown(self.run.name)}")
        if self.run.init_from and self.imitation.games and not self.imitation.refine:
            raise ConfigError("run.init_from: run.init_from and imitation.games are two ways to "
                              "start a run; set imitation.games: 0 to start from run.init_from "
                              "(or imitation.refine: true to fit it to imitation.demonstrator)")
        if self.imitation.targets == "search" and not is_search_spec(self.imitation.demonstrator):
            raise ConfigError(f"imitation.targets: 'search' distils a search's gains; set "
                              f"imitation.demonstrator to a search spec "
                              f"(search:<checkpoint>), got {_shown(self.imitation.demonstrator)}")
        if self.imitation.refine and not (self.run.init_from and self.imitation.games):
            raise ConfigError("imitation.refine: refines the network of run.init_from by "
                              "imitation; set run.init_from and imitation.games too")

    def _validate_game(self) -> None:
        env = self.env
        problem = SPECS[env.game].player_count_problem(env.num_players)
        if problem is not None:
            raise ConfigError(f"env.num_players: {problem}")
        if env.reward == "win" and env.num_players == 1:
            raise ConfigError('env.reward: "win" needs 2+ players')
        if self.network.features == "cards" and env.game != "cards":
            raise ConfigError(f'network.features: "cards" is for the card game, not '
                              f'env.game {env.game!r}')
        if not self.network.hidden:
            raise ConfigError("network.hidden: must list at least one layer width")

    def _validate_trainer(self) -> None:
        trainer = self.run.trainer
        if trainer != "torch":
            torch_only = {"imitation.games": self.imitation.games,
                          "run.init_from": self.run.init_from,
                          "ppo.decisions_only": self.ppo.decisions_only}
            off = {"imitation.games": "0", "run.init_from": '""', "ppo.decisions_only": "false"}
            for name, value in torch_only.items():
                if value:
                    raise ConfigError(f"{name}: is supported by the torch trainer, not by the "
                                      f"{trainer} trainer (set {name}: {off[name]})")
            if trainer == "sb3" and self.env.num_players < 2:
                raise ConfigError("env.num_players: the sb3 trainer seats the learner against "
                                  "opponents: 2 or more (use the torch trainer for solo play)")
        if trainer == "rllib":
            return
        rollout = self.ppo.rollout_steps * self.env.num_games
        if self.run.total_steps < rollout:
            raise ConfigError(f"run.total_steps: must be at least one rollout "
                              f"(ppo.rollout_steps * env.num_games = {rollout:,}), got "
                              f"{self.run.total_steps:,}")
        if self.ppo.num_minibatches > rollout:
            raise ConfigError(f"ppo.num_minibatches: must not exceed the samples of a rollout "
                              f"(ppo.rollout_steps * env.num_games = {rollout:,}), got "
                              f"{self.ppo.num_minibatches:,}")

    def _validate_opponents(self) -> None:
        oc = self.opponents
        shares = {"opponents.self_play": oc.self_play, "opponents.snapshots": oc.snapshots,
                  **{f"opponents.scripted.{k}": v for k, v in oc.scripted.items()}}
        if sum(shares.values()) <= 0:
            raise ConfigError("opponents.self_play: the opponent shares (opponents.self_play, "
                              ".snapshots, .scripted) must not all be 0")
        others = [name for name, share in shares.items()
                  if share > 0 and name != "opponents.self_play"]
        if self.env.num_players == 1 and others:
            raise ConfigError(f"{others[0]}: solo play has no opponents: set "
                              f"opponents.snapshots and opponents.scripted to 0")
        if not self.eval.opponents:
            raise ConfigError("eval.opponents: must list at least one agent spec")
        twice = sorted({s for s in self.eval.opponents if self.eval.opponents.count(s) > 1})
        if twice:
            raise ConfigError(f"eval.opponents: lists {twice[0]!r} more than once")

    def _validate_rllib(self) -> None:
        r = self.rllib
        match = RAY_ADDRESS.fullmatch(r.address)
        if r.address and (not match or int(match["port"] or 1) > 65535):
            raise ConfigError(f'rllib.address: must be "", "auto", "local" or '
                              f'"[ray://]host:port" (port up to 65535), got {_shown(r.address)}')
        per_learner = r.train_batch_size // max(1, r.num_learners)
        if r.minibatch_size > per_learner:
            raise ConfigError(f"rllib.minibatch_size: must not exceed the batch of each learner "
                              f"(rllib.train_batch_size // rllib.num_learners = "
                              f"{per_learner:,}), got {r.minibatch_size:,}")
        if not r.address and r.num_cpus and r.num_env_runners > r.num_cpus:
            raise ConfigError(f"rllib.num_env_runners: {r.num_env_runners} env runners take one "
                              f"CPU each, more than the local Ray instance has "
                              f"(rllib.num_cpus = {r.num_cpus})")
        if DEVICE.fullmatch(self.run.device)["index"] is not None:
            raise ConfigError(f"run.device: the rllib trainer lets Ray place its learners on "
                              f"GPUs, so it cannot pick {self.run.device!r}: use 'cuda', and set "
                              f"CUDA_VISIBLE_DEVICES where Ray starts (train.py, or ray start "
                              f"on a cluster) to choose which")
        if self.opponents.snapshots > 0:
            raise ConfigError("opponents.snapshots: the rllib trainer has no snapshot pool: set "
                              "opponents.snapshots: 0 (self-play and fixed opponents only)")


# -- checking values ------------------------------------------------------------------------

def _check_section(section: Any, name: str) -> None:
    """Type and range of every field of one section (what a program may have set directly)."""
    hints = typing.get_type_hints(type(section))
    for f in dataclasses.fields(section):
        _check_value(f"{name}.{f.name}", getattr(section, f.name), hints[f.name],
                     f.metadata.get("range"))


def _check_value(path: str, value: Any, hint: Any, bounds: Range | None = None) -> Any:
    """``value`` converted to the annotated type ``hint`` (numbers within ``bounds``), or
    ConfigError naming ``path``."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        return _check_choice(path, value, typing.get_args(hint))
    if hint is Device:
        return _check_device(path, value)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path}: must be a list, got {_shown(value)}")
        (item,) = typing.get_args(hint)
        return [_check_value(f"{path}[{i}]", v, item, bounds) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: must be a mapping, got {_shown(value)}")
        key_t, val_t = typing.get_args(hint)
        return {_check_value(f"{path} key", k, key_t): _check_value(f"{path}.{k}", v, val_t,
                                                                     bounds)
                for k, v in value.items()}
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: must be true or false, got {_shown(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: must be an integer, got {_shown(value)}")
        return _check_range(path, value, bounds, integer=True)
    if hint is float:
        return _check_range(path, _to_float(path, value), bounds, integer=False)
    if hint is str:
        if not isinstance(value, str):
            colon = " (YAML reads a trailing ':' or ': ' as a mapping; quote the text)" \
                if isinstance(value, dict) else ""
            raise ConfigError(f"{path}: must be a string, got {_shown(value)}{colon}")
        return value
    raise ConfigError(f"{path}: unsupported field type {hint}")  # a bug in this module


def _check_choice(path: str, value: Any, choices: tuple[Any, ...]) -> Any:
    if value in choices:
        return value
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"{path}: must be one of {list(choices)}, got {_shown(value)}{hint}")


def _check_device(path: str, value: Any) -> str:
    if isinstance(value, str) and DEVICE.fullmatch(value):
        return value
    text = str(value).strip().lower()
    digits = re.search(r"[0-9]+$", text)  # "cuda1", "cuda:01": the GPU's index, mistyped
    forms = [*DEVICE_NAMES, *([f"cuda:{int(digits[0])}"] if digits else [])]
    close = difflib.get_close_matches(text, forms, n=1, cutoff=0.7)  # not "gpu" -> "cpu"
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"{path}: must be one of {DEVICE_FORMS} (N = 0, 1, ...: which GPU), "
                      f"got {_shown(value)}{hint}")


def _to_float(path: str, value: Any) -> float:
    if isinstance(value, str) and _looks_numeric(value):
        value = float(value)  # YAML 1.1 reads 3e-4 (no dot) as a string
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{path}: must be a number, got {_shown(value)}")
    try:
        return float(value)
    except OverflowError:  # an integer beyond any float
        raise ConfigError(f"{path}: must be a finite number, got {_shown(value)}") from None


def _check_range(path: str, value: int | float, bounds: Range | None, integer: bool) -> Any:
    if bounds is not None and not bounds.contains(value):
        raise ConfigError(f"{path}: must be {bounds.describe(integer)}, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    """``value`` for a one-line message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text)} characters)"


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- loading --------------------------------------------------------------------------------

def _build(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{path or 'the config'}: must be a mapping of fields, got "
                          f"{_shown(data)}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f"; did you mean {(path + '.' if path else '') + close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: unknown config field{hint} "
                              f"(fields of {path or 'the top level'}: {names})")
        if dataclasses.is_dataclass(hints[key]):
            kwargs[key] = _build(hints[key], value, where)
        else:
            kwargs[key] = _check_value(where, value, hints[key])
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """A validated config from nested plain data (missing fields take their defaults)."""
    return _build(TrainConfig, data, "").validate()


def _parse_yaml(text: str, what: str, path: str = "") -> Any:
    """The YAML document ``text`` (``what``: a file or an override value, ``path``: the
    field it sits at); ConfigError when it is not valid YAML or a mapping in it holds a
    key twice (YAML would silently keep only the last)."""
    try:
        _refuse_duplicate_keys(yaml.compose(text, Loader=yaml.SafeLoader), path, what)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = " ".join(filter(None, (getattr(exc, "context", None),
                                         getattr(exc, "problem", None)))) or str(exc)
        head = f"{path}: {what}" if path else f"{what}:"
        raise ConfigError(" ".join(f"{head} is not valid YAML: {where}{problem}".split())) \
            from None


def _refuse_duplicate_keys(node: Any, path: str, what: str, seen: set[int] | None = None) -> None:
    seen = set() if seen is None else seen
    if id(node) in seen:  # an alias: checked where its anchor is
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *defaults" merges, not a key
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                raise ConfigError(f"{path or 'the top level'}: a key in {what} is a {kind} "
                                  f"(line {key_node.start_mark.line + 1}); keys are names")
            key = key_node.value
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and key in lines:
                raise ConfigError(f"{where}: appears twice in {what} (lines {lines[key]} and "
                                  f"{key_node.start_mark.line + 1}); the first would be "
                                  f"silently dropped")
            lines[key] = key_node.start_mark.line + 1
            _refuse_duplicate_keys(value_node, where, what, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _refuse_duplicate_keys(item, f"{path}[{i}]", what, seen)


def _read_config_file(path: Path) -> dict[str, Any]:
    what = f"config file {str(path)!r}"
    if path.is_dir():
        raise ConfigError(f"{what}: is a directory, not a YAML file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what}: does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{what}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what}: is not UTF-8 text (byte {raw[exc.start]:#04x} at offset "
                          f"{exc.start})") from None
    data = _parse_yaml(text, what)
    if data is None:
        raise ConfigError(f"{what}: is empty; it must map sections (run, env, ppo, ...) to "
                          f"their fields")
    if not isinstance(data, dict):
        raise ConfigError(f"{what}: must map sections (run, env, ppo, ...) to their fields, "
                          f"got a {type(data).__name__}")
    return data


def shipped_configs() -> list[str]:
    """The names of the shipped configs (``--config`` takes them as well as paths)."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))


def config_path(name_or_path: str | Path) -> Path:
    """The file a ``--config`` value names: a path, or where no file of that name exists
    and the value is a plain name (``dice-4p``), the shipped config of that name."""
    if not str(name_or_path).strip():  # Path("") is ".", a folder
        raise ConfigError(f"--config: is empty; give a YAML file or the name of a shipped "
                          f"config ({', '.join(shipped_configs())})")
    path = Path(name_or_path)
    if path.exists() or path.name != str(name_or_path) or path.suffix:
        return path
    if path.name not in shipped_configs():
        close = difflib.get_close_matches(path.name, shipped_configs(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"config file {path.name!r}: is neither a file nor the name of a "
                          f"shipped config ({', '.join(shipped_configs())}){hint}")
    return CONFIG_DIR / f"{path.name}.yaml"


def _apply_override(data: dict[str, Any], item: str) -> None:
    """Set ``section.field=value`` (value parsed as YAML) in ``data``."""
    key, sep, raw = item.partition("=")
    parts = key.strip().split(".")
    if not sep or len(parts) < 2 or not all(parts):
        raise ConfigError(f"override {item!r}: must look like section.field=value")
    value = _parse_yaml(raw, f"override value {raw!r}", key.strip())
    node = data
    for depth, part in enumerate(parts[:-1]):
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{'.'.join(parts[:depth + 1])}: is a field, not a section "
                              f"(override {item!r})")
    node[parts[-1]] = value


def missing_fields(data: dict[str, Any]) -> list[str]:
    """What nested plain config data lacks of :class:`TrainConfig`: a whole section by its
    name, else each ``section.field``."""
    missing = []
    for name, cls in typing.get_type_hints(TrainConfig).items():
        given = data.get(name)
        if not isinstance(given, dict):
            missing.append(name)
            continue
        missing += [f"{name}.{f.name}" for f in dataclasses.fields(cls) if f.name not in given]
    return missing


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = (),
                complete: bool = False) -> TrainConfig:
    """Read a YAML config (a path or a shipped config's name, see :func:`config_path`;
    ``None``: the defaults) and apply ``key.sub=value`` overrides.

    Override values are parsed as YAML (``1e-3``, ``true``, ``[128, 128]``). Raises
    :class:`ConfigError` for anything that does not describe a valid run; a refused field
    read from a file of the user's (not a shipped config) names the file too. With
    ``complete`` (a run's own ``config.yaml``, which holds every field) a field that
    neither the file nor an override gives is refused too, rather than taking its default.
    """
    file = config_path(path) if path is not None else None
    data = _read_config_file(file) if file is not None else {}
    for item in overrides:
        _apply_override(data, item)
    try:
        cfg = _build(TrainConfig, data, "")
    except ConfigError as exc:
        raise _in_file(exc, file, overrides) from None
    # Before the checks between fields, which the defaults of what is lost may fail.
    if complete and (missing := missing_fields(data)):
        raise ConfigError(f"config file {str(file)!r}: lacks {', '.join(missing)}, which the "
                          f"run wrote (the file was cut short or edited, or written by an "
                          f"older version); put them back, or give them as overrides")
    try:
        return cfg.validate()
    except ConfigError as exc:
        raise _in_file(exc, file, overrides) from None


def _in_file(exc: ConfigError, file: Path | None, overrides: Any) -> ConfigError:
    """``exc`` naming the user's config file it came from (a shipped one is valid alone)."""
    if file is None or file.parent == CONFIG_DIR:
        return exc
    return ConfigError(f"{exc} (config file {str(file)!r}"
                       f"{' with the overrides' if overrides else ''})")


def save_config(cfg: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (the run folder keeps it next to its checkpoints);
    atomically: the file is the old one or the complete new one."""
    atomic_write_text(path, yaml.safe_dump(cfg.to_dict(), sort_keys=False))


# -- documentation --------------------------------------------------------------------------

def describe_fields() -> str:
    """Every field of :class:`TrainConfig` as ``section.field``, its type, default (in the
    form an override takes), range or choices, and its doc, section by section."""
    lines = []
    for section in dataclasses.fields(TrainConfig):
        cls = typing.get_type_hints(TrainConfig)[section.name]
        hints = typing.get_type_hints(cls)
        lines += ["", f"{section.name}: {cls.__doc__}"]
        for f in dataclasses.fields(cls):
            default = f.default_factory() if f.default is dataclasses.MISSING else f.default
            lines.append(f"  {section.name}.{f.name}: {_describe_type(hints[f.name], f)}, "
                         f"default {json.dumps(default)}")
            lines += textwrap.wrap(f.metadata["doc"], 80, initial_indent=" " * 6,
                                   subsequent_indent=" " * 6)
    return "\n".join(lines[1:])


def _describe_type(hint: Any, f: dataclasses.Field) -> str:
    bounds = f.metadata.get("range")
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(args)
    if origin is list:
        return f"a list, each item {_describe_type(args[0], f)}"
    if origin is dict:
        return f"a mapping of {args[0].__name__} to {_describe_type(args[1], f)}"
    if bounds is not None:
        return bounds.describe(integer=hint is int)
    return {bool: "true or false", str: "a string",
            Device: f"one of {DEVICE_FORMS}"}[hint]


def describe_plan(cfg: TrainConfig, resume: bool = False) -> str:
    """What each phase of the run will cost, in games and learner steps (train.py prints it
    before it starts)."""
    ec, opponents = cfg.eval, ", ".join(cfg.eval.opponents)
    rounds = (cfg.run.total_steps - 1) // ec.every if ec.every else 0
    during = rounds * ec.games * len(cfg.eval.opponents)
    final = ec.final_games * len(cfg.eval.opponents)
    return (f"plan: warm start: {_warm_start_plan(cfg, resume)}\n"
            f"      PPO ({cfg.run.trainer} trainer): {cfg.run.total_steps:,} learner steps"
            f"{' in all, on from the last checkpoint' if resume else ''}, a checkpoint every "
            f"{cfg.run.checkpoint_every:,}\n"
            f"      evaluation: {during:,} games during training ({rounds} x {ec.games:,} "
            f"against each opponent), {final:,} at the end ({ec.final_games:,} against each "
            f"of {opponents})")


def _warm_start_plan(cfg: TrainConfig, resume: bool) -> str:
    ic, games = cfg.imitation, cfg.warm_start_games()
    if resume:
        return "none (resuming from the last checkpoint)"
    start = f"the network of run.init_from {cfg.run.init_from!r}"
    if cfg.run.init_from and not ic.refine:
        return start
    if not games:
        return "none" + (f" (imitation.games {ic.games:,} capped to 0: run.total_steps "
                         f"< imitation.steps_per_game)" if ic.games else "")
    capped = (f"; imitation.games {ic.games:,} capped at one game per "
              f"imitation.steps_per_game = {ic.steps_per_game:,} of run.total_steps"
              if games < ic.games else "")
    then = f"{start}, then " if ic.refine else ""
    return (f"{then}imitate {games:,} self-play game{'s' if games > 1 else ''} of "
            f"{ic.demonstrator!r} ({ic.epochs} epochs){capped}")
