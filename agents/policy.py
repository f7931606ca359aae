"""Neural policy agents and the checkpoint format every trainer writes.

Checkpoint format (version 1): a file written by :func:`torch.save` holding a dict

==================  ===========================================================
key                 content
==================  ===========================================================
``format``          ``"qwinto-policy"``
``version``         ``1``
``game``            ``"dice"`` or ``"cards"``
``num_players``     the player count the policy was trained for
``observation_size``  length of the observation vector
``num_actions``     size of the action space
``network``         constructor arguments of :class:`PolicyNetwork` (``hidden``,
                    ``activation``, ``features``; a missing ``features`` means ``"raw"``)
``state_dict``      the network's parameters (``PolicyNetwork.state_dict()``)
``metadata``        free-form dict (trainer, steps, config...); optional
==================  ===========================================================

:func:`save_checkpoint` writes it; :func:`agents.load` reads it (via
:func:`load_checkpoint`) and checks the game and player count. The network maps an
observation to action logits (and a state value, for actor-critic trainers); the agent
masks illegal actions out and plays the most likely legal action, or samples with
``deterministic=False``.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from qwinto_env.fileio import atomic_torch_save
from qwinto_env.spec import SPECS

from .base import Agent, IllegalMaskError, check_flag
from .features import FEATURE_SETS, FEATURES

__all__ = ["PolicyNetwork", "PolicyAgent", "save_checkpoint", "load_checkpoint", "archive_problem",
           "CheckpointError", "CHECKPOINT_FORMAT", "CHECKPOINT_VERSION"]

CHECKPOINT_FORMAT = "qwinto-policy"
CHECKPOINT_VERSION = 1
_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}

# A forked child (gymnasium's AsyncVectorEnv and multiprocessing use fork on Linux) inherits
# torch's OpenMP threads in a state it cannot use once this process has run a parallel op
# (loading a checkpoint is one): the child's first parallel op hangs for good. With one
# thread torch runs such ops inline, as in the workers torch's own DataLoader starts.
os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used: unreadable, malformed or for another game."""


class PolicyNetwork(nn.Module):
    """An MLP torso with a policy head (logits) and a value head.

    ``features="sheet"`` first appends the rule-derived features of
    :mod:`agents.features` to the observation, ``"cards"`` (card game) those and what each
    play would announce (``"raw"``: the observation as it is).
    """

    def __init__(self, observation_size: int, num_actions: int,
                 hidden: Sequence[int] = (256, 256), activation: str = "tanh",
                 features: str = "raw"):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of "
                             f"{sorted(_ACTIVATIONS)}")
        if features not in FEATURE_SETS:
            raise ValueError(f"unknown features {features!r}; choose one of {FEATURE_SETS}")
        self.observation_size, self.num_actions = int(observation_size), int(num_actions)
        self.features = FEATURES[features](self.observation_size)
        layers: list[nn.Module] = []
        size = self.observation_size + self.features.extra_size
        for h in hidden:
            layers += [nn.Linear(size, int(h)), _ACTIVATIONS[activation]()]
            size = int(h)
        self.torso = nn.Sequential(*layers)
        self.policy_head = nn.Linear(size, num_actions)
        self.value_head = nn.Linear(size, 1)
        self.config = {"hidden": [int(h) for h in hidden], "activation": activation,
                       "features": features}

    @property
    def input_size(self) -> int:
        """Length of :meth:`encode`'s rows (the torso takes ``expand``-ed, longer rows)."""
        return self.observation_size + self.features.code_size

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, A)`` and values ``(B,)`` for observations ``(B, obs)``."""
        return self._heads(self.torso(self.features(obs)))

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """Compact rows ``(B, input_size)`` that determine the torso's input.

        The features have no parameters, so a trainer can encode a rollout once and
        reuse it for every epoch of updates (:meth:`forward_encoded`); the compact form
        (see :mod:`agents.features`) keeps that store small.
        """
        return self.features.encode(obs)

    def forward_encoded(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` on rows that :meth:`encode` made."""
        return self._heads(self.torso(self.features.expand(inputs)))

    def _heads(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy_head(z), self.value_head(z).squeeze(-1)


class PolicyAgent(Agent):
    """Plays a :class:`PolicyNetwork`: the best legal action, or a masked sample."""

    name = "policy"
    supports_batch = True

    def __init__(self, network: PolicyNetwork, game: str = "dice", num_players: int = 2,
                 deterministic: bool = True):
        super().__init__(game, num_players)
        self.network = network.eval()
        self.deterministic = check_flag("policy setting deterministic", deterministic)
        self._gen = torch.Generator().manual_seed(0)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self._gen.manual_seed(int(seed) % (2 ** 63))

    @torch.no_grad()
    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self.check_inputs(observations, masks)
        masks = np.asarray(masks)
        if not (masks > 0).any(axis=1).all():
            raise IllegalMaskError("an action mask of the batch has no legal action")
        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        logits, _ = self.network(obs)
        logits = logits.masked_fill(torch.as_tensor(masks) <= 0, -torch.inf)
        if self.deterministic:
            return logits.argmax(dim=1).numpy().astype(np.int64)
        probs = torch.softmax(logits, dim=1)
        return torch.multinomial(probs, 1, generator=self._gen).squeeze(1).numpy().astype(np.int64)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.check_inputs(observation, action_mask, batch=False)
        return int(self.act_batch(np.asarray(observation)[None], np.asarray(action_mask)[None])[0])


def save_checkpoint(path: str | os.PathLike, network: PolicyNetwork, game: str,
                    num_players: int, observation_size: int, num_actions: int,
                    metadata: dict[str, Any] | None = None) -> None:
    """Write ``network`` as a version-1 checkpoint (see the module docstring), atomically:
    a reader sees the previous file or the complete new one, never a truncated one."""
    atomic_torch_save({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
                       "game": game, "num_players": int(num_players),
                       "observation_size": int(observation_size),
                       "num_actions": int(num_actions), "network": dict(network.config),
                       "state_dict": network.state_dict(),
                       "metadata": dict(metadata or {})}, path)


_REQUIRED = ("game", "num_players", "observation_size", "num_actions", "network", "state_dict")
_NETWORK_KEYS = ("hidden", "activation", "features")
_ZIP_MAGIC = b"PK\x03\x04"  # how torch tells its zip format from the legacy one
_PICKLE_MAGIC = b"\x80"     # a legacy torch file is a pickle (protocol 2)


def load_checkpoint(path: str | os.PathLike) -> tuple[PolicyNetwork, dict[str, Any]]:
    """Read a checkpoint; the rebuilt network and the checkpoint dict.

    The network's parameters are bit for bit those that were saved, or this raises
    :class:`CheckpointError` naming the file and what is wrong with it: unreadable or
    not a regular file; not a torch zip archive (torch's legacy format carries no
    checksums, so it is refused); a member whose CRC-32 does not match (torch does not
    check them); a field of the wrong type or value, or one that does not fit the game
    and player count; weights that are not finite or do not fit the network the fields
    describe.
    """
    raw = _read_bytes(path)
    _check(path, archive_problem(raw))
    try:
        data = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged or foreign archive
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or not a torch file: "
                              f"{_brief(exc)}") from exc
    _check(path, _fields_problem(data) or _network_problem(data["network"])
           or _weights_problem(data))
    net = PolicyNetwork(data["observation_size"], data["num_actions"], **data["network"])
    net.load_state_dict(data["state_dict"])
    return net, data


def _check(path: str | os.PathLike, problem: str | None) -> None:
    """Raise the CheckpointError for ``problem`` (a predicate: "is empty"), if any."""
    if problem is not None:
        raise CheckpointError(f"checkpoint {str(path)!r} {problem}")


def _read_bytes(path: str | os.PathLike) -> bytes:
    """The file's bytes, read once: what is verified is what is loaded."""
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            _check(path, _directory_problem(path) if stat.S_ISDIR(mode)
                   else "is not a regular file")
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise CheckpointError(f"checkpoint {str(path)!r} cannot be read: "
                              f"{exc.strerror or exc}") from exc


def _directory_problem(path: str | os.PathLike) -> str:
    """Why a directory is no checkpoint, naming the checkpoints in it (a training run's
    folder holds its policy as a file)."""
    inside = sorted(os.path.join(path, name) for name in os.listdir(path)
                    if name.endswith(".pt"))
    return "is a directory, not a checkpoint file" + (
        f"; checkpoints in it: {', '.join(map(repr, inside))}" if inside else "")


def archive_problem(raw: bytes) -> str | None:
    """Why the bytes of a file are not an intact torch zip archive (a predicate: "is
    empty"), or None; each member is checked against its CRC-32, which torch does not."""
    if not raw:
        return "is empty"
    if not raw.startswith(_ZIP_MAGIC):
        if raw.startswith(_PICKLE_MAGIC):
            return ("is in torch's legacy (non-zip) format, which has no checksums to "
                    "detect corruption by; save it again with torch.save to use it")
        return "is corrupt or not a torch file (not a zip archive)"
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            damaged, names = archive.testzip(), set(archive.namelist())
    except Exception as exc:  # zipfile raises many types for a damaged archive
        return f"is corrupt (a damaged zip archive: {_brief(exc)})"
    if damaged is not None:
        return f"is corrupt: its member {damaged!r} fails its CRC-32"
    if {"data", "policy.pth"} <= names:  # what SB3's model.save writes
        return ("is a Stable-Baselines3 model (model.save), not a checkpoint of this "
                "project: load it with its class (MaskablePPO.load) inside an agent of "
                "yours, e.g. for `benchmark rate --agent module:Class`")
    return None


def _brief(exc: Exception) -> str:
    """One line for an error (torch's weights-only errors run to a page, the cause after
    a marker)."""
    text = str(exc)
    _, marker, cause = text.partition("WeightsUnpickler error:")
    lines = [line.strip() for line in (cause if marker else text).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fields_problem(data: Any) -> str | None:
    """What is wrong with the checkpoint dict's fields other than the network's, or None."""
    if not isinstance(data, dict):
        return (f"is not a {CHECKPOINT_FORMAT!r} checkpoint (it holds a "
                f"{type(data).__name__}, not a dict)")
    if not (isinstance(data.get("format"), str) and data["format"] == CHECKPOINT_FORMAT):
        return f"is not a {CHECKPOINT_FORMAT!r} checkpoint (format {data.get('format')!r})"
    if not (_is_int(data.get("version")) and data["version"] == CHECKPOINT_VERSION):
        return (f"has format version {data.get('version')!r}; this code reads version "
                f"{CHECKPOINT_VERSION}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        return f"lacks the keys {missing}"
    if not isinstance(data.get("metadata", {}), dict):
        return f"has metadata of type {type(data['metadata']).__name__}, not a dict"
    return _game_problem(data)


def _game_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with the game, the player count or the sizes (not that game's)."""
    game, players = data["game"], data["num_players"]
    if not (isinstance(game, str) and game in SPECS):
        return f"has game {game!r}; expected one of {sorted(SPECS)}"
    spec = SPECS[game]
    if not (_is_int(players) and players in spec.player_counts):
        return (f"has num_players {players!r}; the {game} game takes an integer in "
                f"{spec.min_players}..{spec.max_players}")
    sizes = {"observation_size": spec.observation_size(players),
             "num_actions": spec.num_actions}
    for key, size in sizes.items():
        if not (_is_int(data[key]) and data[key] == size):
            return f"has {key} {data[key]!r}; the {players}-player {game} game has {size}"
    return None


def _network_problem(config: Any) -> str | None:
    """What is wrong with the ``network`` field (:class:`PolicyNetwork`'s arguments)."""
    if not isinstance(config, dict):
        return f"has network {config!r}; expected a dict with keys from {_NETWORK_KEYS}"
    unknown = [k for k in config if k not in _NETWORK_KEYS]
    if unknown:
        return f"has unknown network keys {unknown}; expected keys from {_NETWORK_KEYS}"
    hidden = config.get("hidden", [])
    if not (isinstance(hidden, (list, tuple)) and all(_is_int(h) and h > 0 for h in hidden)):
        return f"has network hidden {hidden!r}; expected a list of positive integers"
    for key, choices in (("activation", sorted(_ACTIVATIONS)), ("features", FEATURE_SETS)):
        if key in config and not (isinstance(config[key], str) and config[key] in choices):
            return f"has network {key} {config[key]!r}; expected one of {list(choices)}"
    return None


def _weights_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with ``state_dict``: not exactly the network's tensors (names,
    shapes, dtype) or not finite."""
    state = data["state_dict"]
    if not isinstance(state, dict):
        return f"has a state_dict of type {type(state).__name__}, not a dict"
    try:
        with torch.device("meta"):  # shapes only: a huge hidden size allocates nothing
            wanted = PolicyNetwork(data["observation_size"], data["num_actions"],
                                   **data["network"]).state_dict()
    except ValueError as exc:
        return f"has a network config that does not fit its observations: {exc}"
    mismatch = "has a state_dict that does not match its config"
    if set(state) != set(wanted):
        return f"{mismatch}: keys {sorted(map(str, state))}, not {sorted(wanted)}"
    for key, want in wanted.items():
        got = state[key]
        if not (isinstance(got, torch.Tensor) and got.layout == torch.strided
                and got.dtype == want.dtype and got.shape == want.shape):
            return (f"{mismatch}: {key!r} is {_describe(got)}, not a {want.dtype} tensor "
                    f"of shape {tuple(want.shape)}")
        if not np.isfinite(got.detach().numpy()).all():  # numpy: no thread start-up
            return f"has weights that are not finite (inf or nan) in state_dict[{key!r}]"
    return None


def _describe(value: Any) -> str:
    if not isinstance(value, torch.Tensor):
        return f"a {type(value).__name__}"
    layout = "" if value.layout == torch.strided else f" {value.layout}"
    return f"a{layout} {value.dtype} tensor of shape {tuple(value.shape)}"
