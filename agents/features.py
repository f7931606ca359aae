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

The bits come from 30 18-bit masks (27 cells, 3 rows), so they also have a compact form:
:meth:`SheetFeatures.encode` keeps each mask as two 9-bit codes (60 numbers instead of
540 bits) and :meth:`SheetFeatures.expand` unpacks them. A trainer stores the compact
rows of a rollout (a quarter of the memory, which is what bounds a GPU run's batch) and
expands each minibatch when it needs it; on a CPU that unpacking costs about 0.5 ms more
per 2,048 rows than gathering full rows would. ``forward`` equals ``expand(encode(obs))``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from qwinto_env import rules

_MASKS = rules.NUM_CELLS + rules.NUM_ROWS
_HALF = rules.MAX_VALUE // 2  # the 18-bit value masks are coded in two halves
EXTRA_SIZE = {"raw": 0, "sheet": _MASKS * rules.MAX_VALUE}  # columns forward() appends
CODE_SIZE = {"raw": 0, "sheet": _MASKS * 2}                 # columns encode() appends


class RawFeatures(nn.Module):
    """The observation as it is (``features="raw"``); same interface as SheetFeatures."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return obs

    def expand(self, encoded: torch.Tensor) -> torch.Tensor:
        return encoded


class SheetFeatures(nn.Module):
    """``obs -> concat(obs, allowed-value bits of the own sheet, per-row fits)``.

    Works on 18-bit masks (bit ``v - 1`` = value ``v``) rather than on a (cell, value)
    grid, then unpacks them with a table lookup: broadcast comparisons over the grid
    were four times slower on CPU.
    """

    def __init__(self) -> None:
        super().__init__()
        # Each cell has at most two column peers; a missing one points at a padding cell.
        peers = torch.full((2, rules.NUM_CELLS), rules.NUM_CELLS, dtype=torch.long)
        for cell, others in enumerate(rules.CELL_PEERS):
            peers[:len(others), cell] = torch.tensor(others, dtype=torch.long)
        self.register_buffer("peers", peers, persistent=False)
        codes = torch.arange(2 ** _HALF)[:, None]
        self.register_buffer("unpack", ((codes >> torch.arange(_HALF)) & 1).float(),
                             persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.cat([obs, self._unpack(self._codes(obs), obs.dtype)], dim=1)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, obs + 60)``: the observation, then the masks' 9-bit codes as numbers
        (exact in any float type)."""
        return torch.cat([obs, self._codes(obs).to(obs.dtype)], dim=1)

    def expand(self, encoded: torch.Tensor) -> torch.Tensor:
        """What :meth:`forward` returns, from rows that :meth:`encode` made."""
        obs, codes = encoded[:, :-CODE_SIZE["sheet"]], encoded[:, -CODE_SIZE["sheet"]:]
        return torch.cat([obs, self._unpack(codes.long(), obs.dtype)], dim=1)

    def _unpack(self, codes: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return F.embedding(codes, self.unpack).flatten(1).to(dtype)

    def _codes(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, 60)`` int64: per cell then per row, the low and high 9 bits of its mask."""
        B, V = obs.shape[0], rules.MAX_VALUE
        cells = torch.round(obs[:, :rules.NUM_CELLS] * V).int()
        rows = cells.view(B, rules.NUM_ROWS, rules.NUM_FIELDS)
        # A value fits an empty cell when it lies strictly between the largest written
        # value to its left (lo) and the smallest written value to its right (hi).
        lo = F.pad(torch.cummax(rows, dim=2).values[:, :, :-1], (1, 0))
        above = rows.masked_fill(rows == 0, V + 1)
        right = torch.flip(torch.cummin(torch.flip(above, [2]), dim=2).values, [2])
        hi = F.pad(right[:, :, 1:], (0, 1), value=V + 1).masked_fill(rows > 0, 0)
        between = ((1 << hi) - (2 << lo)).clamp_min(0).view(B, rules.NUM_CELLS)  # bits lo+1..hi-1
        written = F.pad(1 << cells, (0, 1), value=1)  # an empty cell sets bit 0, never allowed
        allowed = (between & ~(written[:, self.peers[0]] | written[:, self.peers[1]])) >> 1
        per_row = allowed.view(B, rules.NUM_ROWS, rules.NUM_FIELDS)
        fits = per_row[:, :, 0]
        for field in range(1, rules.NUM_FIELDS):
            fits = fits | per_row[:, :, field]
        masks = torch.cat([allowed, fits], dim=1).long()
        return torch.stack([masks & (2 ** _HALF - 1), masks >> _HALF], dim=2).flatten(1)


FEATURES: dict[str, type[nn.Module]] = {"raw": RawFeatures, "sheet": SheetFeatures}
FEATURE_SETS = tuple(FEATURES)
