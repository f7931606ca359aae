"""Qwinto (dice game) as a batched engine: N independent games per call, numpy or torch.

Same rules, same ``Discrete(37)`` action layout, same observation features and masks
as :class:`qwinto_env.dice.DiceGame` and the ParallelEnv (``obs[n, seat]`` equals the
single engine's ``features()[observation_index(seat)]`` bit for bit), proven by the
differential tests in ``tests/test_batched_dice.py``. The rule tables are built from
:mod:`qwinto_env.rules` at construction, not restated.

Quick use::

    import numpy as np
    from qwinto_env.batched import BatchedDiceGame, uniform_legal

    games = BatchedDiceGame(1024, num_players=2, backend="numpy", seed=0)
    for _ in range(300):
        actions = uniform_legal(games.backend, games.legal_bits(), games.gen)
        out = games.step(actions)          # out.rewards (N, P), out.terminated (N,)
    obs, masks = games.observations(), games.action_masks()   # (N, P, 89), (N, P, 37)

State (leading dimension N = ``num_games``; P = ``num_players``):

=================  =============  ==========================================================
array              shape, dtype   content
=================  =============  ==========================================================
``cells``          (N,P,28) int8  sheets, cell ``r*9+f`` (0 = empty); column 27 is scratch
                                  (a pass "writes" there, so writes need no branch)
``legal_cells``    (N,P,19) int32 the rules' allowed-value bitmasks, transposed: bit ``c``
                                  of ``[n, p, v]`` is bit ``v`` of
                                  ``rules.cells_allowed_values(...)[c]``; updated on write
                                  by AND with a table built from ``rules.allowed_after_write``
``row_count``      (N,P,4) int8   fields written per row (index 3: scratch, stays 0)
``full_rows``      (N,P) int8     complete rows per seat
``misthrows``      (N,P) int8     misthrows per seat
``active``         (N,) int64     active seat
``subset``         (N,) int64     rolled colours bitmask (0 before the roll)
``dice``           (N,3) int8     faces of the rolled dice (0 for dice not rolled)
``value``          (N,) int64     rolled value (0 before the roll)
``turn``           (N,) int32     turns completed in the current game
``phase``          Python int     CHOOSE, REROLL_DECISION or ENTRY, shared by the batch
=================  =============  ==========================================================

Every turn has exactly three steps and a game can only end at an entry step, after
which its replacement starts at the choose phase: so all games of a batch are always in
the same phase, and ``phase`` (and the re-roll flag, which is ``phase ==
REROLL_DECISION``) is one number for the batch. Keeping the legal cells per *value*
(``legal_cells``) makes every decision point's legal set one gather per seat.

Chance: ``step(actions, chance=faces)`` with ``faces`` of shape (N, 3) (orange, yellow,
purple, each 1..6) fixes the dice of a rolling step, like the single engine's
``chance=(o, y, p)``; otherwise the faces come from ``gen`` (a ``numpy.random.Generator``
or a ``torch.Generator`` on the device, seeded by ``seed``/``reset(seed=...)``).

Finished games reset automatically; :class:`DiceStepResult` reports which games ended
(``done_index``), their final scores, returns (the sum of the seat's rewards over the
episode), lengths in turns and optionally their final observations.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dice as single
from .. import rules
from ..game import IllegalActionError
from .backend import Backend, get_backend

NUM_ACTIONS = single.NUM_ACTIONS
PASS = single.PASS
ROLL_FIRST = single.ROLL_FIRST
KEEP = single.KEEP
REROLL = single.REROLL
CHOOSE, REROLL_DECISION, ENTRY, OVER = single.CHOOSE, single.REROLL_DECISION, single.ENTRY, \
    single.OVER
REWARDS = ("win", "margin", "score")

_NV = rules.MAX_VALUE + 1          # value slots 0..18 (0 unused)
_NC = rules.NUM_CELLS              # 27 cells
_PASS_BIT = 1 << PASS
_CHOOSE_BITS = sum(1 << (ROLL_FIRST + s) for s in range(7))
_REROLL_BITS = (1 << KEEP) | (1 << REROLL)


@dataclass
class DiceStepResult:
    """What one batched step reports (arrays on the engine's backend and device).

    ``rewards`` (N, P) float32 and ``terminated`` (N,) bool cover every game. The
    ``final_*`` fields cover only the K games that ended in this step, listed in
    ``done_index`` (K,) int64: ``final_scores`` (K, P) int64, ``final_returns`` (K, P)
    float32 (sum of each seat's rewards over the game), ``final_turns`` (K,) and, when
    the engine keeps them, ``final_observation`` (K, P, obs_size) float32, the
    observation the ParallelEnv shows at the end (those games are already reset).
    """

    rewards: Any
    terminated: Any
    done_index: Any
    final_scores: Any
    final_returns: Any
    final_turns: Any
    final_observation: Any = None


@functools.lru_cache(maxsize=None)
def _numpy_tables(num_players: int) -> dict[str, np.ndarray]:
    """The rule and encoding tables as numpy arrays, derived from rules.py and dice.py."""
    P = num_players
    # Writing v into c ANDs rules.allowed_after_write's per-number constraint into every
    # cell's allowed set; applying it to all-ones yields that constraint as a vector.
    update = np.full((_NC + 1, _NV, _NV), -1, dtype=np.int64)
    for c in range(_NC):
        for v in range(rules.MIN_VALUE, rules.MAX_VALUE + 1):
            allowed = [rules.ALL_VALUES_BITS] * _NC
            rules.allowed_after_write(allowed, c, v)
            update[c, v] = [sum(1 << x for x in range(_NC) if allowed[x] >> u & 1)
                            for u in range(_NV)]
    empty_allowed = rules.cells_allowed_values([0] * _NC)
    legal_init = [sum(1 << x for x in range(_NC) if empty_allowed[x] >> u & 1)
                  for u in range(_NV)]
    subset_cells = [sum(1 << c for r in single.SUBSET_ROWS[s]
                        for c in range(r * rules.NUM_FIELDS, (r + 1) * rules.NUM_FIELDS))
                    for s in range(8)]
    subset_dice = [[1 if r in single.SUBSET_ROWS[s] else 0 for r in range(rules.NUM_ROWS)]
                   for s in range(8)]
    row_of = [c // rules.NUM_FIELDS for c in range(_NC)] + [rules.NUM_ROWS]
    pent_cols = [list(cells) for cells, _ in rules.PENTAGON_COLUMNS]
    pent_cells = [p for _, p in rules.PENTAGON_COLUMNS]
    row_last = [(r + 1) * rules.NUM_FIELDS - 1 for r in range(rules.NUM_ROWS)]
    thermo = np.array([[1.0 if i < m else 0.0 for i in range(rules.MAX_MISTHROWS)]
                       for m in range(rules.MAX_MISTHROWS + 1)], dtype=np.float32)
    value_onehot = np.eye(_NV, dtype=np.float32)[:, 1:]
    colours = np.array(subset_dice, dtype=np.float32)
    phase_onehot = np.zeros((4, 3), dtype=np.float32)
    phase_onehot[[CHOOSE, REROLL_DECISION, ENTRY], [0, 1, 2]] = 1.0
    obs_index = np.stack(single._observation_indices(P)).astype(np.int64)
    recip = np.array([0.0] + [1.0 / k for k in range(1, P + 1)], dtype=np.float32)
    return {
        "update": update.reshape((_NC + 1) * _NV, _NV).astype(np.int32),
        "legal_init": np.array(legal_init, dtype=np.int32),
        "subset_cells": np.array(subset_cells, dtype=np.int64),
        "subset_dice": np.array(subset_dice, dtype=np.int8),
        "row_of": np.array(row_of, dtype=np.int64),
        "pent_cols": np.array(pent_cols, dtype=np.int64),
        "pent_cells": np.array(pent_cells, dtype=np.int64),
        "row_last": np.array(row_last, dtype=np.int64),
        "thermo": thermo, "value_onehot": value_onehot,
        "colours": colours, "phase_onehot": phase_onehot,
        "active_onehot": np.eye(P, dtype=np.float32), "obs_index": obs_index,
        "recip": recip, "not_self": ~np.eye(P, dtype=bool),
        "seats": np.arange(P, dtype=np.int64)
    }


class BatchedDiceGame:
    """``num_games`` independent dice games of ``num_players`` seats, stepped together.

    Parameters
    ----------
    num_games, num_players:
        Batch size N >= 1 and seats 1..6 per game (1 = the solo variant).
    backend, device:
        ``"numpy"`` (CPU) or ``"torch"`` with any torch ``device``.
    seed:
        Seeds the engine's generator (``None``: fresh entropy).
    reward:
        ``"win"``, ``"margin"`` or ``"score"``, as in the ParallelEnv (default "win",
        "score" in solo play).
    start_player, random_start:
        Who is active first in every (auto-)reset game: ``start_player`` (default 0), or
        a seat drawn from the generator when ``random_start`` is true.
    final_observations:
        Also compute each finished game's final observation (costs a little per
        finished game; vector envs that report ``terminal_observation`` need it).
    """

    name = "dice"
    num_actions = NUM_ACTIONS
    pass_action = PASS

    def __init__(self, num_games: int, num_players: int = 2, *, backend: str = "numpy",
                 device: Any = None, seed: int | None = None, reward: str | None = None,
                 start_player: int = 0, random_start: bool = False,
                 final_observations: bool = False):
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) \
                or num_games < 1:
            raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) \
                or not 1 <= num_players <= 6:
            raise ValueError(f"num_players must be an integer in 1..6 for the dice game "
                             f"(1 = solo variant), got {num_players!r}")
        if reward is None:
            reward = "score" if num_players == 1 else "win"
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; choose one of {REWARDS}")
        if reward == "win" and num_players == 1:
            raise ValueError('reward="win" needs 2+ players; solo play has no winner '
                             '(use "score" or "margin")')
        if isinstance(start_player, bool) or not isinstance(start_player, (int, np.integer)) \
                or not 0 <= start_player < num_players:
            raise ValueError(f"start_player must be a seat in 0..{num_players - 1}, "
                             f"got {start_player!r}")
        self.backend: Backend = get_backend(backend, device)
        self.num_games = N = int(num_games)
        self.num_players = P = int(num_players)
        self.reward_kind = reward
        self.start_player = int(start_player)
        self.random_start = bool(random_start)
        self.final_observations = bool(final_observations)
        self.obs_size = single.observation_size(P)
        self.feature_size = self.obs_size
        B = self.backend
        self._t = {k: B.asarray(v, v.dtype if B.name == "numpy" else _torch_dtype(B, v))
                   for k, v in _numpy_tables(P).items()}
        ar = B.arange(N * P).reshape(N, P)
        # Flat offsets of each (game, seat) row, so per-seat reads and writes are 1-D gathers.
        self._base_value = ar * _NV
        self._base_cell = ar * (_NC + 1)
        self._base_row = ar * (rules.NUM_ROWS + 1)
        self._base_game = B.arange(N) * P
        self.gen = B.generator(seed)
        self.reset()

    # -- state -----------------------------------------------------------------------
    def reset(self, seed: int | None = None, start_player: Any = None) -> None:
        """Start all N games afresh.

        ``seed`` reseeds the generator. ``start_player`` (a seat, or an array of N
        seats) fixes who starts in this reset only; by default the constructor's rule.
        """
        B, N, P = self.backend, self.num_games, self.num_players
        if seed is not None:
            self.gen = B.generator(seed)
        if start_player is None:
            active = self._start_seats(N)
        else:
            active = B.as_int64(start_player, "start_player")
            if tuple(active.shape) not in ((), (N,)) or bool(((active < 0) | (active >= P)).any()):
                raise ValueError(f"start_player must be a seat in 0..{P - 1} or an array of "
                                 f"{N} such seats, got {start_player!r}")
            active = active + B.zeros((N,), B.int64)
        self.cells = B.zeros((N, P, _NC + 1), B.int8)
        self.legal_cells = B.zeros((N, P, _NV), B.int32)
        self.legal_cells[...] = self._t["legal_init"]
        self.row_count = B.zeros((N, P, rules.NUM_ROWS + 1), B.int8)
        self.full_rows = B.zeros((N, P), B.int8)
        self.misthrows = B.zeros((N, P), B.int8)
        self.active = active
        self.subset = B.zeros((N,), B.int64)
        self.dice = B.zeros((N, rules.NUM_ROWS), B.int8)
        self.value = B.zeros((N,), B.int64)
        self.turn = B.zeros((N,), B.int32)
        self.phase = CHOOSE
        self._scores = B.zeros((N, P), B.int64)
        self._legal = None

    def _start_seats(self, k: int) -> Any:
        B = self.backend
        if self.random_start:
            return B.integers(self.gen, 0, self.num_players, (k,), B.int64)
        return B.zeros((k,), B.int64) + self.start_player

    def state_bytes_per_game(self) -> float:
        """Bytes of game state per game (the arrays listed in the module docstring)."""
        arrays = (self.cells, self.legal_cells, self.row_count, self.full_rows, self.misthrows,
                  self.active,
                  self.subset, self.dice, self.value, self.turn)
        if self.reward_kind == "score":
            arrays += (self._scores,)
        total = sum(int(np.prod(tuple(a.shape))) * _itemsize(a) for a in arrays)
        return total / self.num_games

    # -- legality ------------------------------------------------------------------
    def legal_bits(self) -> Any:
        """Legal actions as int64 bitmasks (N, P): bit ``a`` set = action ``a`` legal."""
        if self._legal is None:
            B, t = self.backend, self._t
            if self.phase == ENTRY:
                lc = B.flat(self.legal_cells)[self._base_value + self.value[:, None]]
                self._legal = (B.astype(lc, B.int64) & t["subset_cells"][self.subset][:, None]) \
                    | _PASS_BIT
            else:
                bits = _CHOOSE_BITS if self.phase == CHOOSE else _REROLL_BITS
                is_active = t["seats"][None, :] == self.active[:, None]
                self._legal = B.where(is_active, bits, _PASS_BIT)
        return self._legal

    def action_masks(self) -> Any:
        """Legal-action masks (N, P, 37) int8, exactly the ParallelEnv's ``action_mask``."""
        return self.backend.unpack_bits(self.legal_bits(), NUM_ACTIONS)

    def allowed_values(self) -> Any:
        """The allowed-value bitmasks in :func:`rules.cells_allowed_values` layout (N, P, 27)."""
        B = self.backend
        cells = B.arange(_NC)
        values = B.arange(_NV)
        bits = (B.astype(self.legal_cells, B.int64)[..., None, :] >> cells[:, None]) & 1
        return B.astype((bits << values).sum(-1), B.int32)

    # -- stepping ------------------------------------------------------------------
    def step(self, actions: Any, chance: Any = None, *, validate: bool = True) -> DiceStepResult:
        """Apply one joint action per game: ``actions`` (N, P) integers.

        ``chance`` (N, 3) fixes the die faces (1..6) if this step rolls. With
        ``validate`` (default) an illegal action raises
        :class:`~qwinto_env.game.IllegalActionError` naming the game, seat and action, and
        nothing changes; ``validate=False`` trusts the caller (e.g. actions sampled
        from :meth:`legal_bits`).
        """
        B, N, P = self.backend, self.num_games, self.num_players
        a = B.as_int64(actions, "actions")
        if tuple(a.shape) != (N, P):
            raise IllegalActionError("the batch", tuple(a.shape),
                                     f"actions must have shape ({N}, {P}): one per game and seat")
        if validate:
            self._check(a)
        faces = None if chance is None else self._check_chance(chance)
        phase = self.phase
        self._legal = None
        rewards = B.zeros((N, P), B.float32)
        if phase == CHOOSE:
            act = B.flat(a)[self._base_game + self.active]
            self.subset = act - PASS
            self._roll(self._faces(faces), None)
            self.phase = REROLL_DECISION
        elif phase == REROLL_DECISION:
            rerolls = B.flat(a)[self._base_game + self.active] == REROLL
            if faces is not None or B.any(rerolls):
                self._roll(self._faces(faces), rerolls)
            self.phase = ENTRY
        else:
            return self._enter(a, rewards)
        empty = B.zeros((0,), B.int64)
        return DiceStepResult(rewards, B.zeros((N,), B.bool_), empty,
                              B.zeros((0, P), B.int64), B.zeros((0, P), B.float32), empty)

    def _check(self, a: Any) -> None:
        B = self.backend
        bad = (a < 0) | (a >= NUM_ACTIONS)
        bad = bad | (((self.legal_bits() >> B.where(bad, 0, a)) & 1) == 0)
        if B.any(bad):
            first = int(B.nonzero(B.flat(bad))[0])
            n, p = divmod(first, self.num_players)
            action = int(B.flat(a)[first])
            legal = [x for x in range(NUM_ACTIONS) if int(self.legal_bits()[n, p]) >> x & 1]
            reason = (f"out of range 0..{NUM_ACTIONS - 1}" if not 0 <= action < NUM_ACTIONS
                      else f"not legal now (legal: {legal})")
            raise IllegalActionError(f"game {n} seat {p}", action, reason)

    def _check_chance(self, chance: Any) -> Any:
        B = self.backend
        faces = B.as_int64(chance, "chance (die faces)")
        if tuple(faces.shape) != (self.num_games, rules.NUM_ROWS) \
                or bool(((faces < 1) | (faces > single.DIE_FACES)).any()):
            raise ValueError(f"chance must be die faces of shape ({self.num_games}, 3) "
                             f"(orange, yellow, purple), each in 1..{single.DIE_FACES}")
        return B.astype(faces, B.int8)

    def _faces(self, faces: Any) -> Any:
        if faces is not None:
            return faces
        B = self.backend
        return B.integers(self.gen, 1, single.DIE_FACES + 1, (self.num_games, rules.NUM_ROWS),
                          B.int8)

    def _roll(self, faces: Any, where: Any) -> None:
        B = self.backend
        dice = faces * self._t["subset_dice"][self.subset]
        if where is not None:
            dice = B.where(where[:, None], dice, self.dice)
        self.dice = dice
        self.value = B.astype(dice[:, 0] + dice[:, 1] + dice[:, 2], B.int64)  # <= 18: no overflow

    def _enter(self, a: Any, rewards: Any) -> DiceStepResult:
        B, t, P = self.backend, self._t, self.num_players
        value = self.value
        # Writes (a pass lands in the scratch column 27 / scratch row 3).
        B.flat(self.cells)[self._base_cell + a] = B.astype(value, B.int8)[:, None]
        writes = B.astype(a != PASS, B.int8)
        row_index = self._base_row + t["row_of"][a]
        count = B.flat(self.row_count)[row_index] + writes
        B.flat(self.row_count)[row_index] = count
        self.full_rows += B.astype(count == rules.NUM_FIELDS, B.int8)
        self.legal_cells &= B.take(t["update"], a * _NV + value[:, None], 0)
        seat_of_active = self._base_game + self.active
        missed = B.flat(a)[seat_of_active] == PASS
        B.flat(self.misthrows)[seat_of_active] += B.astype(missed, B.int8)
        self.turn += 1
        self.subset = value * 0
        self.value = value * 0
        self.dice = self.dice * 0
        self.phase = CHOOSE

        ended = (B.amax(self.full_rows, -1) >= rules.FULL_ROWS_TO_END) \
            | (B.flat(self.misthrows)[seat_of_active] >= rules.MAX_MISTHROWS)
        if self.reward_kind == "score":
            scores = self._score_of(self.cells, self.row_count, self.misthrows)
            rewards += B.astype(scores - self._scores, B.float32)
            self._scores = scores
        idx = B.nonzero(ended)
        k = int(idx.shape[0])
        if k == 0:
            empty = B.zeros((0,), B.int64)
            self._rotate()
            return DiceStepResult(rewards, ended, empty, B.zeros((0, P), B.int64),
                                  B.zeros((0, P), B.float32), empty)
        if self.reward_kind == "score":
            final_scores = self._scores[idx]
            final_returns = B.astype(final_scores, B.float32)
        else:
            final_scores = self._score_of(self.cells[idx], self.row_count[idx],
                                          self.misthrows[idx])
            final_returns = self._terminal_rewards(final_scores)
            rewards[idx] = final_returns
        final_obs = None
        if self.final_observations:
            zeros = B.zeros((k,), B.int64)
            feats = self._features(self.cells[idx], self.misthrows[idx], self.active[idx],
                                   OVER, zeros, zeros)
            final_obs = B.take(feats, t["obs_index"], 1)
        final_turns = self.turn[idx]
        self._rotate()
        self._restart(idx)
        return DiceStepResult(rewards, ended, idx, final_scores, final_returns, final_turns,
                              final_obs)

    def _rotate(self) -> None:
        self.active = self.active + 1
        self.active[self.active == self.num_players] = 0

    def _restart(self, idx: Any) -> None:
        """Fresh games in the rows ``idx`` (the batch is at the choose phase)."""
        k = int(idx.shape[0])
        self.cells[idx] = 0
        self.legal_cells[idx] = self._t["legal_init"]
        self.row_count[idx] = 0
        self.full_rows[idx] = 0
        self.misthrows[idx] = 0
        self.turn[idx] = 0
        self._scores[idx] = 0
        self.active[idx] = self._start_seats(k)

    # -- scoring and rewards ------------------------------------------------------------
    def _score_of(self, cells: Any, row_count: Any, misthrows: Any) -> Any:
        """Scores (..., P) int64 of sheets, like :func:`rules.cells_score`."""
        B, t = self.backend, self._t
        counts = B.astype(row_count[..., :rules.NUM_ROWS], B.int64)
        last = B.astype(cells[..., t["row_last"]], B.int64)
        rows = B.where(counts == rules.NUM_FIELDS, last, counts).sum(-1)
        complete = (cells[..., t["pent_cols"]] != 0).all(-1)
        pentagons = (B.astype(cells[..., t["pent_cells"]], B.int64) * complete).sum(-1)
        # A game ends at its 4th misthrow, so the rules' cap of 4 never binds here.
        return rows + pentagons - rules.MISTHROW_PENALTY * B.astype(misthrows, B.int64)

    def _terminal_rewards(self, scores: Any) -> Any:
        """:func:`qwinto_env.game.terminal_rewards` for (K, P) final scores, as float32."""
        B, t, P = self.backend, self._t, self.num_players
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

    def scores(self) -> Any:
        """Current score of every seat (N, P) int64, by the scoring rules."""
        return self._score_of(self.cells, self.row_count, self.misthrows)

    def sheets(self) -> Any:
        """The sheets (N, P, 27) int8 (a view; do not write)."""
        return self.cells[:, :, :_NC]

    # -- observations ----------------------------------------------------------------
    def features(self) -> Any:
        """Global feature vectors (N, F) float32, the single engine's ``features()``."""
        return self._features(self.cells, self.misthrows, self.active, self.phase,
                              self.subset, self.value)

    def observations(self) -> Any:
        """Ego-centric observations (N, P, obs_size) float32: ``features[index[seat]]``."""
        return self.backend.take(self.features(), self._t["obs_index"], 1)

    def _features(self, cells: Any, misthrows: Any, active: Any, phase: int, subset: Any,
                  value: Any) -> Any:
        B, t = self.backend, self._t
        k, P, S = int(cells.shape[0]), self.num_players, single.SEAT_BLOCK
        out = B.empty((k, self.feature_size), B.float32)
        sheets = B.astype(cells[:, :, :_NC], B.float32) / float(rules.MAX_VALUE)
        thermo = t["thermo"][B.astype(misthrows, B.int64)]
        for seat in range(P):  # P <= 6 column blocks; every game is written at once
            out[:, seat * S:seat * S + _NC] = sheets[:, seat]
            out[:, seat * S + _NC:(seat + 1) * S] = thermo[:, seat]
        base = P * S
        out[:, base:base + P] = t["active_onehot"][active]
        base += P
        out[:, base:base + 3] = t["phase_onehot"][phase]
        out[:, base + 3:base + 6] = t["colours"][subset]
        out[:, base + 6:base + 6 + rules.MAX_VALUE] = t["value_onehot"][value]
        out[:, base + 6 + rules.MAX_VALUE] = float(phase == REROLL_DECISION)
        return out


def _itemsize(a: Any) -> int:
    return a.itemsize if hasattr(a, "itemsize") else a.element_size()


def _torch_dtype(backend: Backend, arr: np.ndarray) -> Any:
    return {np.dtype(np.int8): backend.int8, np.dtype(np.int32): backend.int32,
            np.dtype(np.int64): backend.int64, np.dtype(np.float32): backend.float32,
            np.dtype(np.bool_): backend.bool_}[arr.dtype]
