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

:class:`PlayFeatures` (``features="cards"``, card game only) adds what each play of the
card game would announce, the information the ``expert`` chooses its play by: per play
action ``28..87`` (60 actions, in action order), its value and which announced rows it
would let me, or another seat, write in (computed from the own hand and the stack tops
of the observation, as :func:`qwinto_env.spec.cards.play_result` does):

=====  ==================================================================================
size   content (appended after the sheet features)
=====  ==================================================================================
180    per play action and row: 1 when the play announces that row's colour and a value
       1..18 that fits somewhere in my row
180    the same for any other seat's row (what the play gives away)
60     per play action: the announced value / 18
=====  ==================================================================================

All 420 are 0 outside the play phase and for plays the hand does not allow (an empty
slot, a double play of two different values); they describe my hand's plays whether or
not I am the active player.

Runs batched on any device, no Python loop per game.

The bits come from 30 18-bit masks (27 cells, 3 rows), so they also have a compact form:
:meth:`SheetFeatures.encode` keeps each mask as two 9-bit codes (60 numbers instead of
540 bits) and :meth:`SheetFeatures.expand` unpacks them. A trainer stores the compact
rows of a rollout (a quarter of the memory, which is what bounds a GPU run's batch) and
expands each minibatch when it needs it (its cost: ``docs/agents.md``, Measurements).
``forward`` equals ``expand(encode(obs))``.
:class:`PlayFeatures` codes each play's 6 row bits as one number and keeps its value.

A feature set that extends another (a subclass: raw < sheet < cards) appends its
columns after the other's, so a network trained on the smaller set can grow into the
larger one (``run.init_from``). Every feature set is built from the observation size
(``FEATURES[name](observation_size)``) and tells how many columns it appends
(``extra_size``) and encodes (``code_size``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from qwinto_env import rules
from qwinto_env.spec import cards
from qwinto_env.spec.base import SHEET

_MASKS = rules.NUM_CELLS + rules.NUM_ROWS
_HALF = rules.MAX_VALUE // 2  # the 18-bit value masks are coded in two halves
_SHEET_CODES = _MASKS * 2


def _bit_table(bits: int) -> torch.Tensor:
    """``(2**bits, bits)`` float: row ``c`` holds the bits of the code ``c``, low bit first
    (``F.embedding(codes, table)`` unpacks codes)."""
    codes = torch.arange(2 ** bits)[:, None]
    return ((codes >> torch.arange(bits)) & 1).float()


class RawFeatures(nn.Module):
    """The observation as it is (``features="raw"``); same interface as SheetFeatures."""

    extra_size = 0  # columns forward() appends
    code_size = 0   # columns encode() appends

    def __init__(self, observation_size: int = 0) -> None:
        super().__init__()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return obs

    def expand(self, encoded: torch.Tensor) -> torch.Tensor:
        return encoded


class SheetFeatures(RawFeatures):
    """``obs -> concat(obs, allowed-value bits of the own sheet, per-row fits)``.

    Works on 18-bit masks (bit ``v - 1`` = value ``v``) rather than on a (cell, value)
    grid, then unpacks them with a table lookup (faster on CPU: ``docs/agents.md``,
    Measurements). The allowed-value rule is written here a third time, in torch, beside
    :func:`qwinto_env.rules.cells_allowed_values` and the batched engines' tables;
    ``tests/test_features.py`` holds them equal.
    """

    extra_size = _MASKS * rules.MAX_VALUE
    code_size = _SHEET_CODES

    def __init__(self, observation_size: int = 0) -> None:
        super().__init__()
        # Each cell has at most two column peers; a missing one points at a padding cell.
        peers = torch.tensor(rules.CELL_PEER_ARRAY.T.tolist(), dtype=torch.long)
        self.register_buffer("peers", peers, persistent=False)
        self.register_buffer("unpack", _bit_table(_HALF), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.cat([obs, self._unpack(self._codes(obs), obs.dtype)], dim=1)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, obs + 60)``: the observation, then the masks' 9-bit codes as numbers
        (exact in any float type)."""
        return torch.cat([obs, self._codes(obs).to(obs.dtype)], dim=1)

    def expand(self, encoded: torch.Tensor) -> torch.Tensor:
        """What :meth:`forward` returns, from rows that :meth:`encode` made."""
        obs, codes = encoded[:, :-_SHEET_CODES], encoded[:, -_SHEET_CODES:]
        return torch.cat([obs, self._unpack(codes.long(), obs.dtype)], dim=1)

    def _unpack(self, codes: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return F.embedding(codes, self.unpack).flatten(1).to(dtype)

    def _codes(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, 60)`` int64: per cell then per row, the low and high 9 bits of its mask."""
        return self._halves(self._masks(obs[:, SHEET.cells]))  # the observer's block is first

    @staticmethod
    def _halves(masks: torch.Tensor) -> torch.Tensor:
        return torch.stack([masks & (2 ** _HALF - 1), masks >> _HALF], dim=2).flatten(1)

    def _masks(self, sheet: torch.Tensor) -> torch.Tensor:
        """``(B, 30)`` int64 18-bit masks of the values each cell, then each row, of the
        sheet ``(B, 27)`` (value / 18 per cell) allows."""
        B, V = sheet.shape[0], rules.MAX_VALUE
        cells = torch.round(sheet * V).int()
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
        return torch.cat([allowed, fits], dim=1).long()


_PLAYS = len(cards.PLAYS)   # 60 play actions, 28..87
_PLAY_BITS = 2 * rules.NUM_ROWS  # per play: my rows, then the other seats' rows


class PlayFeatures(SheetFeatures):
    """``features="cards"``: the sheet features plus what each card play would announce.

    The observation must be a card game's (size ``33 * players + 149``); its layout
    (:mod:`qwinto_env.spec.cards`) locates the sheets, the own hand, the phase and the tops.
    """

    extra_size = SheetFeatures.extra_size + _PLAYS * (_PLAY_BITS + 1)
    code_size = SheetFeatures.code_size + 2 * _PLAYS

    def __init__(self, observation_size: int) -> None:
        super().__init__()
        players = cards.SPEC.players_for_size(observation_size)
        if players is None:
            raise ValueError(f"features 'cards' need a card-game observation "
                             f"(33 * players + 149 long), got size {observation_size}")
        self.players = players
        self.layout = cards.observation_layout(players)
        seats = self.layout.seats
        #: Each seat's sheet cells, mine first.
        self.sheet_cells = [SHEET.at(start).cells
                       for start in range(seats.start, seats.stop, cards.SEAT.size)]
        # Each play counts three cards of the seven I see: hand slots 0-2, then tops 0-3.
        double = [len(slots) == 2 for _, (slots, _) in sorted(cards.PLAYS.items())]
        self.register_buffer("counted", torch.as_tensor(cards.PLAY_COUNTED), persistent=False)
        self.register_buffer("is_double", torch.tensor(double), persistent=False)
        self.register_buffer("card_values", torch.tensor(cards.CARD_VALUES, dtype=torch.float32),
                             persistent=False)
        self.register_buffer("unpack_play", _bit_table(_PLAY_BITS), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.expand(self.encode(obs))

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """The sheet features' compact rows, then per play its 6 row bits as one number
        and its value / 18."""
        masks = [self._masks(obs[:, cells]) for cells in self.sheet_cells]  # mine first
        bits, values = self._plays(obs, [m[:, rules.NUM_CELLS:] for m in masks])
        code = (bits.long() << torch.arange(_PLAY_BITS, device=obs.device)).sum(dim=2)
        return torch.cat([obs, self._halves(masks[0]).to(obs.dtype), code.to(obs.dtype), values],
                         dim=1)

    def expand(self, encoded: torch.Tensor) -> torch.Tensor:
        sheet, code, values = (encoded[:, :-2 * _PLAYS], encoded[:, -2 * _PLAYS:-_PLAYS],
                               encoded[:, -_PLAYS:])
        bits = F.embedding(code.long(), self.unpack_play).flatten(1).to(encoded.dtype)
        return torch.cat([super().expand(sheet), bits, values], dim=1)

    def _plays(self, obs: torch.Tensor,
               row_masks: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, 60, 6)`` bool row bits (mine, then anyone else's) and ``(B, 60)`` values
        / 18 of every play, given each seat's ``(B, 3)`` row masks; zero outside the play
        phase and for impossible plays."""
        B, layout, card = obs.shape[0], self.layout, cards.CARD
        seen = torch.cat([obs[:, layout.hand], obs[:, layout.common.tops]], dim=1)
        seen = seen.view(B, cards.HAND_SIZE + cards.NUM_STACKS, card.size)
        present = seen[:, :, card.colour].sum(dim=2) > 0.5  # an empty hand slot is 0
        value = seen[:, :, card.value] @ self.card_values   # (B, 7)
        # The colours orange, yellow, purple are rows 0-2; grey is no row.
        colour = seen[:, :, card.colour.start:card.colour.start + rules.NUM_ROWS] > 0.5
        v = value[:, self.counted]                                  # (B, 60, 3)
        total = v.sum(dim=2).round().long()
        possible = present[:, self.counted].all(dim=2) \
            & (~self.is_double | (v[:, :, 0] == v[:, :, 1]))
        possible &= (obs[:, layout.common.phase.start + cards.PLAY] > 0.5)[:, None]
        rows = colour[:, self.counted].any(dim=2) & possible[:, :, None]  # (B, 60, 3)
        writable = (total >= 1) & (total <= rules.MAX_VALUE)
        bit = (total - 1).clamp(0, rules.MAX_VALUE - 1)
        fits = [(m[:, None, :] >> bit[:, :, None]) & 1 > 0 for m in row_masks]  # (B, 60, 3) each
        mine = fits[0] & rows & writable[:, :, None]
        others = torch.zeros_like(mine)
        for seat_fits in fits[1:]:
            others |= seat_fits
        others &= rows & writable[:, :, None]
        values = torch.where(possible, total.to(obs.dtype) / rules.MAX_VALUE, 0.0)
        return torch.cat([mine, others], dim=2), values.to(obs.dtype)


FEATURES: dict[str, type[nn.Module]] = {"raw": RawFeatures, "sheet": SheetFeatures,
                                        "cards": PlayFeatures}
FEATURE_SETS = tuple(FEATURES)
