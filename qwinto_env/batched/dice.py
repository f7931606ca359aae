"""Qwinto (dice game) as a batched engine: N independent games per call, numpy or torch.

Same rules, same ``Discrete(37)`` action layout, same observation features and masks
as :class:`qwinto_env.dice.DiceGame` and the ParallelEnv (``obs[n, seat]`` equals the
single engine's ``features()[observation_index(seat)]`` bit for bit). The game's facts
(action ids, phases, player limits, the observation layout) come from
:mod:`qwinto_env.spec.dice` and the sheet tables from :mod:`qwinto_env.rules`; the phase
machine is written a second time here, vectorised, for speed. **The contract between the
two engines is the differential tests** (``tests/test_batched_dice.py``: the same games,
step by step, give the same observations, masks, rewards, scores and endings): a rule
change is made in both engines and proven by them.

Quick use::

    import numpy as np
    from qwinto_env.batched import BatchedDiceGame, uniform_legal

    games = BatchedDiceGame(1024, num_players=2, backend="numpy", seed=0)
    for _ in range(300):
        actions = uniform_legal(games.backend, games.legal_bits(), games.gen)
        out = games.step(actions)          # out.rewards (N, P), out.terminated (N,)
    obs, masks = games.observations(), games.action_masks()   # (N, P, 89), (N, P, 37)

State (leading dimension N = ``num_games``; P = ``num_players``):

=====================  ==============  ====================================================
array                  shape, dtype    content
=====================  ==============  ====================================================
``sheet_state.cells``  (N,P,28) int8   sheets, cell ``r*9+f`` (0 = empty); column 27 is
                                       scratch (a pass "writes" there: no branch)
``sheet_state.``       (N,P,19) int32  the rules' allowed-value bitmasks, transposed: bit
``legal_cells``                        ``c`` of ``[n, p, v]`` is bit ``v`` of
                                       ``rules.cells_allowed_values(...)[c]``; a write
                                       ANDs a row of a table built from
                                       ``rules.allowed_after_write``
``sheet_state.``       (N,P,4) int8    fields written per row (index 3: scratch, stays 0)
``row_count``
``sheet_state.``       (N,P) int8      complete rows per seat
``full_rows``
``sheet_state.``       (N,P) int8      misthrows per seat
``misthrows``
``active``             (N,) int64      active seat
``subset``             (N,) int64      rolled colours bitmask (0 before the roll)
``dice``               (N,3) int8      faces of the rolled dice (0 for dice not rolled)
``value``              (N,) int64      rolled value (0 before the roll)
``turn``               (N,) int32      turns completed in the current game
``phase``              Python int      CHOOSE, REROLL_DECISION or ENTRY, for the batch
=====================  ==============  ====================================================

Every turn has exactly three steps and a game can only end at an entry step, after
which its replacement starts at the choose phase: so all games of a batch are always in
the same phase, and ``phase`` (and the re-roll flag, which is ``phase ==
REROLL_DECISION``) is one number for the batch. Keeping the legal cells per *value*
(``legal_cells``) makes every decision point's legal set one gather per seat.

Chance: ``step(actions, chance=faces)`` with ``faces`` of shape (N, 3) (orange, yellow,
purple, each 1..6) fixes the dice of a rolling step, like the single engine's
``chance=(o, y, p)``; otherwise the faces come from ``gen`` (a ``numpy.random.Generator``
or a ``torch.Generator`` on the device, seeded by ``seed``/``reset(seed=...)``).

Finished games reset automatically; :class:`~qwinto_env.batched.base.StepResult` reports
which games ended (``terminated``), their final scores, returns (the sum of the seat's
rewards over the episode), lengths in turns and optionally their final observations.

Host syncs: on torch, ``observations()``, ``action_masks()``, ``legal_bits()`` and
``step(actions, validate=False)`` without ``chance`` never make the device wait for the
host (games end and restart by masks over the batch), nor does reading the step's
full-batch fields; ``validate=True`` and ``chance`` read values to name bad input.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import rules
from ..spec.dice import (CHOOSE, DIE_FACES, ENTRY, KEEP, OVER, PASS, REROLL, REROLL_DECISION,
                         ROLL_OFFSET, ROLLS, SEAT, SPEC, SUBSET_ROWS, observation_indices,
                         observation_layout)
from .base import BatchedGame, StepResult
from .backend import Rows, to_backend
from .sheets import VALUE_SLOTS, check_sheets, position_array

#: The subset of every die: the largest a non-roll id is clipped to.
_ALL_DICE = len(SUBSET_ROWS) - 1
_PASS_BIT = 1 << PASS
_CHOOSE_BITS = sum(1 << a for a in ROLLS)
_REROLL_BITS = (1 << KEEP) | (1 << REROLL)


@functools.lru_cache(maxsize=None)
def _numpy_tables(num_players: int) -> dict[str, np.ndarray]:
    """The dice game's encoding tables as numpy arrays, derived from its spec."""
    subset_dice = [[1 if r in rows else 0 for r in range(rules.NUM_ROWS)] for rows in SUBSET_ROWS]
    phase_onehot = np.zeros((OVER + 1, OVER), dtype=np.float32)  # OVER: no flag
    phase_onehot[range(OVER), range(OVER)] = 1.0
    return {
        "subset_dice": np.array(subset_dice, dtype=np.int8),
        "value_onehot": np.eye(VALUE_SLOTS, dtype=np.float32)[:, 1:],
        "colours": np.array(subset_dice, dtype=np.float32),
        "phase_onehot": phase_onehot,
        "active_onehot": np.eye(num_players, dtype=np.float32),
        "obs_index": np.stack(observation_indices(num_players)).astype(np.int64),
        "seats": np.arange(num_players, dtype=np.int64),
    }


class BatchedDiceGame(BatchedGame):
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

    spec = SPEC

    def __init__(self, num_games: int, num_players: int = 2, *, backend: str = "numpy",
                 device: Any = None, seed: int | None = None, reward: str | None = None,
                 start_player: int = 0, random_start: bool = False,
                 final_observations: bool = False):
        super().__init__(num_games, num_players, backend=backend, device=device, seed=seed,
                         reward=reward, start_player=start_player, random_start=random_start,
                         final_observations=final_observations)
        self._layout = observation_layout(self.num_players)
        self.obs_size = self.feature_size = self._layout.size
        self._t = to_backend(self.backend, _numpy_tables(self.num_players))
        self.reset()

    # -- state -----------------------------------------------------------------------
    def reset(self, seed: int | None = None, start_player: Any = None) -> None:
        """Start all N games afresh.

        ``seed`` reseeds the generator. ``start_player`` (a seat, or an array of N
        seats) fixes who starts in this reset only; by default the constructor's rule.
        A bad ``seed`` or ``start_player`` raises ``ValueError`` and changes nothing.
        """
        B, N = self.backend, self.num_games
        active = self._begin_reset(*self._reset_args(seed, start_player))
        self.sheet_state.reset()
        self.active = active
        self.subset = B.zeros((N,), B.int64)
        self.dice = B.zeros((N, rules.NUM_ROWS), B.int8)
        self.value = B.zeros((N,), B.int64)
        self.turn = B.zeros((N,), B.int32)
        self.phase = CHOOSE
        self._legal = None

    def set_positions(self, cells: Any, misthrows: Any, active: Any, phase: int,
                      subset: Any = 0, value: Any = 0, *, validate: bool = True) -> None:
        """Put every game at a given position (what search bots plan from).

        ``cells`` (N, P, 27) and ``misthrows`` (N, P) are the seats' sheets, ``active``
        (N,) the active seats, ``phase`` (one for the batch) ``CHOOSE``,
        ``REROLL_DECISION`` or ``ENTRY``; after a roll ``subset`` (N,) is the rolled
        colours (bitmask 1..7) and ``value`` (N,) their sum. Which faces made the sum does
        not matter to the rules (a re-roll rolls all the chosen dice again). The turn
        counters restart at 0. The legal cells, row counts and running scores are derived
        as the writes that led to the sheets would have.

        With ``validate`` (default) a bad argument raises ``ValueError`` naming it, before
        anything changes: sheets that no running game has (see
        :func:`~.sheets.check_sheets`), a seat or phase out of range, a roll that the
        phase does not have, a sum the rolled dice cannot show.
        """
        B, N, P = self.backend, self.num_games, self.num_players
        subset, value, active = (position_array(x, name, (N,)) for x, name in
                                 ((subset, "subset"), (value, "value"), (active, "active")))
        if validate:
            check_sheets(cells, misthrows, (N, P))
            self._check_position(active, phase, subset, value)
        dice = np.zeros((N, rules.NUM_ROWS), dtype=np.int8)
        left = value.copy()
        count = np.array([len(rows) for rows in SUBSET_ROWS])[subset]
        for r in range(rules.NUM_ROWS):  # the highest faces first, one die per rolled row
            has = (subset >> r) & 1 == 1
            count = count - has
            face = np.clip(left - count, 1, DIE_FACES) * has
            dice[:, r], left = face, left - face
        self.sheet_state.load(B.asarray(cells, B.int64), B.asarray(misthrows, B.int64))
        # copies: the engine writes its state in place, the caller keeps its arrays
        self.active, self.subset, self.value = (B.asarray(x, B.int64)
                                                for x in (active, subset, value))
        self.dice = B.asarray(dice, B.int8)
        self.turn = B.zeros((N,), B.int32)
        self.phase = int(phase)
        self._legal = None

    def _check_position(self, active: np.ndarray, phase: Any, subset: np.ndarray,
                        value: np.ndarray) -> None:
        """Raise ``ValueError`` for a position :meth:`set_positions` cannot set."""
        P = self.num_players
        if ((active < 0) | (active >= P)).any():
            raise ValueError(f"active must be seats in 0..{P - 1}, got {active.tolist()}")
        if isinstance(phase, bool) or phase not in (CHOOSE, REROLL_DECISION, ENTRY):
            raise ValueError(f"phase must be CHOOSE, REROLL_DECISION or ENTRY "
                             f"({CHOOSE}, {REROLL_DECISION}, {ENTRY}), got {phase!r}")
        if phase == CHOOSE:
            if subset.any() or value.any():
                raise ValueError("subset and value must be 0 before the roll (phase CHOOSE)")
            return
        if ((subset < 1) | (subset > _ALL_DICE)).any():
            raise ValueError(f"subset must be rolled colours 1..{_ALL_DICE} after the roll, "
                             f"got {subset.tolist()}")
        count = np.array([len(rows) for rows in SUBSET_ROWS])[subset]
        if ((value < count) | (value > DIE_FACES * count)).any():
            raise ValueError(f"value must be a sum the rolled dice can show, got "
                             f"{value.tolist()} for subsets {subset.tolist()}")

    def state_bytes_per_game(self) -> float:
        """Bytes of game state per game (the arrays listed in the module docstring)."""
        arrays = self.sheet_state.arrays() + (self.active, self.subset, self.dice, self.value,
                                        self.turn)
        return sum(self.backend.nbytes(a) for a in arrays) / self.num_games

    # -- legality ------------------------------------------------------------------
    def legal_bits(self) -> Any:
        """Legal actions as int64 bitmasks (N, P): bit ``a`` set = action ``a`` legal.

        A new array each call: the caller may write it (e.g. narrow it before
        :func:`~qwinto_env.batched.uniform_legal`) without changing what the engine
        allows."""
        return self.backend.copy(self._legal_bits())

    def _legal_bits(self) -> Any:
        """:meth:`legal_bits`, computed once per step and shared by the step's checks
        (never given out: a caller's writes would make illegal actions legal)."""
        if self._legal is None:
            B, t = self.backend, self._t
            if self.phase == ENTRY:
                self._legal = self.sheet_state.legal_writes(self.value, self.subset)
            else:
                bits = _CHOOSE_BITS if self.phase == CHOOSE else _REROLL_BITS
                is_active = t["seats"][None, :] == self.active[:, None]
                self._legal = B.where(is_active, bits, _PASS_BIT)
        return self._legal

    def action_masks(self) -> Any:
        """Legal-action masks (N, P, 37) int8, exactly the ParallelEnv's ``action_mask``."""
        return self.backend.unpack_bits(self._legal_bits(), self.num_actions)

    def _legal_at(self, actions: Any) -> Any:
        return ((self._legal_bits() >> actions) & 1) == 1

    # -- stepping ------------------------------------------------------------------
    def step(self, actions: Any, chance: Any = None, *, validate: bool = True) -> StepResult:
        """Apply one joint action per game: ``actions`` (N, P) integers.

        ``chance`` (N, 3) fixes the die faces (1..6) if this step rolls. With
        ``validate`` (default) an illegal action raises
        :class:`~qwinto_env.game.IllegalActionError` naming the game, seat and action, and
        nothing changes; ``validate=False`` skips that check (no host synchronisation),
        for callers whose actions are legal (e.g. sampled from :meth:`legal_bits`): an
        illegal action then leaves its own game in some legal state of the rules (which
        one is unspecified) and never touches another game. Bad shapes, dtypes and
        ``chance`` raise ``ValueError`` or ``IllegalActionError`` either way, before
        anything changes.
        """
        B, N, P = self.backend, self.num_games, self.num_players
        a = self._actions(actions, validate)
        faces = None if chance is None else self._check_chance(chance)
        phase = self.phase
        legal = self._legal_bits() if phase == ENTRY else None
        self._legal = None
        rewards = B.zeros((N, P), B.float32)
        if phase == CHOOSE:
            act = B.flat(a)[self._base_game + self.active]
            # A non-roll id still rolls 1..7 colours: a legal roll, and an index in range.
            self.subset = B.clip(act - ROLL_OFFSET, 1, _ALL_DICE)
            self._roll(self._faces(faces), None)
            self.phase = REROLL_DECISION
        elif phase == REROLL_DECISION:
            rerolls = B.flat(a)[self._base_game + self.active] == REROLL
            if faces is not None or not B.known_empty(rerolls):
                self._roll(self._faces(faces), rerolls)
            self.phase = ENTRY
        else:
            return self._enter(a, legal, rewards)
        return self._no_endings(rewards)

    def _check_chance(self, chance: Any) -> Any:
        B = self.backend
        faces = B.as_int64(chance, "chance (die faces)")
        if tuple(faces.shape) != (self.num_games, rules.NUM_ROWS) \
                or bool(((faces < 1) | (faces > DIE_FACES)).any()):
            raise ValueError(f"chance must be die faces of shape ({self.num_games}, 3) "
                             f"(orange, yellow, purple), each in 1..{DIE_FACES}")
        return B.astype(faces, B.int8)

    def _faces(self, faces: Any) -> Any:
        if faces is not None:
            return faces
        B = self.backend
        return B.integers(self.gen, 1, DIE_FACES + 1, (self.num_games, rules.NUM_ROWS), B.int8)

    def _roll(self, faces: Any, where: Any) -> None:
        B = self.backend
        dice = faces * self._t["subset_dice"][self.subset]
        if where is not None:
            dice = B.where(where[:, None], dice, self.dice)
        self.dice = dice
        # <= 18: no overflow; numpy sums a 3-wide axis 7x slower than these adds (a hot path)
        self.value = B.astype(dice[:, 0] + dice[:, 1] + dice[:, 2], B.int64)

    def _enter(self, a: Any, legal: Any, rewards: Any) -> StepResult:
        ended = self.sheet_state.enter(a, self.value, self._base_game + self.active, legal)
        self.turn += 1
        self.subset = self.subset * 0
        self.value = self.value * 0
        self.dice = self.dice * 0
        self.phase = CHOOSE
        return self._end_turn(ended, rewards, self._next_seats())

    def _final_features(self, rows: Rows) -> Any:
        zeros = self.backend.zeros((rows.count,), self.backend.int64)
        return self._features(rows, rows.take(self.active), OVER, zeros, zeros)

    # -- observations ----------------------------------------------------------------
    def features(self) -> Any:
        """Global feature vectors (N, F) float32, the single engine's ``features()``."""
        return self._features(None, self.active, self.phase, self.subset, self.value)

    def _features(self, rows: Rows | None, active: Any, phase: int, subset: Any,
                  value: Any) -> Any:
        """Features of the games ``rows`` (None: all) as if in ``phase``, with these
        active seats, rolled colours and values."""
        B, t, layout = self.backend, self._t, self._layout
        common = layout.common
        k = self.num_games if rows is None else rows.count
        out = B.empty((k, self.feature_size), B.float32)
        self.sheet_state.write_features(out, rows, SEAT.size)
        out[:, layout.active] = t["active_onehot"][active]
        out[:, common.phase] = t["phase_onehot"][phase]
        out[:, common.colours] = t["colours"][subset]
        out[:, common.value] = t["value_onehot"][value]
        out[:, common.reroll.start] = float(phase == REROLL_DECISION)
        return out
