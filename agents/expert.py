"""The ``expert`` bot: a sheet evaluation plus exact one-roll lookahead (dice and cards).

How it decides
--------------
It values a sheet by an estimate of its **final score**::

    E = sum over rows     [ written + phi * F_row + w_full * phi**empty_row * Q_row * (R_row - 9) ]
      + sum over 3-field columns  w_pent * P_col * pentagon_value
      - 5 * misthrows

* A row's empty fields form *segments* (runs of empty fields between written numbers,
  or the row's ends). A segment of ``k`` fields between numbers ``lo`` and ``hi`` can
  still take the values ``lo+1 .. hi-1``; its *capacity* ``W`` is the sum, over those
  values, of how easily they can be rolled (the best probability over 1, 2 or 3 dice:
  17 and 18 are rare, 7 is common). Each of its fields is filled with probability
  ``p = min(1, (hi-lo-1)/k) * (1 - exp(-W / (k * tau)))`` and the whole segment with
  ``q = p**k`` (0 when fewer values than fields remain). ``F_row`` sums ``p`` over
  the empty fields, ``Q_row`` multiplies ``q`` over the segments.
* A complete row scores its rightmost number instead of 9 counted numbers, so the
  row adds ``Q_row * (R_row - 9)``, with ``R_row`` the rightmost number or, while it
  is empty, an estimate (``lo + k + top_share * (18 - lo - k)``).
* A 3-field column adds its pentagon number (written, or the value interpolated in
  its segment) times the probability that its empty fields all fill.
* ``phi`` (the horizon) scales every future fill by how many rolls the game probably
  has left: ``L = rolls_per_entry * min over players of the fields they still need
  for two complete rows``, and ``phi = min(1, (L + horizon_slack) / F)``, with ``F``
  this player's expected future fills. Near the end, sure points beat flexibility.

Every write is scored by how much it changes ``E`` (only the written row and the
pentagon columns change; row models are cached by row content, so a turn costs one
row recomputation). A write that ends the game (a second complete row) and a
misthrow that does (the fourth) are scored by the exact final score instead.

* **Entry**: the best legal write if it beats passing (0 for a bystander, the
  misthrow's value for the active player).
* **Dice choice**: for each of the 7 subsets, the exact expected value over its sum
  distribution of ``max(best write, misthrow)``, with the re-roll option folded in
  (``E[max(v, E[v])]``); the best subset is rolled.
* **Re-roll**: when the expected value of a fresh roll beats the roll in hand by
  ``reroll_margin``.
* **Card play** (card game): every legal single and double play announces a known
  value and colours (hand and stack tops are visible), so each is scored exactly by
  its best write (or the misthrow); the best is played. The sheet evaluation is the
  same, with the card sums' distribution as the attainability of values.

Every tunable number is a field of :class:`ExpertParams`.

:meth:`ExpertAgent.act_batch` decides a whole batch at once: a numpy batch in compiled
code (:mod:`agents.expert_numba`, numba), a torch batch on any device in array code
(:mod:`agents.expert_batched`, no host syncs); both are held equal to
:meth:`ExpertAgent.act` by a differential test (``tests/test_batched_expert.py``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from qwinto_env import rules
from qwinto_env.spec import cards
from qwinto_env.spec.dice import (CHOOSE, KEEP, PASS, REROLL, REROLL_DECISION, ROLL_OFFSET,
                                   SUBSET_ROWS)
from qwinto_env.view import BatchView, CardsView, DiceView

from . import expert_batched, expert_numba
from .base import AgentSpecError, DecodingAgent, check_number
from .chance_tables import ATTAINABILITY, SUBSET_DISTRIBUTIONS

__all__ = ["ExpertAgent", "ExpertParams"]

NF, NR, TOP = rules.NUM_FIELDS, rules.NUM_ROWS, rules.MAX_VALUE
_NEG = -1e9
_PENTAGON_COLUMNS = rules.PENTAGON_COLUMNS
_CELL_PCOL = rules.CELL_PENTAGON_COLUMN


@dataclass(frozen=True)
class ExpertParams:
    """Every tunable number of the expert, with the value it plays with by default."""

    #: Capacity per field at which a segment's fill probability reaches 1 - 1/e.
    tau: float = 0.14
    #: Share of the room above a last segment that the rightmost number is expected to use.
    top_share: float = 0.6
    #: Weight of the complete-row bonus (rightmost number instead of 9).
    w_full: float = 1.0
    #: Weight of the pentagon-column term.
    w_pent: float = 0.8
    #: Rolls the game needs per field a player still lacks for two complete rows.
    rolls_per_entry: float = 1.6
    #: Rolls added to the horizon estimate before it caps future fills.
    horizon_slack: float = 0.0
    #: Extra cost of a misthrow beyond its 5 points (the risk of the fourth one).
    misthrow_extra: float = 5.0
    #: A re-roll is taken when it is expected to gain more than this.
    reroll_margin: float = 0.0
    #: A bystander writes only when the write gains more than this.
    pass_margin: float = 0.0

    def __post_init__(self) -> None:
        """AgentSpecError naming a parameter that is no finite number in its range."""
        ranges = {"tau": (0.0, math.inf, True), "top_share": (0.0, 1.0, False),
                  "rolls_per_entry": (0.0, math.inf, True)}
        for f in fields(self):
            low, high, strict = ranges.get(f.name, (-math.inf, math.inf, False))
            check_number(f"expert parameter {f.name}", getattr(self, f.name), low, high, strict)


@dataclass
class _RowModel:
    """Evaluation of one row (9 values) and of every single write into it."""

    F: float                      # expected future fills
    Q: float                      # probability the row completes
    R: float                      # rightmost number (written or estimated)
    empty: int
    written: int
    p: list[float]                # per field: fill probability (1 when written)
    est: list[float]              # per field: value (written or interpolated)
    writes: dict[int, tuple[list[float], list[float], list[float]]]  # f -> newF, newQ, newR by v


class SegmentTables:
    """Segment fill and completion probabilities for one parameter set."""

    def __init__(self, params: ExpertParams, attainability: np.ndarray):
        cum = np.concatenate([[0.0], np.cumsum(attainability[1:])])  # cum[x] = sum a(1..x)
        self.params = params
        size = TOP + 2
        self.p = [[[0.0] * size for _ in range(size)] for _ in range(NF + 1)]
        self.q = [[[0.0] * size for _ in range(size)] for _ in range(NF + 1)]
        for lo in range(size):
            for hi in range(lo + 1, size):
                n_avail = hi - lo - 1
                width = float(cum[min(hi - 1, TOP)] - cum[lo]) if n_avail else 0.0
                self.q[0][lo][hi] = 1.0
                for k in range(1, NF + 1):
                    if n_avail == 0:
                        continue
                    p = min(1.0, n_avail / k) * (1.0 - math.exp(-width / (k * params.tau)))
                    self.p[k][lo][hi] = p
                    self.q[k][lo][hi] = p ** k if n_avail >= k else 0.0

    def rightmost(self, k: int, lo: int) -> float:
        """Expected rightmost number of a row whose last ``k`` fields follow ``lo``."""
        base = lo + k
        return base + self.params.top_share * max(0, TOP - base)

    def row(self, row: tuple[int, ...]) -> _RowModel:
        """Model of ``row`` and of each write into it (legality per segment bounds)."""
        segs = []  # (start, end, lo, hi)
        f, lo = 0, 0
        while f < NF:
            if row[f]:
                lo = row[f]
                f += 1
                continue
            start = f
            while f < NF and not row[f]:
                f += 1
            hi = row[f] if f < NF else TOP + 1
            segs.append((start, f - 1, lo, hi))
        P, Qt = self.p, self.q
        p_field = [1.0] * NF
        est = [float(v) for v in row]
        seg_q = []
        F = 0.0
        for start, end, lo, hi in segs:
            k = end - start + 1
            ps = P[k][lo][hi]
            F += k * ps
            seg_q.append(Qt[k][lo][hi])
            for pos in range(k):
                p_field[start + pos] = ps
                est[start + pos] = lo + (pos + 1) * (min(hi, TOP + 0.5) - lo) / (k + 1)
        Q = math.prod(seg_q)
        if row[-1]:
            R = float(row[-1])
        else:
            start, end, lo, _ = segs[-1]
            R = self.rightmost(end - start + 1, lo)
        writes = {}
        for i, (start, end, lo, hi) in enumerate(segs):
            k = end - start + 1
            q_other = math.prod(seg_q[:i] + seg_q[i + 1:])
            F_other = F - k * P[k][lo][hi]
            last = hi == TOP + 1
            for pos in range(k):
                left, right = pos, k - pos - 1
                newF = [0.0] * (TOP + 1)
                newQ = [0.0] * (TOP + 1)
                newR = [R] * (TOP + 1)
                # A value that leaves too little room around it gets q = 0 from the tables.
                for v in range(lo + 1, hi):
                    newF[v] = F_other + left * P[left][lo][v] + right * P[right][v][hi]
                    newQ[v] = q_other * Qt[left][lo][v] * Qt[right][v][hi]
                    if last:
                        newR[v] = float(v) if right == 0 else self.rightmost(right, v)
                writes[start + pos] = (newF, newQ, newR)
        return _RowModel(F, Q, R, sum(1 for v in row if not v), sum(1 for v in row if v),
                         p_field, est, writes)


class ExpertAgent(DecodingAgent):
    """The strongest hand-written dice-game player here; see the module docstring."""

    name = "expert"
    supports_batch = True
    accepts_tensors = True

    def __init__(self, game: str = "dice", num_players: int = 2,
                 params: ExpertParams | None = None, **overrides: float):
        super().__init__(game, num_players)
        if game not in ATTAINABILITY:
            raise ValueError(f"unknown game {game!r}; the expert plays {sorted(ATTAINABILITY)}")
        params = params or ExpertParams()
        if overrides:
            known = {f.name for f in fields(ExpertParams)}
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise AgentSpecError(f"unknown expert parameter(s) {unknown}; known: "
                                     f"{sorted(known)}")
            params = ExpertParams(**{**params.__dict__, **overrides})
        self.params = params
        self._tables = SegmentTables(params, ATTAINABILITY[game])
        self._start_caches()

    def _start_caches(self) -> None:
        # Row models repeat within a game (one row changes per turn) and across games'
        # openings; a few thousand cover that, at a few kB each.
        self._row = functools.lru_cache(maxsize=4096)(self._tables.row)
        self._cache_key: bytes | None = None
        self._cache: tuple | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The caches, which pickle cannot take (an lru_cache of a bound method), are
        # rebuilt empty: an expert travels to worker processes (SubprocVecEnv, Ray).
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_row", "_cache_key", "_cache")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start_caches()

    def decide_batch(self, view: BatchView, legal: Any) -> Any:
        """The choices of :meth:`act` for a whole batch: numpy arrays by the compiled kernel
        (:func:`agents.expert_numba.decide`), torch tensors on any device by the array code
        (:func:`agents.expert_batched.decide`, without host syncs)."""
        if view.backend.name == "numpy":
            return expert_numba.decide(self._tables, self.game, view, legal)
        return expert_batched.decide(self._tables, self.game, view, legal)

    # -- evaluation ------------------------------------------------------------
    def _horizon(self, view, rows) -> float:
        """The share of the own rows' expected fills (``rows``: the own row models) that
        the game leaves time for: 1 unless the fastest player is near two complete rows."""
        need = math.inf  # fields the fastest player still needs for two complete rows
        for seat in range(view.num_players):
            sc = view.cells[seat]
            models = rows if seat == 0 else [
                self._row(tuple(int(x) for x in sc[r * NF:(r + 1) * NF])) for r in range(NR)]
            empties = sorted(m.empty for m in models if m.Q > 0.0)
            if len(empties) >= 2:
                need = min(need, empties[0] + empties[1])
        F_total = sum(m.F for m in rows)
        if math.isinf(need) or F_total <= 0.0:
            return 1.0
        return min(1.0, (self.params.rolls_per_entry * need + self.params.horizon_slack) / F_total)

    def _analyse(self, view):
        """Per-turn analysis of the own sheet: models, horizon, and the write table."""
        # The sheets and misthrows (everything but the roll or play) key the analysis.
        key = view.cells.tobytes() + view.misthrows.tobytes()
        if key == self._cache_key:
            return self._cache
        prm = self.params
        cells = [int(c) for c in view.cells[0]]
        rows = [self._row(tuple(cells[r * NF:(r + 1) * NF])) for r in range(NR)]
        phi = self._horizon(view, rows)
        phi_pow = [phi ** m.empty for m in rows]
        # Pentagon columns: probability of completion and the pentagon's value.
        p_eff = [0.0] * rules.NUM_CELLS
        for r, m in enumerate(rows):
            for f in range(NF):
                p_eff[r * NF + f] = 1.0 if cells[r * NF + f] else m.p[f] * phi
        col_val = [rows[pc // NF].est[pc % NF] for _, pc in _PENTAGON_COLUMNS]
        col_P = [math.prod(p_eff[c] for c in col) for col, _ in _PENTAGON_COLUMNS]
        misthrows = int(view.misthrows[0])
        row_terms = [m.written + phi * m.F + prm.w_full * phi_pow[r] * m.Q * (m.R - NF)
                     for r, m in enumerate(rows)]
        E = sum(row_terms) + prm.w_pent * sum(P * v for P, v in zip(col_P, col_val)) \
            - rules.MISTHROW_PENALTY * misthrows
        full = sum(1 for m in rows if m.empty == 0)
        if misthrows + 1 >= rules.MAX_MISTHROWS:
            misthrow_value = rules.cells_score(cells, misthrows + 1) - E
        else:
            misthrow_value = -rules.MISTHROW_PENALTY - prm.misthrow_extra
        allowed = rules.cells_allowed_values(cells)
        table = np.full((rules.NUM_CELLS, TOP + 1), _NEG)
        for r, m in enumerate(rows):
            base_row = row_terms[r]
            ends_game = m.empty == 1 and full >= 1
            for f, (newF, newQ, newR) in m.writes.items():
                c = r * NF + f
                bits = allowed[c]
                if not bits:
                    continue
                j = _CELL_PCOL[c]
                if j >= 0:
                    col, pc = _PENTAGON_COLUMNS[j]
                    P_others = math.prod(p_eff[x] for x in col if x != c)
                    col_before = col_P[j] * col_val[j]
                out = table[c]
                after_pow = phi_pow[r] / phi if phi > 0 else 0.0
                for v in range(1, TOP + 1):
                    if not bits >> v & 1:
                        continue
                    if ends_game:
                        cells[c] = v
                        out[v] = rules.cells_score(cells, misthrows) - E
                        cells[c] = 0
                        continue
                    d = (m.written + 1 + phi * newF[v]
                         + prm.w_full * after_pow * newQ[v] * (newR[v] - NF) - base_row)
                    if j >= 0:
                        d += prm.w_pent * (P_others * (v if c == pc else col_val[j]) - col_before)
                    out[v] = d
        row_best = table.reshape(NR, NF, TOP + 1).max(axis=1)
        self._cache_key = key
        self._cache = (table, row_best, misthrow_value)
        return self._cache

    def _subset_values(self, row_best: np.ndarray, misthrow_value: float,
                       subset: int) -> np.ndarray:
        """Value of each rolled sum for ``subset``: the best write or the misthrow."""
        best = row_best[list(SUBSET_ROWS[subset])].max(axis=0)
        return np.maximum(best, misthrow_value)

    # -- acting ----------------------------------------------------------------
    def act_cards(self, view: CardsView, legal: np.ndarray) -> int:
        table, row_best, misthrow_value = self._analyse(view)
        if view.phase == cards.PLAY:
            return self._card_play(view, legal, row_best, misthrow_value)
        return self._entry(view, legal, table, misthrow_value)

    def act_dice(self, view: DiceView, legal: np.ndarray) -> int:
        table, row_best, misthrow_value = self._analyse(view)
        if view.phase == CHOOSE:
            best_a, best_ev = int(legal[0]), -math.inf
            for a in legal:
                subset = int(a) - ROLL_OFFSET
                vals = self._subset_values(row_best, misthrow_value, subset)
                dist = SUBSET_DISTRIBUTIONS[subset]
                ev1 = float(dist @ vals)
                ev = float(dist @ np.maximum(vals, ev1 + self.params.reroll_margin))
                if ev > best_ev:
                    best_a, best_ev = int(a), ev
            return best_a
        if view.phase == REROLL_DECISION:
            vals = self._subset_values(row_best, misthrow_value, view.subset)
            ev1 = float(SUBSET_DISTRIBUTIONS[view.subset] @ vals)
            if REROLL in legal and ev1 > vals[view.value] + self.params.reroll_margin:
                return REROLL
            return KEEP
        return self._entry(view, legal, table, misthrow_value)

    def _entry(self, view, legal: np.ndarray, table: np.ndarray, misthrow_value: float) -> int:
        """The best write of the announced value, or pass when passing is worth more."""
        v = view.value
        best_c, best_d = PASS, (misthrow_value if view.active == 0 else self.params.pass_margin)
        for a in legal:
            a = int(a)
            if a < PASS and table[a, v] > best_d:
                best_c, best_d = a, table[a, v]
        return best_c

    @staticmethod
    def _card_play(view, legal: np.ndarray, row_best: np.ndarray,
                   misthrow_value: float) -> int:
        """The play whose announced value and colours allow the best write (exact: the
        hand and the stack tops are known)."""
        best_a, best_val = int(legal[0]), -math.inf
        for a in legal:
            value, colours = cards.play_result(view.hand, view.tops, int(a))
            val = misthrow_value
            if 1 <= value <= TOP:
                for r in cards.COLOUR_ROWS[colours]:
                    val = max(val, float(row_best[r, value]))
            if val > best_val:
                best_a, best_val = int(a), val
        return best_a
