"""Small untrained checkpoints for tests: any game and player count (only 2-player
networks ship, but ``train.py`` writes every count), written as ``train.py`` writes them."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from agents.policy import PolicyNetwork, save_checkpoint
from qwinto_env.spec import SPECS


def small_checkpoint(path, game: str = "dice", num_players: int = 2,
                     hidden: Sequence[int] = (32,), features: str = "raw", seed: int = 0,
                     metadata: dict[str, Any] | None = None) -> PolicyNetwork:
    """Write a network of ``hidden`` layers, initialised from torch seed ``seed``, as a
    checkpoint at ``path``; returns the network."""
    spec = SPECS[game]
    size = spec.observation_size(num_players)
    torch.manual_seed(seed)
    network = PolicyNetwork(size, spec.num_actions, hidden=hidden, features=features)
    save_checkpoint(path, network, game, num_players, size, spec.num_actions, metadata)
    return network
