"""The score sheets of a batch of games: writing, end check, scoring, rewards, features.

Both batched engines (dice and cards) share the sheet; this module holds it once. All
tables come from :mod:`qwinto_env.rules`:

* ``update[(c * 19 + v)]`` (19 int32 bitmasks over cells): writing ``v`` into cell ``c``
  ANDs this into ``legal_cells``; it is ``rules.allowed_after_write`` applied to an
  all-ones sheet, transposed (row 27 * 19 + v, a pass, is all ones).
* ``legal_cells[n, p, v]``: bit ``c`` set when ``v`` may be written into cell ``c`` (the
  rules' ``cells_allowed_values`` transposed), so a decision's legal cells are one gather.

Scoring (:func:`score_sheets`) and the terminal rewards (:meth:`Sheets.terminal_rewards`)
are written again here, vectorised, beside :func:`qwinto_env.rules.cells_score` and
:func:`qwinto_env.spec.base.terminal_rewards`: ``tests/test_batched_sheets.py`` and the
engines' differential tests hold them equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import rules
from ..spec.base import COLOUR_ROWS, PASS, SHEET, GameSpec, check_reward
from .backend import Backend, Rows, integer_array, backend_of, to_backend

VALUE_SLOTS = rules.MAX_VALUE + 1  # value slots 0..18 (0: nothing writable)
NC = rules.NUM_CELLS               # 27 cells; column 27 (PASS) of ``cells`` is scratch


def check_batch_args(spec: GameSpec, num_games: Any, num_players: Any, reward: str | None,
                     start_player: Any, **switches: Any) -> str:
    """Validate what every batched engine takes; the reward kind (``None`` -> default).
    ``switches`` (``random_start=...``) must be bools: the string ``"false"`` is truthy.

    Raises ``ValueError`` naming the argument, as the single-game engines do.
    """
    for name, value in switches.items():
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {value!r}")
    if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) \
            or num_games < 1:
        raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
    spec.check_num_players(num_players)
    reward = check_reward(reward, num_players)
    if isinstance(start_player, bool) or not isinstance(start_player, (int, np.integer)) \
            or not 0 <= start_player < num_players:
        raise ValueError(f"start_player must be a seat in 0..{num_players - 1}, "
                         f"got {start_player!r}")
    return reward


def sheet_tables() -> dict[str, np.ndarray]:
    """The sheet's tables as numpy arrays (see the module docstring)."""
    update = np.full((NC + 1, VALUE_SLOTS, VALUE_SLOTS), -1, dtype=np.int64)
    for c in range(NC):
        for v in range(rules.MIN_VALUE, rules.MAX_VALUE + 1):
            allowed = [rules.ALL_VALUES_BITS] * NC
            rules.allowed_after_write(allowed, c, v)
            update[c, v] = [sum(1 << x for x in range(NC) if allowed[x] >> u & 1)
                            for u in range(VALUE_SLOTS)]
    empty_allowed = rules.cells_allowed_values([0] * NC)
    legal_init = [sum(1 << x for x in range(NC) if empty_allowed[x] >> u & 1)
                  for u in range(VALUE_SLOTS)]
    # Cells of the rows of each colour bitmask.
    colour_cells = [sum(1 << c for r in rows
                        for c in range(r * rules.NUM_FIELDS, (r + 1) * rules.NUM_FIELDS))
                    for rows in COLOUR_ROWS]
    return {
        "update": update.reshape((NC + 1) * VALUE_SLOTS, VALUE_SLOTS).astype(np.int32),
        "legal_init": np.array(legal_init, dtype=np.int32),
        "colour_cells": np.array(colour_cells, dtype=np.int64),
        "row_of": np.array([c // rules.NUM_FIELDS for c in range(NC)] + [rules.NUM_ROWS],
                           dtype=np.int64),
        "pent_cols": np.array([list(cells) for cells, _ in rules.PENTAGON_COLUMNS],
                              dtype=np.int64),
        "pent_cells": np.array([p for _, p in rules.PENTAGON_COLUMNS], dtype=np.int64),
        "row_last": np.array([(r + 1) * rules.NUM_FIELDS - 1 for r in range(rules.NUM_ROWS)],
                             dtype=np.int64),
        "thermo": np.array([[1.0 if i < m else 0.0 for i in range(rules.MAX_MISTHROWS)]
                            for m in range(rules.MAX_MISTHROWS + 1)], dtype=np.float32),
    }


def score_sheets(backend: Backend, tables: dict[str, Any], cells: Any, row_count: Any,
                 misthrows: Any) -> Any:
    """Scores (...) int64 of sheets by :func:`rules.cells_score`, on ``backend``.

    ``cells`` (..., 27 or more) cell values (0 = empty), ``row_count`` (..., 3 or more)
    fields written per row, ``misthrows`` (...); ``tables`` from :func:`sheet_tables`.
    A game ends at its 4th misthrow, so the rules' cap of 4 never binds here.
    """
    B, t = backend, tables
    counts = B.astype(row_count[..., :rules.NUM_ROWS], B.int64)
    last = B.astype(cells[..., t["row_last"]], B.int64)
    rows = B.where(counts == rules.NUM_FIELDS, last, counts).sum(-1)
    complete = (cells[..., t["pent_cols"]] != 0).all(-1)
    pentagons = (B.astype(cells[..., t["pent_cells"]], B.int64) * complete).sum(-1)
    return rows + pentagons - rules.MISTHROW_PENALTY * B.astype(misthrows, B.int64)


def position_array(x: Any, what: str, shape: tuple[int, ...], boolean: bool = False
                   ) -> np.ndarray:
    """``x`` as an int64 (``boolean``: bool) numpy array of ``shape``, broadcast from a
    scalar or a per-game vector; ``ValueError`` naming ``what`` unless it holds integers
    (``boolean``: bools, or 0 and 1) and fits the shape. A ``-1`` in ``shape`` takes any
    length. (A float would be truncated without a word: a position must not be.)"""
    if boolean:
        arr = np.asarray(x)
        if arr.dtype != bool and not (arr.dtype.kind in "iu" and np.isin(arr, (0, 1)).all()):
            raise ValueError(f"{what} must hold bools, got {arr.dtype} "
                             f"{np.unique(arr)[:6].tolist() if arr.dtype.kind in 'iuf' else ''}")
        arr = arr.astype(bool)
    else:
        arr = integer_array(x, what)
    want = tuple(arr.shape[i] if n == -1 and arr.ndim == len(shape) else n
                 for i, n in enumerate(shape))
    try:
        return np.broadcast_to(arr, want).copy()
    except ValueError:
        any_length = " (-1: any length)" if -1 in shape else ""
        raise ValueError(f"{what} must have shape {shape}{any_length}, got "
                         f"{arr.shape}") from None


def check_sheets(cells: Any, misthrows: Any, shape: tuple[int, int]) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """``cells`` (N, P, 27) and ``misthrows`` (N, P) as int64 numpy arrays, checked to be
    sheets of games still running: each obeys the writing rules
    (:func:`rules.check_sheet`), and no seat has two complete rows or four misthrows.

    Raises ``ValueError`` naming the first game and seat that is not such a sheet.
    """
    cells, misthrows = np.asarray(cells), np.asarray(misthrows)
    if cells.shape != shape + (NC,) or misthrows.shape != shape \
            or not (np.issubdtype(cells.dtype, np.integer)
                    and np.issubdtype(misthrows.dtype, np.integer)):
        raise ValueError(f"cells must be integers of shape {shape + (NC,)} and misthrows "
                         f"integers of shape {shape}, got {cells.shape} {cells.dtype} and "
                         f"{misthrows.shape} {misthrows.dtype}")
    for n, p in np.ndindex(*shape):
        where = f"game {n} seat {p}"
        try:
            rules.check_sheet(cells[n, p].reshape(rules.NUM_ROWS, rules.NUM_FIELDS))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not 0 <= misthrows[n, p] < rules.MAX_MISTHROWS:
            raise ValueError(f"{where}: misthrows must be in 0..{rules.MAX_MISTHROWS - 1} in "
                             f"a running game, got {misthrows[n, p]}")
        if rules.cells_full_rows(cells[n, p].tolist()) >= rules.FULL_ROWS_TO_END:
            raise ValueError(f"{where}: {rules.FULL_ROWS_TO_END} complete rows end the game")
    return cells.astype(np.int64), misthrows.astype(np.int64)


_tables_on: dict[tuple[str, str], dict[str, Any]] = {}


def sheet_scores(cells: Any, misthrows: Any) -> Any:
    """Scores (...) int64 by the rules of sheets ``cells`` (..., 27) (ints, 0 = empty) with
    ``misthrows`` (...), on the arrays' own backend: numpy arrays, or torch tensors on
    any device (what search bots score afterstates with). Misthrows past the rules' 4
    count as 4, as :func:`rules.cells_score` counts them."""
    B = backend_of(cells)
    rows = cells.reshape(*cells.shape[:-1], rules.NUM_ROWS, rules.NUM_FIELDS)
    misthrows = B.astype(misthrows, B.int64)
    capped = B.where(misthrows > rules.MAX_MISTHROWS, rules.MAX_MISTHROWS, misthrows)
    return score_sheets(B, tables_on(B), cells, (rows > 0).sum(-1), capped)


def tables_on(B: Backend) -> dict[str, Any]:
    """:func:`sheet_tables` on ``B``'s device, made once per device (shared: read only;
    building them takes longer than a whole step of a thousand games)."""
    key = (B.name, str(B.device))
    if key not in _tables_on:
        _tables_on[key] = to_backend(B, sheet_tables())
    return _tables_on[key]


class Sheets:
    """The sheets of ``num_games`` x ``num_players`` seats and what derives from them.

    Arrays: ``cells`` (N,P,28) int8 (column 27 scratch), ``legal_cells`` (N,P,19) int32,
    ``row_count`` (N,P,4) int8 (row 3 scratch, stays 0), ``full_rows`` (N,P) int8,
    ``misthrows`` (N,P) int8, and with ``reward="score"`` the running ``scores`` (N,P).
    """

    def __init__(self, backend: Backend, num_games: int, num_players: int, reward: str):
        B = self.backend = backend
        self.num_games, self.num_players, self.reward_kind = num_games, num_players, reward
        self.t = dict(tables_on(B))
        P = num_players
        extra = {"recip": np.array([0.0] + [1.0 / k for k in range(1, P + 1)],
                                   dtype=np.float32),
                 "not_self": ~np.eye(P, dtype=bool)}
        self.t.update(to_backend(B, extra))
        ar = B.arange(num_games * P).reshape(num_games, P)
        # Flat offsets of each (game, seat) row: per-seat reads and writes are 1-D gathers.
        self._base_value = ar * VALUE_SLOTS
        self._base_cell = ar * (NC + 1)
        self._base_row = ar * (rules.NUM_ROWS + 1)
        self.base_game = B.arange(num_games) * P
        self.reset()

    def reset(self) -> None:
        B, N, P = self.backend, self.num_games, self.num_players
        self.cells = B.zeros((N, P, NC + 1), B.int8)
        self.legal_cells = B.zeros((N, P, VALUE_SLOTS), B.int32)
        self.legal_cells[...] = self.t["legal_init"]
        self.row_count = B.zeros((N, P, rules.NUM_ROWS + 1), B.int8)
        self.full_rows = B.zeros((N, P), B.int8)
        self.misthrows = B.zeros((N, P), B.int8)
        self.scores = B.zeros((N, P), B.int64)

    def load(self, cells: Any, misthrows: Any) -> None:
        """Set every sheet to ``cells`` (N, P, 27) (0 = empty) with ``misthrows`` (N, P),
        and derive the rest (legal cells, row counts, complete rows, running scores) as
        the writes that led there would have. The caller checks the sheets are legal."""
        B, t = self.backend, self.t
        self.reset()
        self.cells[:, :, :NC] = B.astype(cells, B.int8)
        self.misthrows[...] = B.astype(misthrows, B.int8)
        slots = B.astype(cells, B.int64)
        for c in range(NC):  # writing 0 (an empty cell) ANDs all ones: order does not matter
            self.legal_cells &= B.take(t["update"], c * VALUE_SLOTS + slots[:, :, c], 0)
        rows = (slots.reshape(self.num_games, self.num_players, rules.NUM_ROWS,
                              rules.NUM_FIELDS) > 0).sum(-1)
        self.row_count[:, :, :rules.NUM_ROWS] = B.astype(rows, B.int8)
        self.full_rows[...] = B.astype((rows == rules.NUM_FIELDS).sum(-1), B.int8)
        if self.reward_kind == "score":
            self.scores = self.current_scores()

    def restart(self, rows: Rows) -> None:
        """Empty sheets for the games ``rows``."""
        for state in (self.cells, self.row_count, self.full_rows, self.misthrows, self.scores):
            rows.put(state, 0)
        rows.put(self.legal_cells, self.t["legal_init"])

    def arrays(self) -> tuple[Any, ...]:
        """The state arrays (for byte counts)."""
        base = (self.cells, self.legal_cells, self.row_count, self.full_rows, self.misthrows)
        return base + ((self.scores,) if self.reward_kind == "score" else ())

    # -- rules -------------------------------------------------------------------------
    def legal_writes(self, value: Any, colours: Any) -> Any:
        """Legal actions (N, P) int64 bitmasks at an entry of ``value`` (N,) in the rows
        of ``colours`` (N,) (bit r = row r): the legal cells plus pass. A value below 1
        or no colour leaves pass only."""
        B = self.backend
        slot = B.where(value > 0, value, 0)  # slot 0 of legal_cells is always empty
        cells = B.astype(B.flat(self.legal_cells)[self._base_value + slot[:, None]], B.int64)
        return (cells & self.t["colour_cells"][colours][:, None]) | (1 << PASS)

    def enter(self, a: Any, value: Any, seat_of_active: Any, legal: Any) -> Any:
        """Apply the entry actions ``a`` (N, P) of ``value`` (N,); the active seats
        (flat indices ``seat_of_active``) that pass mark a misthrow. Returns the games
        that reached an end condition of the sheets (two full rows, four misthrows).

        ``legal`` (N, P) are the seats' legal actions from :meth:`legal_writes`. An id
        out of range counts as the nearest one (0 or pass), and a cell that is not a
        legal write now as a pass: no id writes outside its own sheet or breaks a rule.
        """
        B, t = self.backend, self.t
        cell = B.clip(a, 0, PASS)
        a = PASS + (cell - PASS) * ((legal >> cell) & 1)  # arithmetic: cheaper than where
        # Writes; a pass lands in the scratch column 27 and adds 0 to scratch row 3.
        B.flat(self.cells)[self._base_cell + a] = B.astype(value, B.int8)[:, None]
        writes = B.astype(a != PASS, B.int8)
        row_index = self._base_row + t["row_of"][a]
        count = B.flat(self.row_count)[row_index] + writes
        B.flat(self.row_count)[row_index] = count
        self.full_rows += B.astype(count == rules.NUM_FIELDS, B.int8)
        slot = B.where(value > 0, value, 0)
        self.legal_cells &= B.take(t["update"], a * VALUE_SLOTS + slot[:, None], 0)
        missed = B.flat(a)[seat_of_active] == PASS
        B.flat(self.misthrows)[seat_of_active] += B.astype(missed, B.int8)
        return (B.amax(self.full_rows, -1) >= rules.FULL_ROWS_TO_END) \
            | (B.flat(self.misthrows)[seat_of_active] >= rules.MAX_MISTHROWS)

    # -- scoring and rewards ---------------------------------------------------------------
    def score_of(self, cells: Any, row_count: Any, misthrows: Any) -> Any:
        """Scores (..., P) int64 of sheets, like :func:`rules.cells_score`."""
        return score_sheets(self.backend, self.t, cells, row_count, misthrows)

    def current_scores(self) -> Any:
        return self.score_of(self.cells, self.row_count, self.misthrows)

    def entry_rewards(self, rewards: Any) -> None:
        """Add the dense ``"score"`` reward of an entry step to ``rewards`` (N, P)."""
        if self.reward_kind == "score":
            scores = self.current_scores()
            rewards += self.backend.astype(scores - self.scores, self.backend.float32)
            self.scores = scores

    def finish(self, rows: Rows, rewards: Any) -> tuple[Any, Any]:
        """Final scores and returns (``rows.count`` rows) of the games ``rows`` (terminal
        rewards added to ``rewards``), before they restart."""
        B = self.backend
        if self.reward_kind == "score":
            final_scores = rows.take(self.scores)
            return final_scores, B.astype(final_scores, B.float32)
        final_scores = self.score_of(*map(rows.take, (self.cells, self.row_count,
                                                      self.misthrows)))
        returns = self.terminal_rewards(final_scores)
        rows.put(rewards, returns)
        return final_scores, returns

    def terminal_rewards(self, scores: Any) -> Any:
        """`qwinto_env.spec.base.terminal_rewards` for (K, P) final scores, as float32."""
        B, t, P = self.backend, self.t, self.num_players
        if self.reward_kind == "margin":
            if P == 1:
                return B.astype(scores, B.float32)
            others = B.where(t["not_self"], scores[:, None, :], scores.min() - 1)
            return B.astype(scores - B.amax(others, -1), B.float32)
        best = B.amax(scores, -1)
        winners = scores == best[:, None]
        k = winners.sum(-1)
        out = B.where(winners, t["recip"][k][:, None], -1.0)
        return B.where((k == P)[:, None], 0.0, out)

    # -- observations ------------------------------------------------------------------------
    def write_features(self, out: Any, rows: Rows | None, block: int) -> None:
        """Write each seat's :data:`~qwinto_env.spec.base.SHEET` block (sheet value / 18,
        misthrow thermometer) into ``out`` (K, F) at ``seat * block``, for the games
        ``rows`` (None: all)."""
        B = self.backend
        cells = self.cells if rows is None else rows.take(self.cells)
        misthrows = self.misthrows if rows is None else rows.take(self.misthrows)
        # float32(v) / 18 equals the single engines' float32(v / 18) for every v in 0..18
        # (tests/test_batched_dice.py checks it), and is cheaper than a table gather.
        sheets = B.astype(cells[:, :, :NC], B.float32) / float(rules.MAX_VALUE)
        thermo = self.t["thermo"][B.astype(misthrows, B.int64)]
        cells_at, misthrows_at = SHEET.cells, SHEET.misthrows
        for seat in range(self.num_players):  # P <= 6 column blocks, all games at once
            at = seat * block
            out[:, at + cells_at.start:at + cells_at.stop] = sheets[:, seat]
            out[:, at + misthrows_at.start:at + misthrows_at.stop] = thermo[:, seat]

    def allowed_values(self) -> Any:
        """The allowed-value bitmasks in :func:`rules.cells_allowed_values` layout (N, P, 27)."""
        B = self.backend
        bits = (B.astype(self.legal_cells, B.int64)[..., None, :] >> B.arange(NC)[:, None]) & 1
        return B.astype((bits << B.arange(VALUE_SLOTS)).sum(-1), B.int32)
