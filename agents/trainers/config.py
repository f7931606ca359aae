"""Training configuration: nested dataclasses, loaded from YAML, overridable field by field.

Every field has one documented line. Loading is strict: an unknown or mistyped field,
a value of the wrong type or outside its choices raises :class:`ConfigError` naming
the field (with the closest valid name when it looks like a typo), so a config never
silently trains something else than it says.

>>> cfg = load_config(None, overrides=["ppo.learning_rate=1e-3", "run.seed=3"])
>>> cfg.ppo.learning_rate, cfg.run.seed
(0.001, 3)
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml


class ConfigError(ValueError):
    """A config file or override that does not describe a valid training run."""


@dataclass
class RunConfig:
    name: str = "dice-2p"              # run folder: runs/<name>/
    trainer: Literal["torch", "sb3", "rllib"] = "torch"  # on-device PPO, sb3-contrib
                                       # MaskablePPO, or Ray RLlib PPO (the rllib extra)
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto = cuda when available
    seed: int = 0                      # seeds the engine, the network and the opponents
    total_steps: int = 3_000_000       # learner steps to train on (all seats it plays)
    checkpoint_every: int = 1_000_000    # learner steps between checkpoints
    torch_threads: int = 0             # torch CPU threads; 0 = torch's default
    init_from: str = ""                # torch trainer: start from this checkpoint's network
                                       # (a path or pretrained:<name>; same network config)
                                       # instead of an imitation warm start; "" = fresh


@dataclass
class EnvConfig:
    game: Literal["dice", "cards"] = "dice"  # which Qwinto
    num_players: int = 2               # seats per game
    reward: Literal["win", "margin", "score"] = "score"  # see qwinto_env.parallel
    num_games: int = 256               # games advanced in parallel by the batched engine


@dataclass
class NetworkConfig:
    hidden: list[int] = field(default_factory=lambda: [256, 256])  # MLP layer widths
    activation: Literal["tanh", "relu"] = "tanh"  # hidden-layer activation
    features: Literal["raw", "sheet", "cards"] = "sheet"  # "sheet": add the rule-derived
                                       # features of agents/features.py (allowed values per own
                                       # cell); "cards" (card game): also what each play would
                                       # announce and who could write it


@dataclass
class PPOConfig:
    learning_rate: float = 5e-4        # Adam step size
    anneal_lr: bool = True             # decay the step size linearly to 0
    rollout_steps: int = 64            # engine steps per game per update
    reward_scale: float = 0.05         # rewards are multiplied by this before learning: returns
                                       # of O(1) keep the shared torso's value loss from
                                       # drowning the policy gradient
    gamma: float = 0.999               # discount (a game is ~75 engine steps)
    gae_lambda: float = 0.95           # GAE lambda
    update_epochs: int = 4             # passes over each rollout
    num_minibatches: int = 8           # minibatches per pass
    clip_coef: float = 0.2             # PPO ratio clip
    ent_coef: float = 0.0              # entropy bonus
    vf_coef: float = 0.5               # value-loss weight
    max_grad_norm: float = 0.5         # gradient clipping
    normalize_advantages: bool = True  # per-minibatch advantage normalisation
    decisions_only: bool = False       # torch trainer: leave steps without a choice out of
                                       # the update (faster; see README, Trainer speed)


@dataclass
class ImitationConfig:
    games: int = 2000                  # demonstrator self-play games to imitate first (0 = off)
    demonstrator: str = "expert"       # agents.load spec of the player to imitate
    epochs: int = 8                    # passes over the demonstrations
    batch_size: int = 256              # minibatch size
    learning_rate: float = 1e-3        # Adam step size of the warm start


@dataclass
class OpponentConfig:
    self_play: float = 0.6             # share of games where every seat is the learner
    snapshots: float = 0.2             # share of games against earlier snapshots of the learner
    scripted: dict[str, float] = field(
        default_factory=lambda: {"random": 0.05, "greedy": 0.1, "expert": 0.05})  # spec: share
    snapshot_every: int = 200_000      # learner steps between snapshots added to the pool
    pool_size: int = 5                 # snapshots kept (oldest dropped)


@dataclass
class EvalConfig:
    every: int = 1_000_000               # learner steps between evaluations (0 = only at the end)
    games: int = 200                   # games per opponent during training
    final_games: int = 2000            # games per opponent in the final table
    opponents: list[str] = field(default_factory=lambda: ["random", "greedy", "expert"])


@dataclass
class RLlibConfig:
    address: str = ""                  # Ray cluster to join ("auto", "ray://head:10001");
                                       # "" = start a local Ray instance
    num_cpus: int = 2                  # CPUs of the local Ray instance (0 = all); unused
                                       # with an address
    num_env_runners: int = 1           # sampling actors (0 = sample in the driver)
    num_envs_per_env_runner: int = 4   # games each env runner plays side by side
    num_learners: int = 0              # learner actors (0 = learn in the driver)
    train_batch_size: int = 4000       # agent steps (all modules) sampled per PPO update
    minibatch_size: int = 500          # SGD minibatch (agent steps)


@dataclass
class TrainConfig:
    run: RunConfig = field(default_factory=RunConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    opponents: OpponentConfig = field(default_factory=OpponentConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    rllib: RLlibConfig = field(default_factory=RLlibConfig)  # only for run.trainer rllib

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> "TrainConfig":
        """Check cross-field constraints; raise :class:`ConfigError` naming the field."""
        positive = {"run.total_steps": self.run.total_steps, "env.num_games": self.env.num_games,
                    "ppo.rollout_steps": self.ppo.rollout_steps,
                    "ppo.update_epochs": self.ppo.update_epochs,
                    "ppo.num_minibatches": self.ppo.num_minibatches,
                    "ppo.learning_rate": self.ppo.learning_rate,
                    "ppo.reward_scale": self.ppo.reward_scale,
                    "run.checkpoint_every": self.run.checkpoint_every,
                    "eval.final_games": self.eval.final_games,
                    "imitation.epochs": self.imitation.epochs,
                    "imitation.batch_size": self.imitation.batch_size,
                    "imitation.learning_rate": self.imitation.learning_rate}
        for name, value in positive.items():
            if value <= 0:
                raise ConfigError(f"{name} must be positive, got {value}")
        limits = {"dice": (1, 6), "cards": (1, 4)}[self.env.game]
        if not limits[0] <= self.env.num_players <= limits[1]:
            raise ConfigError(f"env.num_players must be in {limits[0]}..{limits[1]} for "
                              f"{self.env.game}, got {self.env.num_players}")
        if self.imitation.games < 0:
            raise ConfigError(f"imitation.games must be >= 0, got {self.imitation.games}")
        if self.imitation.games and self.run.trainer != "torch":
            raise ConfigError("imitation (imitation.games > 0) is a warm start of the torch "
                              f"trainer; set imitation.games: 0 for the {self.run.trainer} "
                              "trainer")
        if self.run.init_from and self.run.trainer != "torch":
            raise ConfigError(f"run.init_from is supported by the torch trainer, not by the "
                              f"{self.run.trainer} trainer")
        if self.ppo.decisions_only and self.run.trainer != "torch":
            raise ConfigError(f"ppo.decisions_only is supported by the torch trainer, not by "
                              f"the {self.run.trainer} trainer")
        if self.run.init_from and self.imitation.games:
            raise ConfigError("run.init_from and imitation.games are two ways to start a run; "
                              "set imitation.games: 0 to start from run.init_from")
        if self.run.trainer == "rllib":
            self._validate_rllib()
        if self.env.reward == "win" and self.env.num_players == 1:
            raise ConfigError('env.reward "win" needs 2+ players')
        for name in ("gamma", "gae_lambda"):
            if not 0.0 <= getattr(self.ppo, name) <= 1.0:
                raise ConfigError(f"ppo.{name} must be in [0, 1], got {getattr(self.ppo, name)}")
        if self.network.features == "cards" and self.env.game != "cards":
            raise ConfigError(f'network.features "cards" is for the card game, not '
                              f'env.game {self.env.game!r}')
        if not self.network.hidden or any(h <= 0 for h in self.network.hidden):
            raise ConfigError(f"network.hidden must list positive widths, got {self.network.hidden}")
        shares = {"opponents.self_play": self.opponents.self_play,
                  "opponents.snapshots": self.opponents.snapshots,
                  **{f"opponents.scripted.{k}": v for k, v in self.opponents.scripted.items()}}
        for name, share in shares.items():
            if share < 0:
                raise ConfigError(f"{name} must be >= 0, got {share}")
        if sum(shares.values()) <= 0:
            raise ConfigError("opponent shares (opponents.self_play, .snapshots, .scripted) "
                              "must not all be 0")
        if self.env.num_players == 1 and sum(shares.values()) != self.opponents.self_play:
            raise ConfigError("solo play has no opponents: set opponents.snapshots and "
                              "opponents.scripted to 0")
        return self

    def _validate_rllib(self) -> None:
        r = self.rllib
        for name in ("num_cpus", "num_env_runners", "num_learners"):
            if getattr(r, name) < 0:
                raise ConfigError(f"rllib.{name} must be >= 0, got {getattr(r, name)}")
        for name in ("num_envs_per_env_runner", "train_batch_size", "minibatch_size"):
            if getattr(r, name) <= 0:
                raise ConfigError(f"rllib.{name} must be positive, got {getattr(r, name)}")
        if r.minibatch_size > r.train_batch_size:
            raise ConfigError(f"rllib.minibatch_size ({r.minibatch_size}) must not exceed "
                              f"rllib.train_batch_size ({r.train_batch_size})")
        if self.opponents.snapshots > 0:
            raise ConfigError("the rllib trainer has no snapshot pool: set "
                              "opponents.snapshots: 0 (self-play and fixed opponents only)")


# -- loading -----------------------------------------------------------------------------

def _check_value(path: str, value: Any, hint: Any) -> Any:
    """``value`` converted to the annotated type ``hint``, or ConfigError naming ``path``."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(f"{path} must be one of {list(choices)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path} must be a list, got {value!r}")
        (item,) = typing.get_args(hint)
        return [_check_value(f"{path}[{i}]", v, item) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path} must be a mapping, got {value!r}")
        key_t, val_t = typing.get_args(hint)
        return {_check_value(f"{path} key", k, key_t): _check_value(f"{path}.{k}", v, val_t)
                for k, v in value.items()}
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path} must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path} must be an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, str) and _looks_numeric(value):
            value = float(value)  # YAML 1.1 reads 3e-4 (no dot) as a string
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path} must be a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path} must be a string, got {value!r}")
        return value
    raise ConfigError(f"{path}: unsupported field type {hint}")  # a bug in this module


def _build(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{path or 'the config'} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f"; did you mean {(path + '.' if path else '') + close[0]!r}?" if close else ""
            raise ConfigError(f"unknown config field {where!r}{hint} "
                              f"(fields of {path or 'the top level'}: {names})")
        if dataclasses.is_dataclass(hints[key]):
            kwargs[key] = _build(hints[key], value, where)
        else:
            kwargs[key] = _check_value(where, value, hints[key])
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """A validated config from nested plain data (missing fields take their defaults)."""
    return _build(TrainConfig, data, "").validate()


def _set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {dotted!r}: {part!r} is not a section")
    node[leaf] = value


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """Read a YAML config (``None``: the defaults) and apply ``key.sub=value`` overrides.

    Override values are parsed as YAML (``1e-3``, ``true``, ``[128, 128]``).
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file {str(path)!r} does not exist")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"config file {str(path)!r} must hold a mapping of sections")
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} must look like section.field=value")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"override {item!r}: value is not valid YAML: {exc}") from exc
        _set_path(data, key.strip(), value)
    return config_from_dict(data)


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def save_config(cfg: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (the run folder keeps it next to its checkpoints)."""
    Path(path).write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
