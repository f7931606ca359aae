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

import os
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from .base import Agent, IllegalMaskError
from .features import FEATURE_SETS, FEATURES
from .fileio import atomic_torch_save

__all__ = ["PolicyNetwork", "PolicyAgent", "save_checkpoint", "load_checkpoint",
           "CheckpointError", "CHECKPOINT_FORMAT", "CHECKPOINT_VERSION"]

CHECKPOINT_FORMAT = "qwinto-policy"
CHECKPOINT_VERSION = 1
_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


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
        self.deterministic = bool(deterministic)
        self._gen = torch.Generator().manual_seed(0)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            self._gen.manual_seed(int(seed) % (2 ** 63))

    @torch.no_grad()
    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
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


def load_checkpoint(path: str | os.PathLike) -> tuple[PolicyNetwork, dict[str, Any]]:
    """Read a checkpoint; the rebuilt network and the checkpoint dict.

    Raises :class:`CheckpointError` naming the file and what is wrong with it.
    """
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a truncated or foreign file
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or not a torch file: "
                              f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"checkpoint {str(path)!r} is not a {CHECKPOINT_FORMAT!r} "
                              f"checkpoint (no format key)")
    if data.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(f"checkpoint {str(path)!r} has format version "
                              f"{data.get('version')!r}; this code reads version "
                              f"{CHECKPOINT_VERSION}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise CheckpointError(f"checkpoint {str(path)!r} lacks the keys {missing}")
    try:
        net = PolicyNetwork(int(data["observation_size"]), int(data["num_actions"]),
                            **data["network"])
        net.load_state_dict(data["state_dict"])
    except Exception as exc:
        raise CheckpointError(f"checkpoint {str(path)!r} has a network that does not "
                              f"match its config: {exc}") from exc
    return net, data
