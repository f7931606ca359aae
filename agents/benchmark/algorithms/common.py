"""What the baseline modules share: a trained torch module played as an :class:`Agent`."""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ...base import Agent, legal_rows

__all__ = ["ModuleAgent"]


class ModuleAgent(Agent):
    """Plays the legal action with the highest score of ``scores(observations)`` (logits
    or Q-values, ``(B, A)``; the observations ``(B, obs)`` float32 tensors): deterministic,
    a whole batch per call. ``scores`` runs under ``torch.no_grad``."""

    supports_batch = True

    def __init__(self, scores: Callable[[torch.Tensor], torch.Tensor], game: str = "dice",
                 num_players: int = 2, name: str = "module"):
        super().__init__(game, num_players)
        self.scores = scores
        self.name = name

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        legal = torch.as_tensor(legal_rows(masks))
        with torch.no_grad():
            values = self.scores(torch.as_tensor(np.asarray(observations), dtype=torch.float32))
        return values.masked_fill(~legal, -torch.inf).argmax(1).numpy().astype(np.int64)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.act_batch(observation[None], action_mask[None])[0])
