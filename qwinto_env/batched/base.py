"""What the batched engines of both games share: the common construction, who starts,
the checks of a step's actions, and what a step reports.

Each engine (:class:`~qwinto_env.batched.BatchedDiceGame`,
:class:`~qwinto_env.batched.BatchedCardGame`) reads its game's facts from its spec
(:mod:`qwinto_env.spec`) and implements :meth:`BatchedGame._legal_at` over its own
legal-bit layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .. import rules
from ..game import IllegalActionError
from ..spec.base import GameSpec
from .backend import Backend, Rows, backend_of, get_backend
from .sheets import Sheets, check_batch_args


@dataclass
class StepResult:
    """What one batched step reports (arrays on the engine's backend and device).

    Full-batch fields, which a caller reads without a host sync (a GPU loop's fields):

    * ``rewards`` (N, P) float32 and ``terminated`` (N,) bool.
    * ``scores_at_end`` (N, P) int64, ``returns_at_end`` (N, P) float32 (sum of each
      seat's rewards over the game) and ``turns_at_end`` (N,) int32 (turns played): the
      games that ended in this step, at their rows (where ``terminated``); 0 elsewhere.
    * ``observations_at_end`` (N, P, obs_size) float32, when the engine keeps final
      observations and the step is an entry (else None): at the rows of the games that
      ended, the observation the ParallelEnv shows at the end (those games are already
      reset); other rows unspecified.

    The same for the K games that ended only, listed in ``done_index`` (K,) int64
    (ascending): ``final_scores`` (K, P), ``final_returns`` (K, P), ``final_turns`` (K,)
    and ``final_observation`` (K, P, obs_size) or None. They are computed from the
    full-batch fields on first read (cached): on torch, that read is a host sync.
    """

    rewards: Any
    terminated: Any
    scores_at_end: Any
    returns_at_end: Any
    turns_at_end: Any
    observations_at_end: Any = None

    @cached_property
    def done_index(self) -> Any:
        return backend_of(self.terminated).nonzero(self.terminated)

    @cached_property
    def final_scores(self) -> Any:
        return self.scores_at_end[self.done_index]

    @cached_property
    def final_returns(self) -> Any:
        return self.returns_at_end[self.done_index]

    @cached_property
    def final_turns(self) -> Any:
        return self.turns_at_end[self.done_index]

    @cached_property
    def final_observation(self) -> Any:
        if self.observations_at_end is None:
            return None
        return self.observations_at_end[self.done_index]


class BatchedGame:
    """The base of the batched engines (parameters:
    :class:`~qwinto_env.batched.BatchedDiceGame`)."""

    #: The game's facts; the attributes below are read from it.
    spec: GameSpec
    name: str
    num_actions: int
    pass_action: int
    steps_per_turn: int
    max_players: int
    #: The engine's tables on its backend (``obs_index``: per seat, its observation's features).
    _t: dict[str, Any]
    #: Per game (N,): the active seat and the turns completed (the engines keep them).
    active: Any
    turn: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        spec = cls.spec
        cls.name, cls.num_actions, cls.pass_action = spec.name, spec.num_actions, spec.pass_action
        cls.steps_per_turn, cls.max_players = spec.steps_per_turn, spec.max_players

    def __init__(self, num_games: int, num_players: int, *, backend: str, device: Any,
                 seed: int | None, reward: str | None, start_player: int,
                 random_start: bool, final_observations: bool):
        reward = check_batch_args(self.spec, num_games, num_players, reward, start_player,
                                  random_start=random_start,
                                  final_observations=final_observations)
        self.backend: Backend = get_backend(backend, device)
        self.num_games = int(num_games)
        self.num_players = int(num_players)
        self.reward_kind = reward
        self.start_player = int(start_player)
        self.random_start = bool(random_start)
        self.final_observations = bool(final_observations)
        self.sheet_state = Sheets(self.backend, self.num_games, self.num_players, reward)
        self._base_game = self.sheet_state.base_game
        self.gen = self.backend.generator(seed)

    # -- who starts ------------------------------------------------------------------
    def _reset_args(self, seed: Any, start_player: Any) -> tuple[Any, Any]:
        """A reset's generator (``self.gen`` unless ``seed`` is given) and ``start_player``
        as (N,) seats (None: the constructor's rule), checked before anything changes.

        Raises ``ValueError`` naming a bad ``seed`` or ``start_player`` (a seat, or N
        seats).
        """
        B, N, P = self.backend, self.num_games, self.num_players
        gen = self.gen if seed is None else B.generator(seed)
        if start_player is None:
            return gen, None
        active = B.as_int64(start_player, "start_player")
        if tuple(active.shape) not in ((), (N,)) or bool(((active < 0) | (active >= P)).any()):
            raise ValueError(f"start_player must be a seat in 0..{P - 1} or an array of "
                             f"{N} such seats, got {start_player!r}")
        return gen, active + B.zeros((N,), B.int64)

    def _begin_reset(self, gen: Any, active: Any) -> Any:
        """Adopt the checked ``gen``; the (N,) first active seats (``active``, or drawn by
        the constructor's rule when None)."""
        self.gen = gen
        return self._start_seats(self.num_games) if active is None else active

    def _start_seats(self, k: int) -> Any:
        """First active seats of ``k`` (auto-)reset games, by the constructor's rule."""
        B = self.backend
        if self.random_start:
            return B.integers(self.gen, 0, self.num_players, (k,), B.int64)
        return B.zeros((k,), B.int64) + self.start_player

    # -- legality ------------------------------------------------------------------
    def _legal_at(self, actions: Any) -> Any:
        """(N, P) bool: whether each in-range action is legal for its game and seat."""
        raise NotImplementedError

    def allowed_values(self) -> Any:
        """The allowed-value bitmasks in :func:`rules.cells_allowed_values` layout (N, P, 27)."""
        return self.sheet_state.allowed_values()

    # -- a step's actions ------------------------------------------------------------
    def check_actions(self, actions: Any) -> None:
        """Raise what a validated :meth:`step` raises for ``actions`` (N, P), changing
        nothing (e.g. to check a learner's actions before asking opponents for theirs)."""
        self._actions(actions, True)

    def _actions(self, actions: Any, validate: bool) -> Any:
        """``actions`` as an (N, P) int64 array; with ``validate``, every one legal.

        Raises :class:`~qwinto_env.game.IllegalActionError` naming the first bad game,
        seat and action (and the legal ones) before anything changes.
        """
        B, N, P = self.backend, self.num_games, self.num_players
        a = B.as_int64(actions, "actions")
        if tuple(a.shape) != (N, P):
            raise IllegalActionError("the batch", tuple(a.shape),
                                     f"actions must have shape ({N}, {P}): one per game and seat")
        if not validate:
            return a
        bad = (a < 0) | (a >= self.num_actions)
        bad = bad | ~self._legal_at(B.where(bad, 0, a))
        if B.any(bad):
            first = int(B.nonzero(B.flat(bad))[0])
            n, p = divmod(first, P)
            action = int(B.flat(a)[first])
            legal = [x for x in range(self.num_actions) if int(self.action_masks()[n, p, x])]
            reason = (f"out of range 0..{self.num_actions - 1}"
                      if not 0 <= action < self.num_actions else f"not legal now (legal: {legal})")
            raise IllegalActionError(f"game {n} seat {p}", action, reason)
        return a

    # -- the sheets and the observations -------------------------------------------------
    def scores(self) -> Any:
        """Current score of every seat (N, P) int64, by the scoring rules."""
        return self.sheet_state.current_scores()

    def sheets(self) -> Any:
        """The sheets (N, P, 27) int8 (a view; do not write)."""
        return self.sheet_state.cells[:, :, :rules.NUM_CELLS]

    @property
    def misthrows(self) -> Any:
        """Misthrows per seat (N, P) int8 (do not write)."""
        return self.sheet_state.misthrows

    def features(self) -> Any:
        """Global feature vectors (N, F) float32, the single engine's ``features()``."""
        raise NotImplementedError

    def observations(self) -> Any:
        """Ego-centric observations (N, P, obs_size) float32: ``features[index[seat]]``
        (in the card game, the seat's own hand only)."""
        return self.backend.take(self.features(), self._t["obs_index"], 1)

    # -- the end of a turn ----------------------------------------------------------------
    def _next_seats(self) -> Any:
        """The seats after the active ones (N,)."""
        nxt = self.active + 1
        return self.backend.where(nxt == self.num_players, 0, nxt)

    def _end_turn(self, ended: Any, rewards: Any, next_active: Any) -> StepResult:
        """Finish an entry step: add the rewards, report the games that ``ended`` (N,) and
        restart them (first seats by the constructor's rule); the others go on with
        ``next_active`` (N,) seats. The ended games are :meth:`Backend.rows`: no host
        sync on torch."""
        B, sheet = self.backend, self.sheet_state
        sheet.entry_rewards(rewards)
        rows = B.rows(ended)
        if rows.empty:
            self.active = next_active
            return self._no_endings(rewards, ended)
        # Spread (copied) before the restart below writes over the state ``take`` gave.
        out = StepResult(rewards, ended, *map(rows.spread, sheet.finish(rows, rewards)),
                         rows.spread(rows.take(self.turn)))
        if self.final_observations:
            features = self._final_features(rows)
            out.observations_at_end = rows.spread(B.take(features, self._t["obs_index"], 1),
                                                  zero_rest=False)
        self.active = next_active
        sheet.restart(rows)
        rows.put(self.turn, 0)
        rows.put(self.active, self._start_seats(rows.count))
        self._restart(rows)
        return out

    def _final_features(self, rows: Rows) -> Any:
        """Global features (``rows.count``, F) of the ended games as the game-over step
        shows them."""
        raise NotImplementedError

    def _restart(self, rows: Rows) -> None:
        """Restart the game-specific state of the games ``rows`` (the sheets are restarted)."""

    # -- what a step reports -------------------------------------------------------------
    def _no_endings(self, rewards: Any, terminated: Any = None) -> StepResult:
        """The report of a step in which no game ended (``terminated``: all false)."""
        B, N, P = self.backend, self.num_games, self.num_players
        if terminated is None:
            terminated = B.zeros((N,), B.bool_)
        return StepResult(rewards, terminated, B.zeros((N, P), B.int64),
                          B.zeros((N, P), B.float32), B.zeros((N,), B.int32))
