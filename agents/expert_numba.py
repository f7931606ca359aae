"""The ``expert`` bot's decisions for a numpy batch, compiled with numba.

This is the scalar :meth:`ExpertAgent.act <agents.expert.ExpertAgent.act>` (whose module
docstring explains the evaluation) compiled for a batch: each batch row runs the scalar
code's steps in its order (segments, row models, horizon over every seat, pentagon
columns, misthrow value, the writes, then the decision of the row's phase), with the
same float operations in the same order, so the numbers are the scalar ones. Only the
expected values of a roll (the scalar ``dist @ vals``) sum left to right over the sums
the dice can roll, where numpy's dot product may sum in another order, and a re-roll's
gain is summed as differences from the roll in hand (as the array code does):
``tests/test_batched_expert.py`` holds the decisions equal to ``act`` up to ties within
1e-9.

What it skips, not what it computes: a row with fewer than two legal actions decides
nothing (the caller plays its forced action), and an entry scores only the announced
value's writes (the scalar's table at that value).

The functions compile on first use and are cached on disk (``cache=True``); torch
batches go to the array code (:mod:`agents.expert_batched`) instead.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import njit

from qwinto_env import rules
from qwinto_env.spec import cards, dice
from qwinto_env.spec.base import PASS
from qwinto_env.view import BatchView

from .chance_tables import SUBSET_DISTRIBUTIONS

#: ``tables`` below is an agent's :class:`agents.expert.SegmentTables` (its parameters and
#: segment probabilities); it is not imported, as :mod:`agents.expert` imports this module.
SegmentTables = Any

__all__ = ["decide"]

NF, NR, NC, TOP = rules.NUM_FIELDS, rules.NUM_ROWS, rules.NUM_CELLS, rules.MAX_VALUE
SLOTS = TOP + 1
#: At most this many segments in a row (empty runs between written numbers).
MAX_SEGS = (NF + 1) // 2
#: :class:`agents.expert.ExpertParams` fields the decisions read, in the order of ``prm``.
PARAMS = ("top_share", "w_full", "w_pent", "rolls_per_entry", "horizon_slack",
          "misthrow_extra", "reroll_margin", "pass_margin")
TOP_SHARE, W_FULL, W_PENT, ROLLS_PER_ENTRY, SLACK, MISTHROW_EXTRA, REROLL_MARGIN, \
    PASS_MARGIN = range(len(PARAMS))

# Game facts as arrays (numba freezes global arrays into the compiled code).
_COL_CELLS = np.array([col for col, _ in rules.PENTAGON_COLUMNS], dtype=np.int64)
_PENT_CELLS = np.array([pent for _, pent in rules.PENTAGON_COLUMNS], dtype=np.int64)
_CELL_PCOL = np.array(rules.CELL_PENTAGON_COLUMN, dtype=np.int64)
_PEERS = rules.CELL_PEER_ARRAY.copy()  # NC: no peer
_DIST = np.array(SUBSET_DISTRIBUTIONS, dtype=np.float64)
#: The sums each dice subset can roll (first, last): the rest add 0 to an expected value.
_SUPPORT = np.array([(np.flatnonzero(d)[0], np.flatnonzero(d)[-1]) if d.any() else (0, -1)
                     for d in _DIST], dtype=np.int64)
_PLAY_COUNTED = np.array(cards.PLAY_COUNTED, dtype=np.int64)
_CARD_VALUE = np.array(cards.CARD_VALUE, dtype=np.int64)
_CARD_BITS = np.array(cards.CARD_COLOUR_BIT, dtype=np.int64)
_ALL_VALUES = rules.ALL_VALUES_BITS
_PENALTY, _MAX_MISTHROWS = rules.MISTHROW_PENALTY, rules.MAX_MISTHROWS
_HAND = cards.HAND_SIZE
_DICE_CHOOSE, _DICE_ENTRY, _CARDS_ENTRY = dice.CHOOSE, dice.ENTRY, cards.ENTRY
_ROLL_FIRST, _KEEP, _REROLL = dice.ROLL_FIRST, dice.KEEP, dice.REROLL
_SINGLE_FIRST = cards.SINGLE_FIRST
DICE, CARDS = 0, 1


# -- the sheet -----------------------------------------------------------------------------

@njit(cache=True)
def _score(cells, misthrows):
    """:func:`qwinto_env.rules.cells_score` of 27 cells."""
    total = 0
    for r in range(NR):
        count = 0
        for f in range(NF):
            if cells[r * NF + f]:
                count += 1
        total += cells[r * NF + NF - 1] if count == NF else count
    for j in range(_COL_CELLS.shape[0]):
        col = _COL_CELLS[j]
        if cells[col[0]] and cells[col[1]] and cells[col[2]]:
            total += cells[_PENT_CELLS[j]]
    return total - _PENALTY * min(misthrows, _MAX_MISTHROWS)


@njit(cache=True)
def _allowed(cells, out):
    """:func:`qwinto_env.rules.cells_allowed_values` of 27 cells, into ``out``."""
    for r in range(NR):
        base = r * NF
        smallest = TOP + 1
        for f in range(NF - 1, -1, -1):  # out holds hi (the smallest number to the right)
            out[base + f] = smallest
            if cells[base + f]:
                smallest = cells[base + f]
        largest = 0
        for f in range(NF):
            c = base + f
            if cells[c]:
                largest = cells[c]
                out[c] = 0
                continue
            bits = ((1 << out[c]) - 1) & ~((1 << (largest + 1)) - 1)
            for i in range(2):
                if _PEERS[c, i] < NC:
                    bits &= ~(1 << cells[_PEERS[c, i]])
            out[c] = bits & _ALL_VALUES


@njit(cache=True)
def _rightmost(top_share, k, lo):
    """:meth:`SegmentTables.rightmost <agents.expert.SegmentTables.rightmost>`."""
    base = lo + k
    return base + top_share * max(0, TOP - base)


@njit(cache=True, inline="always")
def _segments(cells, base, P, Q, seg, segq):
    """The segments of the row of 9 cells from ``base``, as rows ``(start, k, lo, hi)``
    of ``seg`` and their completion probabilities ``q`` in ``segq``; returns their
    count, the row's ``F`` and ``Q`` and its empty fields (the scalar ``row``)."""
    n, f, lo, empty = 0, 0, 0, 0
    while f < NF:
        if cells[base + f]:
            lo = cells[base + f]
            f += 1
            continue
        start = f
        while f < NF and not cells[base + f]:
            f += 1
        hi = cells[base + f] if f < NF else TOP + 1
        seg[n, 0], seg[n, 1], seg[n, 2], seg[n, 3] = start, f - start, lo, hi
        n += 1
    F, Qrow = 0.0, 1.0
    for i in range(n):
        k, lo, hi = seg[i, 1], seg[i, 2], seg[i, 3]
        F += k * P[k, lo, hi]
        segq[i] = Q[k, lo, hi]
        Qrow *= segq[i]
        empty += k
    return n, F, Qrow, empty


# -- the own sheet's evaluation ------------------------------------------------------------
# Scratch columns: per row ``rowf`` (F, Q, R, its term of E, phi**empty / phi) and
# ``rowi`` (segments, empty fields, whether its last write ends the game); per cell
# ``cellf`` (fill probability, value, p_eff, F_other, q_other, P_others) and ``celli``
# (segment lo, hi, fields left and right of it, allowed values).
R_F, R_Q, R_R, R_TERM, R_AFTER = range(5)
R_SEGS, R_EMPTY, R_ENDS = range(3)
C_P, C_EST, C_EFF, C_FOTHER, C_QOTHER, C_POTHERS = range(6)
C_LO, C_HI, C_LEFT, C_RIGHT, C_ALLOWED = range(5)


@njit(cache=True)
def _scratch():
    """The arrays one batch row's decision works in (reused row after row); the segments'
    have a spare row for the other seats' rows."""
    return (np.empty((NR + 1, MAX_SEGS, 4), np.int64), np.empty((NR + 1, MAX_SEGS)),
            np.empty((NR, 5)), np.empty((NR, 3), np.int64), np.empty((NC, 6)),
            np.empty((NC, 5), np.int64), np.empty((len(_PENT_CELLS), 2)),
            np.empty((NR, SLOTS)), np.empty(SLOTS), np.empty(NC, np.int64))


@njit(cache=True)
def _rows(own, P, Q, prm, seg, segq, rowf, rowi, cellf):
    """Per row of the own sheet its segments, ``F``, ``Q``, ``R`` and empty fields; per
    field its fill probability (1 when written) and value (written or interpolated)."""
    for r in range(NR):
        n, F, Qrow, empty = _segments(own, r * NF, P, Q, seg[r], segq[r])
        rowi[r, R_SEGS], rowi[r, R_EMPTY] = n, empty
        rowf[r, R_F], rowf[r, R_Q] = F, Qrow
        for f in range(NF):
            cellf[r * NF + f, C_P], cellf[r * NF + f, C_EST] = 1.0, float(own[r * NF + f])
        for i in range(n):
            start, k, lo, hi = seg[r, i, 0], seg[r, i, 1], seg[r, i, 2], seg[r, i, 3]
            top = min(float(hi), TOP + 0.5)
            for pos in range(k):
                cellf[r * NF + start + pos, C_P] = P[k, lo, hi]
                cellf[r * NF + start + pos, C_EST] = lo + (pos + 1) * (top - lo) / (k + 1)
        last = own[r * NF + NF - 1]
        rowf[r, R_R] = float(last) if last else \
            _rightmost(prm[TOP_SHARE], seg[r, n - 1, 1], seg[r, n - 1, 2])


@njit(cache=True)
def _need(cells, P, Q, rowf, rowi, seg, segq):
    """Fields the fastest seat still needs for two complete rows (over rows that can still
    complete), or -1 when no seat has two such rows; seat 0's rows are :func:`_rows`'."""
    need = -1
    for s in range(cells.shape[0]):
        a, b = NF + 1, NF + 1  # the two smallest empty counts
        for r in range(NR):
            if s == 0:
                Qrow, empty = rowf[r, R_Q], rowi[r, R_EMPTY]
            else:
                _, _, Qrow, empty = _segments(cells[s], r * NF, P, Q, seg, segq)
            if Qrow > 0.0:
                if empty < a:
                    a, b = empty, a
                elif empty < b:
                    b = empty
        if b <= NF and (need < 0 or a + b < need):
            need = a + b
    return need


@njit(cache=True, inline="always")
def _phi(need, prm, rowf):
    """The horizon ``phi``: the rolls for the fields the fastest seat needs (``need``,
    :func:`_need`) over this player's expected fills, capped at 1 (1 when no seat can
    complete two rows, or nothing can fill)."""
    F_total = 0.0
    for r in range(NR):
        F_total += rowf[r, R_F]
    if need < 0 or F_total <= 0.0:
        return 1.0
    return min(1.0, (prm[ROLLS_PER_ENTRY] * need + prm[SLACK]) / F_total)


@njit(cache=True)
def _value(own, misthrows, prm, phi, rowf, rowi, cellf, col):
    """The sheet's estimate ``E``; fills each row's term and ``phi**empty / phi``, each
    cell's ``p_eff`` and each pentagon column's value and term."""
    rows = 0.0
    for r in range(NR):
        empty = rowi[r, R_EMPTY]
        phi_pow = phi ** float(empty)  # libm pow, as Python's (an int power multiplies)
        rowf[r, R_TERM] = (NF - empty) + phi * rowf[r, R_F] \
            + prm[W_FULL] * phi_pow * rowf[r, R_Q] * (rowf[r, R_R] - NF)
        rowf[r, R_AFTER] = phi_pow / phi if phi > 0 else 0.0
        rows += rowf[r, R_TERM]
    for c in range(NC):
        cellf[c, C_EFF] = 1.0 if own[c] else cellf[c, C_P] * phi
    columns = 0.0
    for j in range(len(_PENT_CELLS)):
        cells = _COL_CELLS[j]
        col_P = cellf[cells[0], C_EFF] * cellf[cells[1], C_EFF] * cellf[cells[2], C_EFF]
        col[j, 0] = cellf[_PENT_CELLS[j], C_EST]
        col[j, 1] = col_P * col[j, 0]
        columns += col[j, 1]
    return rows + prm[W_PENT] * columns - _PENALTY * misthrows


@njit(cache=True)
def _write_coefficients(seg, segq, rowf, rowi, cellf, celli):
    """Per empty cell: its segment's bounds, the fields left and right of it, the row's
    fills and completion without its segment (``F_other``, ``q_other``); per cell of a
    pentagon column the product of its peers' ``p_eff`` (``P_others``)."""
    for r in range(NR):
        full = 0
        for r2 in range(NR):
            full += rowi[r2, R_EMPTY] == 0
        rowi[r, R_ENDS] = rowi[r, R_EMPTY] == 1 and full >= 1
        for i in range(rowi[r, R_SEGS]):
            start, k, lo, hi = seg[r, i, 0], seg[r, i, 1], seg[r, i, 2], seg[r, i, 3]
            q_other = 1.0
            for i2 in range(rowi[r, R_SEGS]):
                if i2 != i:
                    q_other *= segq[r, i2]
            F_other = rowf[r, R_F] - k * cellf[r * NF + start, C_P]
            for pos in range(k):
                c = r * NF + start + pos
                celli[c, C_LO], celli[c, C_HI] = lo, hi
                celli[c, C_LEFT], celli[c, C_RIGHT] = pos, k - pos - 1
                cellf[c, C_FOTHER], cellf[c, C_QOTHER] = F_other, q_other
    for c in range(NC):
        j = _CELL_PCOL[c]
        if j >= 0:
            P_others = 1.0
            for x in _COL_CELLS[j]:
                if x != c:
                    P_others *= cellf[x, C_EFF]
            cellf[c, C_POTHERS] = P_others


@njit(cache=True)
def _writes(entry, value, legal, own, misthrows, phi, E, prm, P, Q, rowf, rowi, cellf, celli, col,
            best):
    """The scalar write table: the change of ``E`` of writing each allowed value into each
    empty cell (the row's and the pentagon column's new terms, or the exact final score
    minus ``E`` for a write that ends the game). For a dice choice, re-roll or card play,
    ``best`` (3, 19) gets per row and value the best write; for an ``entry``,
    ``best[r, f]`` the write of ``value`` into field ``f`` of row ``r`` where ``legal``;
    -inf where there is none."""
    # One loop for the whole table, not a call per write: a numba call with array
    # arguments costs about 100 ns (reference counts), more than a write's arithmetic.
    best[:] = -np.inf
    for c in range(NC):
        bits = celli[c, C_ALLOWED]
        if entry:
            bits &= (1 << value) if legal[c] else 0
        if not bits:
            continue
        r, f, j = c // NF, c % NF, _CELL_PCOL[c]
        lo, hi, left, right = celli[c, C_LO], celli[c, C_HI], celli[c, C_LEFT], celli[c, C_RIGHT]
        # Every term of the cell in a local: the stores below could alias the arrays.
        ends, count, term = rowi[r, R_ENDS], NF - rowi[r, R_EMPTY] + 1, rowf[r, R_TERM]
        F_other, q_other, R = cellf[c, C_FOTHER], cellf[c, C_QOTHER], rowf[r, R_R]
        full, w_pent, top_share = prm[W_FULL] * rowf[r, R_AFTER], prm[W_PENT], prm[TOP_SHARE]
        pent = j >= 0 and c == _PENT_CELLS[j]
        P_others = cellf[c, C_POTHERS] if j >= 0 else 0.0
        col_val, col_before = (col[j, 0], col[j, 1]) if j >= 0 else (0.0, 0.0)
        for v in range(lo + 1, hi):  # the allowed values lie inside the segment
            if not bits >> v & 1:
                continue
            if ends:
                own[c] = v
                d = _score(own, misthrows) - E
                own[c] = 0
            else:
                newF = F_other + left * P[left, lo, v] + right * P[right, v, hi]
                newQ = q_other * Q[left, lo, v] * Q[right, v, hi]
                if hi != TOP + 1:
                    newR = R
                else:
                    newR = float(v) if right == 0 else _rightmost(top_share, right, v)
                d = count + phi * newF + full * newQ * (newR - NF) - term
                if j >= 0:
                    d += w_pent * (P_others * (float(v) if pent else col_val) - col_before)
            slot = f if entry else v
            if d > best[r, slot]:
                best[r, slot] = d


@njit(cache=True, inline="always")
def _subset_ev(best, misthrow, subset, vals):
    """The expected value over the sum of ``subset``'s dice of the best write or the
    misthrow (``vals`` holds the value per sum it can roll), summed left to right."""
    ev = 0.0
    for v in range(_SUPPORT[subset, 0], _SUPPORT[subset, 1] + 1):
        vals[v] = misthrow
        for r in range(NR):
            if subset >> r & 1 and best[r, v] > vals[v]:
                vals[v] = best[r, v]
        ev += _DIST[subset, v] * vals[v]
    return ev


@njit(cache=True)
def _choose(legal, best, misthrow, margin, vals):
    """The dice subset whose roll is worth most, the re-roll option folded in."""
    best_a, best_ev = -1, -np.inf
    for a in range(_ROLL_FIRST, _KEEP):
        if not legal[a]:
            continue
        subset = a - dice.ROLL_OFFSET
        ev1 = _subset_ev(best, misthrow, subset, vals)
        ev = 0.0
        for v in range(_SUPPORT[subset, 0], _SUPPORT[subset, 1] + 1):
            ev += _DIST[subset, v] * max(vals[v], ev1 + margin)
        if ev > best_ev:
            best_a, best_ev = a, ev
    return best_a


@njit(cache=True)
def _reroll(legal, subset, value, best, misthrow, margin, vals):
    """Re-roll when a fresh roll is expected to beat the roll in hand by ``margin``.

    The gain is summed as differences from the roll in hand: exactly 0 where every sum is
    worth the roll in hand (the scalar's ``ev1 > held``, whatever order its dot product
    sums in; ``ev1`` summed here would come out a rounding above ``held`` in 1% of rows)."""
    _subset_ev(best, misthrow, subset, vals)
    held = vals[min(max(value, 0), TOP)]
    gain = 0.0
    for v in range(_SUPPORT[subset, 0], _SUPPORT[subset, 1] + 1):
        gain += (vals[v] - held) * _DIST[subset, v]
    return _REROLL if legal[_REROLL] and gain > margin else _KEEP


@njit(cache=True)
def _play(legal, hand, tops, best, misthrow):
    """The card play whose announced value and colours allow the best write."""
    best_a, best_val = -1, -np.inf
    for a in range(_SINGLE_FIRST, legal.shape[0]):
        if not legal[a]:
            continue
        value, colours = 0, 0
        for x in _PLAY_COUNTED[a - _SINGLE_FIRST]:
            card = hand[x] if x < _HAND else tops[x - _HAND]
            value += _CARD_VALUE[card]
            colours |= _CARD_BITS[card]
        val = misthrow
        if 1 <= value <= TOP:
            for r in range(NR):
                if colours >> r & 1 and best[r, value] > val:
                    val = best[r, value]
        if val > best_val:
            best_a, best_val = a, val
    return best_a


@njit(cache=True, inline="always")
def _entry(writes, passing):
    """The best write (``writes``: :func:`_writes` of the announced value), or PASS when
    none is worth more than ``passing``."""
    best_c, best_d = PASS, passing
    for c in range(NC):
        if writes[c // NF, c % NF] > best_d:
            best_c, best_d = c, writes[c // NF, c % NF]
    return best_c


@njit(cache=True)
def _decide_row(game, cells, misthrows, active, phase, value, colours, hand, tops, legal,
                P, Q, prm, scratch):
    """One batch row's action: the scalar ``_analyse`` of the own sheet (seat 0), then
    the decision of the row's phase."""
    seg, segq, rowf, rowi, cellf, celli, col, best, vals, own = scratch
    own[:] = cells[0]
    _rows(own, P, Q, prm, seg, segq, rowf, rowi, cellf)
    phi = _phi(_need(cells, P, Q, rowf, rowi, seg[NR], segq[NR]), prm, rowf)
    E = _value(own, misthrows, prm, phi, rowf, rowi, cellf, col)
    if misthrows + 1 >= _MAX_MISTHROWS:
        misthrow = _score(own, misthrows + 1) - E
    else:
        misthrow = -_PENALTY - prm[MISTHROW_EXTRA]
    _write_coefficients(seg, segq, rowf, rowi, cellf, celli)
    _allowed(own, celli[:, C_ALLOWED])
    entry = phase == (_DICE_ENTRY if game == DICE else _CARDS_ENTRY)
    _writes(entry, min(max(value, 0), TOP), legal, own, misthrows, phi, E, prm, P, Q, rowf,
            rowi, cellf, celli, col, best)
    if entry:
        return _entry(best, misthrow if active == 0 else prm[PASS_MARGIN])
    if game == CARDS:
        return _play(legal, hand, tops, best, misthrow)
    if phase == _DICE_CHOOSE:
        return _choose(legal, best, misthrow, prm[REROLL_MARGIN], vals)
    return _reroll(legal, colours, value, best, misthrow, prm[REROLL_MARGIN], vals)


# One thread, on purpose: a parallel loop over the rows (prange) halved a batch of 4,096 on
# an idle 2-core machine, but with other work on the cores each call waited 7-8 ms for
# its second thread (a batch of 64: 0.5 -> 7 ms), and it oversubscribes the evaluator's
# worker processes.
@njit(cache=True)
def _decide(game, cells, misthrows, active, phase, value, colours, hand, tops, legal, P, Q,
            prm):
    """Actions ``(B,)``; a row with fewer than two legal actions gets -1 (the caller plays
    its forced action)."""
    out = np.full(cells.shape[0], -1, np.int64)
    scratch = _scratch()
    for i in range(cells.shape[0]):
        if legal[i].sum() >= 2:
            out[i] = _decide_row(game, cells[i], misthrows[i, 0], active[i], phase[i], value[i],
                                 colours[i], hand[i], tops[i], legal[i], P, Q, prm, scratch)
    return out


@functools.lru_cache(maxsize=16)
def _constants(tables: SegmentTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The segment tables ``P``, ``Q`` (k, lo, hi) and the parameters ``prm`` as arrays."""
    prm = np.array([getattr(tables.params, name) for name in PARAMS], dtype=np.float64)
    return np.array(tables.p, dtype=np.float64), np.array(tables.q, dtype=np.float64), prm


def decide(tables: SegmentTables, game: str, view: BatchView, legal: np.ndarray) -> np.ndarray:
    """The expert's actions ``(B,)`` (int64) for a numpy batch view of ``game`` and its
    legal actions ``(B, A)`` (bool): the scalar expert's choices on every row with two or
    more legal actions (the others get -1)."""
    b = legal.shape[0]
    hand = view.hand if view.hand is not None else np.zeros((b, _HAND), np.int64)
    tops = view.tops if view.tops is not None else np.zeros((b, cards.NUM_STACKS), np.int64)
    ints = [np.ascontiguousarray(x, dtype=np.int64) for x in (
        view.cells, view.misthrows, view.active, view.phase, view.value, view.colours, hand,
        tops)]
    return _decide(DICE if game == "dice" else CARDS, *ints,
                   np.ascontiguousarray(legal, dtype=np.bool_), *_constants(tables))
