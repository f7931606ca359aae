"""Derived input features for neural policies, computed in torch from the observation.

Both games' observations start with the observer's own sheet (27 cells, value / 18,
0 = empty). :class:`SheetFeatures` decodes it and appends what the writing rules make
of it, so a network does not have to learn the rules from raw numbers:

=====  ==================================================================================
size   content (appended after the observation)
=====  ==================================================================================
486    per own cell ``r*9+f`` and value ``v`` = 1..18: 1 when ``v`` may be written there
       (empty cell, row still strictly increasing, ``v`` not yet in the grid column),
       the same bits as :func:`qwinto_env.rules.cells_allowed_values`
54     per row and value: 1 when ``v`` fits somewhere in that row (what a roll of ``v``
       in that colour would allow; drives dice choice and misthrow risk)
=====  ==================================================================================

Runs batched on any device, no Python loop per game.
"""

from __future__ import annotations

import torch
from torch import nn

from qwinto_env import rules

FEATURE_SETS = ("raw", "sheet")
EXTRA_SIZE = {"raw": 0, "sheet": rules.NUM_CELLS * rules.MAX_VALUE + rules.NUM_ROWS * rules.MAX_VALUE}


class SheetFeatures(nn.Module):
    """``obs -> concat(obs, allowed-value bits of the own sheet, per-row fits)``."""

    def __init__(self) -> None:
        super().__init__()
        peers = torch.full((rules.NUM_CELLS, 2), rules.NUM_CELLS, dtype=torch.long)
        for cell, others in enumerate(rules.CELL_PEERS):
            peers[cell, :len(others)] = torch.tensor(others, dtype=torch.long)
        self.register_buffer("peers", peers, persistent=False)  # cell 27 = a dummy 0
        self.register_buffer("values", torch.arange(1, rules.MAX_VALUE + 1), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        B = obs.shape[0]
        cells = torch.round(obs[:, :rules.NUM_CELLS] * rules.MAX_VALUE).long()
        rows = cells.view(B, rules.NUM_ROWS, rules.NUM_FIELDS)
        left = torch.cummax(rows, dim=2).values  # largest written value up to each field
        lo = torch.cat([torch.zeros_like(left[:, :, :1]), left[:, :, :-1]], dim=2)
        above = torch.where(rows > 0, rows, torch.full_like(rows, rules.MAX_VALUE + 1))
        right = torch.flip(torch.cummin(torch.flip(above, [2]), dim=2).values, [2])
        hi = torch.cat([right[:, :, 1:], torch.full_like(right[:, :, :1], rules.MAX_VALUE + 1)],
                       dim=2)
        v = self.values
        allowed = (lo[..., None] < v) & (v < hi[..., None]) & (rows == 0)[..., None]
        allowed = allowed.view(B, rules.NUM_CELLS, rules.MAX_VALUE)
        padded = torch.cat([cells, torch.zeros_like(cells[:, :1])], dim=1)
        clash = (padded[:, self.peers][..., None] == v).any(dim=2)
        allowed = allowed & ~clash
        row_fits = allowed.view(B, rules.NUM_ROWS, rules.NUM_FIELDS, rules.MAX_VALUE).any(dim=2)
        return torch.cat([obs, allowed.flatten(1).to(obs.dtype), row_fits.flatten(1).to(obs.dtype)],
                         dim=1)
