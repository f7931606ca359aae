"""The ``expert`` bot's decisions for a whole batch at once, in array code (numpy or torch).

This is the array form of :mod:`agents.expert` (whose module docstring explains the
evaluation): the same row models, horizon, pentagon columns, misthrow value, write table
and decisions, computed for every row of a batch in float64 on the batch's own backend
and device. The scalar :meth:`ExpertAgent.act <agents.expert.ExpertAgent.act>` stays the
readable reference; ``tests/test_batched_expert.py`` holds the two equal (up to ties
within 1e-9, where float rounding may pick either).

How the array form differs in shape, not in value:

* a field's segment (``lo``, ``hi``, its first and last field) comes from running
  maxima over the 9 fields; ``p`` and ``q`` are gathers from the :class:`SegmentTables`
  arrays ``P[k][lo][hi]``, ``Q[k][lo][hi]``;
* every write ``(cell, v)`` scores ``alpha + beta * FLR + gamma * G + delta * v`` with
  per-cell coefficients (what the scalar code computes per field: ``F_other``,
  ``q_other``, the row's terms, the pentagon column) and per-(segment, position) tables
  ``FLR`` (the new fills left and right of the write) and ``G`` (the new completion
  probability left and right, times ``newR - 9`` in the last segment); values outside
  the segment's range, and a column peer's value, score ``-inf`` (the scalar ``_NEG``:
  only ever compared against the finite misthrow value);
* a game-ending write (the row's last field while another row is complete) scores the
  exact final score: ``alpha`` and ``delta`` hold it as a linear function of ``v``.
* the table is made only where a decision reads it: entry rows evaluate it at the
  announced value (27 numbers), the dice choice, re-roll and card-play rows in full and
  reduce it to the best write per row and value, :data:`CHUNK` batch rows at a time on
  a CPU; :meth:`Backend.rows` selects the rows (index lists on numpy, every row under a
  mask on torch, so no host sync).

:meth:`DecodingAgent.act_batch <agents.base.DecodingAgent.act_batch>` decodes the
batch, plays forced rows and checks empty masks; :func:`decide` makes no host sync.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any

import numpy as np

from qwinto_env import rules
from qwinto_env.batched.backend import Backend, to_backend
from qwinto_env.batched.sheets import sheet_scores
from qwinto_env.spec import cards, dice
from qwinto_env.spec.base import COLOUR_ROWS, PASS
from qwinto_env.view import BatchView, play_announcements

from .chance_tables import SUBSET_DISTRIBUTIONS

#: ``tables`` below is an agent's :class:`agents.expert.SegmentTables` (its parameters and
#: segment probabilities); it is not imported, as :mod:`agents.expert` imports this module.
SegmentTables = Any

__all__ = ["decide"]

NF, NR, NC, TOP = rules.NUM_FIELDS, rules.NUM_ROWS, rules.NUM_CELLS, rules.MAX_VALUE
SLOTS = TOP + 1      # value slots 0..18
BOUND = TOP + 2      # segment bounds lo, hi in 0..19 (19: no number to the right)
#: Batch rows whose write table (:func:`_row_best`) is made at once on a CPU: 256 rows
#: of 27 x 19 float64 (1 MB) stay in the caches (128 to 1,024 measure alike; a whole
#: batch of 4,096 is 10-20% slower overall).
CHUNK = 256
#: (left, right) field counts of a write inside a segment of at most 9 fields.
_LR = [(left, right) for left in range(NF) for right in range(NF - left)]
#: (lo, hi) bounds of a segment.
_PAIRS = [(lo, hi) for lo in range(BOUND) for hi in range(lo + 1, BOUND)]


# -- constant tables ---------------------------------------------------------------------

def _write_tables(tables: SegmentTables) -> np.ndarray:
    """``(3, keys + 1, 19)``: per (segment bounds, left, right) key and value ``v`` the
    write's new fills ``FLR``, its completion factor ``G`` and the ``-inf`` penalty of
    values outside the segment; the last key (a written cell) allows nothing."""
    P, Q = np.array(tables.p), np.array(tables.q)
    lo, hi = (np.array(x)[:, None, None] for x in zip(*_PAIRS))
    left, right = (np.array(x)[None, :, None] for x in zip(*_LR))
    v = np.arange(SLOTS)[None, None, :]
    vc = np.minimum(v, TOP)  # v = 19 never indexes: keep the gather in range
    flr = left * P[left, lo, vc] + right * P[right, vc, hi]
    rightmost = np.vectorize(tables.rightmost)(right, v).astype(np.float64)
    new_r = np.where(right == 0, v, rightmost)
    g = Q[left, lo, vc] * Q[right, vc, hi] * np.where(hi == TOP + 1, new_r - NF, 1.0)
    pen = np.where((v > lo) & (v < hi), 0.0, -np.inf)
    out = np.zeros((3, len(_PAIRS) * len(_LR) + 1, SLOTS))
    for i, part in enumerate((flr, g, pen)):
        out[i, :-1] = np.broadcast_to(part, (len(_PAIRS), len(_LR), SLOTS)).reshape(-1, SLOTS)
    out[2, -1] = -np.inf
    return out


def _cell_tables() -> dict[str, np.ndarray]:
    """Per cell: its pentagon column (5 = none), the other cells of that column, that
    column's pentagon cell and the cell's column peers (27 = a padding slot), and whether
    it is the column's pentagon cell."""
    column = np.array(rules.CELL_PENTAGON_COLUMN, dtype=np.int64)
    pcol = np.where(column < 0, len(rules.PENTAGON_COLUMNS), column)
    others = np.full((NC, 2), NC, dtype=np.int64)
    is_pent = np.zeros(NC, dtype=bool)
    pent_of = np.full(NC, NC, dtype=np.int64)
    for col, pent in rules.PENTAGON_COLUMNS:
        is_pent[pent] = True
        pent_of[list(col)] = pent
        for c in col:
            others[c] = [x for x in col if x != c]
    return {"pcol": pcol, "others": others, "is_pent": is_pent, "pent_of": pent_of,
            "peers": rules.CELL_PEER_ARRAY.copy(),
            "col_cells": np.array([col for col, _ in rules.PENTAGON_COLUMNS], dtype=np.int64),
            "pent_cells": np.array([p for _, p in rules.PENTAGON_COLUMNS], dtype=np.int64)}


@functools.lru_cache(maxsize=16)
def _tables_on(tables: SegmentTables, B: Backend) -> dict[str, Any]:
    """Every constant table on ``B``'s device, made once per (parameters, game, device)."""
    pair = np.zeros(BOUND * BOUND, dtype=np.int64)
    for i, (lo, hi) in enumerate(_PAIRS):
        pair[lo * BOUND + hi] = i * len(_LR)
    lr = np.zeros(NF * NF, dtype=np.int64)
    for i, (left, right) in enumerate(_LR):
        lr[left * NF + right] = i
    out = to_backend(B, {
        "P": np.array(tables.p).reshape(-1), "Q": np.array(tables.q).reshape(-1),
        "write": _write_tables(tables), "pair": pair, "lr": lr,
        "dist": np.array(SUBSET_DISTRIBUTIONS, dtype=np.float64),
        "values": np.arange(SLOTS, dtype=np.float64), "fields": np.arange(NF),
        **_cell_tables()})
    out["written_key"] = len(_PAIRS) * len(_LR)
    return out


# -- row models --------------------------------------------------------------------------

def _pick(mask: Any, a: Any, b: Any) -> Any:
    """``where(mask, a, b)`` for finite ``a`` and ``b``, exactly, as arithmetic: a where
    branches per element and mispredicts on sheets' irregular masks (numpy's and torch's
    run 4-7x slower than a product on a CPU)."""
    return a * mask + b * ~mask


def _fold_fields(op: Any, x: Any) -> Any:
    """``op`` (add, multiply) folded over the last axis of ``x`` (a row's 9 fields) slice
    by slice, left to right as the scalar sums (numpy reduces so short an axis slowly)."""
    out = x[..., 0]
    for f in range(1, NF):
        out = op(out, x[..., f])
    return out


def _running_max(B: Backend, x: Any, from_right: bool = False) -> Any:
    """The running maximum of ``x`` along its last axis (a row's 9 fields), from the left
    or from the right, as 8 maxima of slices (numpy's accumulate over so short an axis
    is 3-4x slower)."""
    y = B.copy(x)
    for f in (range(NF - 2, -1, -1) if from_right else range(1, NF)):
        y[..., f] = B.maximum(y[..., f], y[..., f + 1 if from_right else f - 1])
    return y


def _segments(B: Backend, T: dict, rows: Any) -> dict[str, Any]:
    """Per field of rows ``(..., 9)``: written, its segment's ``lo``, ``hi``, length ``k``
    (0 for a written field) and its position ``pos`` in it; ``p``, ``q`` of the segment.

    Running maxima give them: ``lo`` is the largest number to the left (rows increase),
    ``hi`` the smallest to the right; for an empty field its own slot adds nothing.
    The scans run in int16 (every number here is below 4,000): several times faster
    than int64 on a CPU.
    """
    rows = B.astype(rows, B.int16)
    written = rows > 0
    empty = ~written
    w, e = B.astype(written, B.int16), B.astype(empty, B.int16)  # 0/1 factors, int16
    idx = B.astype(T["fields"], B.int16)
    start = _running_max(B, (idx + 1) * w)
    end = -_running_max(B, (1 - idx) * w - (NF - 1) * e, from_right=True)
    k = (end - start + 1) * e
    lo = _running_max(B, rows) * e
    # k = 0 between 0 and 1: q = 1, p = 0
    hi = w - _running_max(B, -rows - (TOP + 1) * e, from_right=True) * e
    key = B.astype((k * BOUND + lo) * BOUND + hi, B.int64)
    return {"written": written, "lo": lo, "hi": hi, "k": k, "pos": idx - start,
            "p": B.take(T["P"], key, 0), "q": B.take(T["Q"], key, 0),
            "first": empty & (idx == start)}


def _row_totals(B: Backend, s: dict) -> tuple[Any, Any, Any]:
    """Per row: expected future fills ``F``, completion probability ``Q`` (the product
    over segments, each counted at its first field) and the number of empty fields."""
    F = _fold_fields(operator.add, s["k"] * s["p"] * s["first"])
    Q = _fold_fields(operator.mul, _pick(s["first"], s["q"], 1.0))
    return F, Q, _fold_fields(operator.add, B.astype(~s["written"], B.int16))


def _horizon(B: Backend, prm: Any, Q_all: Any, empty_all: Any, F_total: Any) -> Any:
    """``phi`` (B,): fields the fastest seat still needs for two complete rows (over rows
    that can still complete), as rolls, over this player's expected fills, capped at 1."""
    big = 4 * NF  # more than any two rows' empty fields
    e = B.sort(B.where(Q_all > 0.0, empty_all, big))
    need = -B.amax(-B.where(e[..., 1] < big, e[..., 0] + e[..., 1], big), -1)
    safe_F = B.where(F_total > 0.0, F_total, 1.0)
    phi = (prm.rolls_per_entry * need + prm.horizon_slack) / safe_F
    phi = B.where(phi < 1.0, phi, 1.0)
    return B.where((need >= big) | (F_total <= 0.0), 1.0, phi)


def _rightmost(prm: Any, k: Any, lo: Any) -> Any:
    """:meth:`SegmentTables.rightmost` on arrays."""
    base = lo + k
    room = TOP - base
    return base + prm.top_share * (room * (room > 0))


def _padded(B: Backend, x: Any, pad: Any) -> Any:
    """``x`` (b, 27 or 5) with one more column holding ``pad`` (the padding slot)."""
    return B.concat([x, B.zeros((x.shape[0], 1), x.dtype) + pad], 1)


def _sheet_value(B: Backend, T: dict, prm: Any, own: dict, totals: tuple, rows: Any,
                 phi: Any, misthrows: Any) -> dict[str, Any]:
    """The own sheet's estimate ``E`` and its parts (rows ``(b, 3, 9)``, their
    :func:`_row_totals`)."""
    b = rows.shape[0]
    F, Q, empty = totals
    last = rows[..., NF - 1]
    R = B.where(last > 0, last, _rightmost(prm, own["k"][..., NF - 1], own["lo"][..., NF - 1]))
    phi_pow = phi[:, None] ** empty
    terms = (NF - empty) + phi[:, None] * F + prm.w_full * phi_pow * Q * (R - NF)
    p_eff = _pick(own["written"], 1.0, own["p"] * phi[:, None, None]).reshape(b, NC)
    col_P = B.take(p_eff, T["col_cells"], 1).prod(-1)
    pent = T["pent_cells"]
    lo, hi, k, pos = (own[x].reshape(b, NC)[:, pent] for x in ("lo", "hi", "k", "pos"))
    top = B.where(hi > TOP, TOP + 0.5, B.astype(hi, B.float64))
    cells = rows.reshape(b, NC)[:, pent]
    col_val = B.where(cells > 0, B.astype(cells, B.float64), lo + (pos + 1) * (top - lo) / (k + 1))
    E = terms.sum(-1) + prm.w_pent * (col_P * col_val).sum(-1) \
        - rules.MISTHROW_PENALTY * misthrows
    return {"F": F, "Q": Q, "empty": empty, "R": R, "phi_pow": phi_pow, "terms": terms,
            "p_eff": p_eff, "col_P": col_P, "col_val": col_val, "E": E}


def _pentagon_terms(B: Backend, T: dict, prm: Any, v: dict) -> tuple[Any, Any]:
    """Per cell (b, 27): the pentagon term's change for a write, as ``const + lin * v``
    (the scalar ``w_pent * (P_others * (v or col_val) - col_before)``; 0 off columns)."""
    p_eff = _padded(B, v["p_eff"], 1.0)
    P_others = B.take(p_eff, T["others"][:, 0], 1) * B.take(p_eff, T["others"][:, 1], 1)
    col_val = B.take(_padded(B, v["col_val"], 0.0), T["pcol"], 1)
    before = B.take(_padded(B, v["col_P"] * v["col_val"], 0.0), T["pcol"], 1)
    const = prm.w_pent * (B.where(T["is_pent"], 0.0, P_others * col_val) - before)
    return const, B.where(T["is_pent"], prm.w_pent * P_others, 0.0)


def _ending_terms(B: Backend, T: dict, own: dict, rows: Any, v: dict, score: Any) -> tuple:
    """Per field (b, 3, 9): whether a write there ends the game (the row's last empty
    field while another row is complete), and its exact value ``const + lin * v``."""
    b = rows.shape[0]
    full = (v["empty"] == 0).sum(-1)
    ends = ~own["written"] & (v["empty"] == 1)[..., None] & (full >= 1)[:, None, None]
    cells = rows.reshape(b, NC)
    complete = B.take(_padded(B, own["written"].reshape(b, NC), False), T["others"], 1)
    complete = (complete[..., 0] & complete[..., 1]).reshape(b, NR, NF)
    is_pent = T["is_pent"].reshape(NR, NF)
    pent_val = B.take(_padded(B, cells, 0), T["pent_of"], 1).reshape(b, NR, NF)
    # The row's count gives way to its rightmost number: the written one, or v itself
    # when the write is into the last field (then rows[..., 8] is 0).
    const = (score[:, None] - (NF - v["empty"]) + rows[..., NF - 1])[..., None] \
        + pent_val * (complete & ~is_pent)
    lin = B.astype(T["fields"] == NF - 1, B.int64) + B.astype(complete & is_pent, B.int64)
    return ends, const - v["E"][:, None, None], lin


def _coefficients(B: Backend, T: dict, prm: Any, own: dict, rows: Any, phi: Any,
                  v: dict, score: Any) -> dict[str, Any]:
    """Per cell (b, 27): what a write there scores as a function of its value,
    ``alpha + beta * FLR + gamma * G + delta * v`` (:func:`_writes` adds the tables), the
    write-table key and the values of the cell's column peers (b, 27, 2)."""
    b = rows.shape[0]
    k, pos, first = own["k"], own["pos"], own["first"]
    # q of the other segments: the products of the segments' q (each at its first field)
    # before the field's segment and after it.
    seg_q = _pick(first, own["q"], 1.0)
    ones = B.zeros(seg_q.shape[:-1] + (1,), B.float64) + 1.0
    before = B.concat([ones, B.cumprod(seg_q, -1)], -1)                 # [f]: fields < f
    after = B.concat([B.flip(B.cumprod(B.flip(seg_q, -1), -1), -1), ones], -1)  # [f]: >= f
    start = T["fields"] - pos
    q_other = B.take_along(before, start, -1) * B.take_along(after, start + k, -1)
    F_other = v["F"][..., None] - k * own["p"]
    safe_phi = B.where(phi > 0.0, phi, 1.0)[:, None]
    after_pow = B.where(phi[:, None] > 0.0, v["phi_pow"] / safe_phi, 0.0)
    last = own["hi"] == TOP + 1  # the last segment: G already holds newR - NF
    gamma = prm.w_full * after_pow[..., None] * q_other \
        * _pick(last, 1.0, (v["R"] - NF)[..., None])
    alpha = (NF - v["empty"] + 1 - v["terms"])[..., None] + phi[:, None, None] * F_other
    pent_const, delta = _pentagon_terms(B, T, prm, v)
    alpha = alpha + pent_const.reshape(b, NR, NF)
    ends, end_const, end_lin = _ending_terms(B, T, own, rows, v, score)
    split = (pos * NF + k - pos - 1) * ~own["written"]  # (left, right) of the write
    key = B.take(T["pair"], B.astype(own["lo"] * BOUND + own["hi"], B.int64), 0) \
        + B.take(T["lr"], B.astype(split, B.int64), 0)
    return {
        "alpha": _pick(ends, end_const, alpha).reshape(b, NC, 1),
        "beta": (phi[:, None, None] * ~ends).reshape(b, NC, 1),
        "gamma": (gamma * ~ends).reshape(b, NC, 1),
        "delta": _pick(ends, end_lin, delta.reshape(b, NR, NF)).reshape(b, NC, 1),
        "key": _pick(own["written"], T["written_key"], key).reshape(b, NC),
        "peers": B.take(_padded(B, rows.reshape(b, NC), 0), T["peers"], 1)}


def _writes(B: Backend, T: dict, w: dict, values: Any = None) -> Any:
    """``(b, 27, m)``: the change of ``E`` of writing each value slot of ``values``
    (b, m) into each cell, or of every value 0..18 (m = 19) when ``values`` is None
    (the exact final score minus ``E`` for a game-ending write); ``-inf`` where illegal."""
    key = w["key"]
    if values is not None:  # gathers from the flat tables at (key, value)
        key = key[..., None] * SLOTS + values[:, None, :]
    flr, g, pen = (B.take(part if values is None else B.flat(part), key, 0)
                   for part in T["write"])
    d = flr
    d *= w["beta"]
    d += w["alpha"]
    g *= w["gamma"]
    d += g
    d += w["delta"] * (T["values"] if values is None else B.astype(values, B.float64)[:, None])
    d += pen
    if values is None:
        B.put_along(d, w["peers"], -np.inf, -1)
        return d
    for i in range(w["peers"].shape[-1]):  # a value a column peer holds (0: none, illegal)
        d = B.where(values[:, None, :] == w["peers"][..., i:i + 1], -np.inf, d)
    return d


def _row_best(B: Backend, T: dict, w: dict) -> Any:
    """``(b, 3, 19)``: per row of the sheet and value, the best write (:func:`_writes`).
    On a CPU the table is made :data:`CHUNK` batch rows at a time, so that it stays in
    the caches (a whole batch's goes to memory and back at every operation)."""
    b = w["key"].shape[0]
    chunk = CHUNK if str(B.device) == "cpu" else b
    parts = []
    for s in range(0, b, chunk):
        table = _writes(B, T, {name: x[s:s + chunk] for name, x in w.items()})
        by_field = table.reshape(-1, NR, NF, SLOTS)
        best = by_field[:, :, 0]
        for f in range(1, NF):  # a running maximum: numpy reduces a middle axis slowly
            best = B.maximum(best, by_field[:, :, f])
        parts.append(best)
    return parts[0] if len(parts) == 1 else B.concat(parts, 0)


def _analyse(B: Backend, T: dict, prm: Any, view: BatchView) -> dict[str, Any]:
    """Per batch row, the write coefficients of its own sheet (:func:`_coefficients`) and
    the misthrow's value ``(b,)`` (the scalar ``_analyse``, short of the table)."""
    b, n = view.cells.shape[:2]
    seats = _segments(B, T, view.cells.reshape(b, n, NR, NF))
    totals = _row_totals(B, seats)
    own = {name: x[:, 0] for name, x in seats.items()}
    rows = view.cells[:, 0].reshape(b, NR, NF)
    phi = _horizon(B, prm, totals[1], totals[2], totals[0][:, 0].sum(-1))
    misthrows = view.misthrows[:, 0]
    v = _sheet_value(B, T, prm, own, [x[:, 0] for x in totals], rows, phi, misthrows)
    score = sheet_scores(view.cells[:, 0], misthrows)
    w = _coefficients(B, T, prm, own, rows, phi, v, score)
    fourth = sheet_scores(view.cells[:, 0], misthrows + 1) - v["E"]
    w["misthrow"] = B.where(misthrows + 1 >= rules.MAX_MISTHROWS, fourth,
                            -rules.MISTHROW_PENALTY - prm.misthrow_extra)
    return w


# -- decisions ---------------------------------------------------------------------------

def _entry(B: Backend, T: dict, prm: Any, view: BatchView, legal: Any, w: dict) -> Any:
    """The best legal write of the announced value, or PASS when passing is worth at
    least as much (the misthrow for the active player, ``pass_margin`` for the others)."""
    value = B.clip(view.value, 0, TOP)
    column = _writes(B, T, w, value[:, None])[..., 0]
    column = B.where(legal[:, :PASS], column, -np.inf)
    best = column.argmax(-1)
    passing = B.where(view.active == 0, w["misthrow"], prm.pass_margin)
    return B.where(B.amax(column, -1) > passing, best, PASS)


def _subset_values(B: Backend, row_best: Any, misthrow: Any) -> Any:
    """``(b, 8, 19)``: per dice subset (colour bitmask) and rolled sum, the best write in
    its rows or the misthrow (subset 0 rolls nothing: the misthrow)."""
    best = []
    for rows in COLOUR_ROWS:
        vals = B.zeros((row_best.shape[0], SLOTS), B.float64) + misthrow[:, None]
        for r in rows:
            vals = B.maximum(vals, row_best[:, r])
        best.append(vals[:, None])
    return B.concat(best, 1)


def _rolls(B: Backend, T: dict, prm: Any, view: BatchView, legal: Any, w: dict) -> Any:
    """Dice choice (re-roll folded in) and re-roll decision, by phase."""
    vals = _subset_values(B, _row_best(B, T, w), w["misthrow"])
    dist = T["dist"]
    ev1 = (vals * dist).sum(-1)
    ev = (B.maximum(vals, (ev1 + prm.reroll_margin)[..., None]) * dist).sum(-1)
    rolls = dice.ROLLS
    choose = B.where(legal[:, rolls.start:rolls.stop], ev[:, rolls.start - dice.ROLL_OFFSET:],
                     -np.inf)
    choose = choose.argmax(-1) + rolls.start
    rolled = B.take_along(vals, view.colours[:, None, None], 1)[:, 0]
    held = B.take_along(rolled, B.clip(view.value, 0, TOP)[:, None], 1)
    # The gain of a fresh roll, summed as differences: exactly 0 where every sum is worth
    # the roll in hand (the scalar's ev1 > held, whatever order a dot product sums in).
    gain = ((rolled - held) * B.take(dist, view.colours, 0)).sum(-1)
    reroll = legal[:, dice.REROLL] & (gain > prm.reroll_margin)
    keep = B.where(reroll, dice.REROLL, dice.KEEP)
    return B.where(view.phase == dice.CHOOSE, choose, keep)


def _plays(B: Backend, T: dict, prm: Any, view: BatchView, legal: Any, w: dict) -> Any:
    """Card play: each play's announced value and colours scored by its best write, or
    the misthrow."""
    value, colours = play_announcements(view)
    at = B.clip(value, 0, TOP)[:, None, :]
    row_best = _row_best(B, T, w)
    best = B.take_along(row_best, at + B.zeros((1, NR, 1), B.int64), -1)  # (b, 3, plays)
    row_bits = (colours[:, None, :] >> T["fields"][:NR, None]) & 1
    usable = (row_bits > 0) & ((value >= 1) & (value <= TOP))[:, None, :]
    best = B.maximum(B.amax(B.where(usable, best, -np.inf), 1), w["misthrow"][:, None])
    return B.where(legal[:, cards.SINGLE_FIRST:], best, -np.inf).argmax(-1) + cards.SINGLE_FIRST


def _by_phase(B: Backend, T: dict, prm: Any, view: BatchView, legal: Any, w: dict,
              deciders: list) -> Any:
    """Actions ``(b,)``: each ``(mask, decider)`` decides the rows its mask selects (as
    :meth:`Backend.rows` selects them: only those rows on numpy, every row on torch)."""
    out = B.zeros(legal.shape[:1], B.int64)
    for mask, decider in deciders:
        rows = B.rows(mask)
        if rows.empty:
            continue
        part = dataclasses.replace(view, **{f.name: rows.take(getattr(view, f.name))
                                            for f in dataclasses.fields(view)
                                            if getattr(view, f.name) is not None})
        rows.put(out, decider(B, T, prm, part, rows.take(legal),
                              {name: rows.take(x) for name, x in w.items()}))
    return out


def decide(tables: SegmentTables, game: str, view: BatchView, legal: Any) -> Any:
    """The expert's actions ``(B,)`` for a batch view of ``game`` and its legal actions
    ``(B, A)`` (bool), in the view's kind of array: the scalar expert's choices on every
    row with two or more legal actions (what the others get is ignored).

    Entry rows need the write table at the announced value only; the others (dice
    choice and re-roll, card play) need its best per row and value."""
    B = view.backend
    T = _tables_on(tables, B)
    w = _analyse(B, T, tables.params, view)
    spec, others = (dice, _rolls) if game == "dice" else (cards, _plays)
    entry = view.phase == spec.ENTRY
    return _by_phase(B, T, tables.params, view, legal, w, [(entry, _entry), (~entry, others)])
