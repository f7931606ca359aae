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

=====================  ==============  ====================================================
array                  shape, dtype    content
=====================  ==============  ====================================================
``sheet.cells``        (N,P,28) int8   sheets, cell ``r*9+f`` (0 = empty); column 27 is
                                       scratch (a pass "writes" there: no branch)
``sheet.legal_cells``  (N,P,19) int32  the rules' allowed-value bitmasks, transposed: bit
                                       ``c`` of ``[n, p, v]`` is bit ``v`` of
                                       ``rules.cells_allowed_values(...)[c]``; a write
                                       ANDs a row of a table built from
                                       ``rules.allowed_after_write``
``sheet.row_count``    (N,P,4) int8    fields written per row (index 3: scratch, stays 0)
``sheet.full_rows``    (N,P) int8      complete rows per seat
``sheet.misthrows``    (N,P) int8      misthrows per seat
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
from .base import BatchedGame
from .sheets import to_backend

NUM_ACTIONS = single.NUM_ACTIONS
PASS = single.PASS
ROLL_FIRST = single.ROLL_FIRST
KEEP = single.KEEP
REROLL = single.REROLL
CHOOSE, REROLL_DECISION, ENTRY, OVER = single.CHOOSE, single.REROLL_DECISION, single.ENTRY, \
    single.OVER

_NV = rules.MAX_VALUE + 1          # value slots 0..18 (0 unused)
_NC = rules.NUM_CELLS              # 27 cells
_ALL_DICE = len(single.SUBSET_ROWS) - 1  # the colour subset of every die, the last roll id
_PASS_BIT = 1 << PASS
_CHOOSE_BITS = sum(1 << (ROLL_FIRST + s) for s in range(_ALL_DICE))
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
    """The dice game's encoding tables as numpy arrays, derived from qwinto_env.dice."""
    subset_dice = [[1 if r in single.SUBSET_ROWS[s] else 0 for r in range(rules.NUM_ROWS)]
                   for s in range(8)]
    phase_onehot = np.zeros((4, 3), dtype=np.float32)
    phase_onehot[[CHOOSE, REROLL_DECISION, ENTRY], [0, 1, 2]] = 1.0
    return {
        "subset_dice": np.array(subset_dice, dtype=np.int8),
        "value_onehot": np.eye(_NV, dtype=np.float32)[:, 1:],
        "colours": np.array(subset_dice, dtype=np.float32),
        "phase_onehot": phase_onehot,
        "active_onehot": np.eye(num_players, dtype=np.float32),
        "obs_index": np.stack(single._observation_indices(num_players)).astype(np.int64),
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

    name = "dice"
    num_actions = NUM_ACTIONS
    pass_action = PASS
    #: Steps of one turn: choose dice, keep or re-roll, entry.
    steps_per_turn = 3
    max_players = 6
    rules_name = "dice"

    def __init__(self, num_games: int, num_players: int = 2, *, backend: str = "numpy",
                 device: Any = None, seed: int | None = None, reward: str | None = None,
                 start_player: int = 0, random_start: bool = False,
                 final_observations: bool = False):
        super().__init__(num_games, num_players, backend=backend, device=device, seed=seed,
                         reward=reward, start_player=start_player, random_start=random_start,
                         final_observations=final_observations)
        self.obs_size = single.observation_size(self.num_players)
        self.feature_size = self.obs_size
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
        self.sheet.reset()
        self.active = active
        self.subset = B.zeros((N,), B.int64)
        self.dice = B.zeros((N, rules.NUM_ROWS), B.int8)
        self.value = B.zeros((N,), B.int64)
        self.turn = B.zeros((N,), B.int32)
        self.phase = CHOOSE
        self._legal = None

    def state_bytes_per_game(self) -> float:
        """Bytes of game state per game (the arrays listed in the module docstring)."""
        arrays = self.sheet.arrays() + (self.active, self.subset, self.dice, self.value,
                                        self.turn)
        return sum(self.backend.nbytes(a) for a in arrays) / self.num_games

    # -- legality ------------------------------------------------------------------
    def legal_bits(self) -> Any:
        """Legal actions as int64 bitmasks (N, P): bit ``a`` set = action ``a`` legal."""
        if self._legal is None:
            B, t = self.backend, self._t
            if self.phase == ENTRY:
                self._legal = self.sheet.legal_writes(self.value, self.subset)
            else:
                bits = _CHOOSE_BITS if self.phase == CHOOSE else _REROLL_BITS
                is_active = t["seats"][None, :] == self.active[:, None]
                self._legal = B.where(is_active, bits, _PASS_BIT)
        return self._legal

    def action_masks(self) -> Any:
        """Legal-action masks (N, P, 37) int8, exactly the ParallelEnv's ``action_mask``."""
        return self.backend.unpack_bits(self.legal_bits(), NUM_ACTIONS)

    def _legal_at(self, actions: Any) -> Any:
        return ((self.legal_bits() >> actions) & 1) == 1

    # -- stepping ------------------------------------------------------------------
    def step(self, actions: Any, chance: Any = None, *, validate: bool = True) -> DiceStepResult:
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
        legal = self.legal_bits() if phase == ENTRY else None
        self._legal = None
        rewards = B.zeros((N, P), B.float32)
        if phase == CHOOSE:
            act = B.flat(a)[self._base_game + self.active]
            # A non-roll id still rolls 1..7 colours: a legal roll, and an index in range.
            self.subset = B.clip(act - PASS, 1, _ALL_DICE)
            self._roll(self._faces(faces), None)
            self.phase = REROLL_DECISION
        elif phase == REROLL_DECISION:
            rerolls = B.flat(a)[self._base_game + self.active] == REROLL
            if faces is not None or B.any(rerolls):
                self._roll(self._faces(faces), rerolls)
            self.phase = ENTRY
        else:
            return self._enter(a, legal, rewards)
        empty = B.zeros((0,), B.int64)
        return DiceStepResult(rewards, B.zeros((N,), B.bool_), empty,
                              B.zeros((0, P), B.int64), B.zeros((0, P), B.float32), empty)

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

    def _enter(self, a: Any, legal: Any, rewards: Any) -> DiceStepResult:
        B, P, sheet = self.backend, self.num_players, self.sheet
        ended = sheet.enter(a, self.value, self._base_game + self.active, legal)
        self.turn += 1
        self.subset = self.subset * 0
        self.value = self.value * 0
        self.dice = self.dice * 0
        self.phase = CHOOSE
        sheet.entry_rewards(rewards)
        idx = B.nonzero(ended)
        k = int(idx.shape[0])
        if k == 0:
            empty = B.zeros((0,), B.int64)
            self._rotate()
            return DiceStepResult(rewards, ended, empty, B.zeros((0, P), B.int64),
                                  B.zeros((0, P), B.float32), empty)
        final_scores, final_returns = sheet.finish(idx, rewards)
        final_obs = None
        if self.final_observations:
            zeros = B.zeros((k,), B.int64)
            feats = self._features(idx, self.active[idx], OVER, zeros, zeros)
            final_obs = B.take(feats, self._t["obs_index"], 1)
        final_turns = self.turn[idx]
        self._rotate()
        sheet.restart(idx)
        self.turn[idx] = 0
        self.active[idx] = self._start_seats(k)
        return DiceStepResult(rewards, ended, idx, final_scores, final_returns, final_turns,
                              final_obs)

    def _rotate(self) -> None:
        self.active = self.active + 1
        self.active[self.active == self.num_players] = 0

    def scores(self) -> Any:
        """Current score of every seat (N, P) int64, by the scoring rules."""
        return self.sheet.current_scores()

    def sheets(self) -> Any:
        """The sheets (N, P, 27) int8 (a view; do not write)."""
        return self.sheet.cells[:, :, :_NC]

    @property
    def misthrows(self) -> Any:
        """Misthrows per seat (N, P) int8 (do not write)."""
        return self.sheet.misthrows

    # -- observations ----------------------------------------------------------------
    def features(self) -> Any:
        """Global feature vectors (N, F) float32, the single engine's ``features()``."""
        return self._features(None, self.active, self.phase, self.subset, self.value)

    def observations(self) -> Any:
        """Ego-centric observations (N, P, obs_size) float32: ``features[index[seat]]``."""
        return self.backend.take(self.features(), self._t["obs_index"], 1)

    def _features(self, idx: Any, active: Any, phase: int, subset: Any, value: Any) -> Any:
        """Features of the games ``idx`` (None: all) as if in ``phase``, with these
        active seats, rolled colours and values."""
        B, t, P = self.backend, self._t, self.num_players
        k = self.num_games if idx is None else int(idx.shape[0])
        out = B.empty((k, self.feature_size), B.float32)
        self.sheet.write_features(out, idx, single.SEAT_BLOCK)
        base = P * single.SEAT_BLOCK
        out[:, base:base + P] = t["active_onehot"][active]
        base += P
        out[:, base:base + 3] = t["phase_onehot"][phase]
        out[:, base + 3:base + 6] = t["colours"][subset]
        out[:, base + 6:base + 6 + rules.MAX_VALUE] = t["value_onehot"][value]
        out[:, base + 6 + rules.MAX_VALUE] = float(phase == REROLL_DECISION)
        return out

