"""What the batched engines of both games share: the common construction, who starts,
and the checks of a step's actions.

Each engine (:class:`~qwinto_env.batched.BatchedDiceGame`,
:class:`~qwinto_env.batched.BatchedCardGame`) names its game's constants as class
attributes and implements :meth:`BatchedGame._legal_at` over its own legal-bit layout.
"""

from __future__ import annotations

from typing import Any

from ..game import IllegalActionError
from .backend import Backend, get_backend
from .sheets import Sheets, check_batch_args


class BatchedGame:
    """The base of the batched engines (parameters: :class:`~qwinto_env.batched.BatchedDiceGame`)."""

    name: str
    num_actions: int
    pass_action: int
    steps_per_turn: int
    #: Largest player count of the game, and its name in error messages.
    max_players: int
    rules_name: str

    def __init__(self, num_games: int, num_players: int, *, backend: str, device: Any,
                 seed: int | None, reward: str | None, start_player: int,
                 random_start: bool, final_observations: bool):
        reward = check_batch_args(num_games, num_players, self.max_players, self.rules_name,
                                  reward, start_player)
        self.backend: Backend = get_backend(backend, device)
        self.num_games = int(num_games)
        self.num_players = int(num_players)
        self.reward_kind = reward
        self.start_player = int(start_player)
        self.random_start = bool(random_start)
        self.final_observations = bool(final_observations)
        self.sheet = Sheets(self.backend, self.num_games, self.num_players, reward)
        self._base_game = self.sheet.base_game
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
        return self.sheet.allowed_values()

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
