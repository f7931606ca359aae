"""What every Qwinto game engine offers the front-ends, and the errors they raise.

A game engine holds one game's state in plain Python objects, draws chance from a
generator the caller seeds (or takes it from the caller), validates whole joint
actions before it changes anything, and exposes its observation as one global
feature vector plus, per seat, the indices that make that seat's ego-centric view.
Front-ends (the PettingZoo env, the Gymnasium env, the terminal player) only use
this interface, so both games plug into all of them.
"""

from __future__ import annotations

import abc
from typing import Any, Sequence

import numpy as np

from . import rules
from .spec.base import SHEET, GameSpec


class IllegalActionError(ValueError):
    """An action that the rules or the action space do not allow.

    ``agent`` is the seat (or agent name) that chose it, ``action`` the value given,
    ``reason`` the rule it breaks, ``hint`` (may be empty) what the user can do about
    it. The game state is unchanged when this is raised.
    """

    def __init__(self, agent: Any, action: Any, reason: str, hint: str = ""):
        self.agent, self.action, self.reason, self.hint = agent, action, reason, hint
        message = f"illegal action {action!r} for {agent}: {reason}"
        super().__init__(f"{message}; {hint}" if hint else message)


def check_seed(seed: Any, limit: int | None = None) -> int | None:
    """``seed`` as a Python int (or ``None``); ValueError naming it unless it is a
    non-negative integer, below ``limit`` where one is given.

    Numpy integers are accepted like Python ints; bools, floats, strings and negative
    numbers are refused, as Gymnasium's ``reset(seed=...)`` refuses them (bools too,
    which Gymnasium lets through as 0 and 1: a bool seed is a bug, not a seed).
    """
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be None or a non-negative integer, "
                         f"got {type(seed).__name__} {seed!r}")
    if seed < 0 or (limit is not None and seed >= limit):
        bound = "a non-negative integer" if limit is None else f"an integer in 0..{limit - 1:,}"
        raise ValueError(f"seed must be None or {bound}, got {seed!r}")
    return int(seed)


def type_problem(action: Any) -> str | None:
    """Why ``action`` is no integer action at all (a bug in the caller, which
    ``illegal_action="pass"`` does not forgive), or ``None``. Python and numpy integers
    and 0-d integer arrays are actions; bools are not."""
    if isinstance(action, np.ndarray):
        if action.shape == () and action.dtype.kind in "iu":
            return None
        # "got ndarray" alone reads as if no array were taken, while 0-d ones are
        return (f"actions must be integers or 0-d integer arrays, got an array of shape "
                f"{action.shape} and dtype {action.dtype}")
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        return f"actions must be integers, got {type(action).__name__}"
    return None


def default_of(legal: Sequence[int], pass_action: int) -> int:
    """The default of the legal actions ``legal`` (ascending): the pass where it is legal,
    else the highest; what an illegal action is replaced by when illegal actions are
    forgiven."""
    return pass_action if pass_action in legal else int(legal[-1])


class Game(abc.ABC):
    """One game of Qwinto (dice or cards) for ``num_players`` seats.

    Subclasses keep the global features in ``self._feats`` (the sheet blocks are written
    here, at the offsets :meth:`_locate_sheets` sets).
    """

    #: The game's facts (:mod:`qwinto_env.spec`); the three attributes below are read from it.
    spec: GameSpec
    #: Short name of the game, "dice" or "cards".
    name: str
    #: Size of the ``Discrete`` action space.
    num_actions: int
    #: The no-op/pass action, the only legal action of a seat with nothing to decide.
    pass_action: int
    #: Keyword arguments of :meth:`reset` that fix chance (e.g. the card game's ``deck``);
    #: the ParallelEnv passes them through from ``reset(options=...)``.
    reset_options: tuple[str, ...] = ()

    num_players: int
    _feats: np.ndarray
    cells: list[list[int]]   # per seat, the 27 cells of its sheet (0 = empty)
    misthrows: list[int]     # per seat
    active: int              # seat of the active player
    done: bool

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.num_actions, cls.pass_action = (cls.spec.name, cls.spec.num_actions,
                                                       cls.spec.pass_action)

    @abc.abstractmethod
    def reset(self, seed: int | None = None, start_player: int = 0) -> None:
        """Start a new game; ``seed`` reseeds the game's random generator.

        Bad arguments raise ValueError before anything changes (generator included).
        """

    def check_start_player(self, start_player: Any) -> int:
        """``start_player`` as an int; ValueError unless it is a seat of this table."""
        if isinstance(start_player, (bool, np.bool_)) \
                or not isinstance(start_player, (int, np.integer)) \
                or not 0 <= start_player < self.num_players:
            raise ValueError(f"start_player must be a seat in 0..{self.num_players - 1}, "
                             f"got {start_player!r}")
        return int(start_player)

    def check_reset_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The :attr:`reset_options` among ``options``, validated for :meth:`reset`.

        Raises ValueError naming the bad option; other keys are left out.
        """
        return {key: options[key] for key in self.reset_options if key in options}

    _legal: list[list[int]] | None = None  # per seat, cached until the state changes

    def legal_actions(self, seat: int) -> list[int]:
        """Legal actions of ``seat`` now, ascending; never empty."""
        return list(self.legal_action_lists()[seat])

    def legal_action_lists(self) -> list[list[int]]:
        """Every seat's legal actions, as cached by the engine: read them, never mutate."""
        if self._legal is None:
            self._legal = [self._compute_legal(s) for s in range(self.num_players)]
        return self._legal

    @abc.abstractmethod
    def _compute_legal(self, seat: int) -> list[int]:
        """Legal actions of ``seat`` in the current state (cached by :meth:`legal_actions`)."""

    def _entry_legal(self, seat: int, rows: Sequence[int], value: int) -> list[int]:
        """The entry actions of ``seat``: every cell of ``rows`` that takes ``value``, then pass."""
        allowed = self._allowed[seat]
        legal = [c for r in rows for c in range(r * rules.NUM_FIELDS, (r + 1) * rules.NUM_FIELDS)
                 if allowed[c] >> value & 1]
        legal.append(self.pass_action)
        return legal

    @abc.abstractmethod
    def step(self, actions: Sequence[int], chance: Any = None, *, validate: bool = True) -> None:
        """Apply one joint action (one entry per seat).

        ``chance`` fixes the random outcome this step may need (dice faces, or the
        cards drawn); ``None`` draws it from the game's generator. Raises
        :class:`IllegalActionError` and changes nothing if any action is illegal;
        ``validate=False`` skips that check for callers that already made it.
        """

    @abc.abstractmethod
    def features(self) -> np.ndarray:
        """The global feature vector (float32): everything, in absolute seat order."""

    @abc.abstractmethod
    def observation_index(self, seat: int) -> np.ndarray:
        """Indices into :meth:`features` that give ``seat``'s ego-centric observation."""

    @abc.abstractmethod
    def public_info(self) -> dict[str, Any]:
        """Game-specific facts every seat may see (roll, phase...), for ``infos``."""

    def private_info(self, seat: int) -> dict[str, Any]:
        """Facts only ``seat`` may see (its own hand in the card game), for its ``infos``."""
        return {}

    @abc.abstractmethod
    def numeric_public_info(self) -> dict[str, Any]:
        """The facts of :meth:`public_info` for ``infos="numeric"``: the engine's keys of
        ``spec.numeric_infos``, each an int or a new int64 array of the declared shape."""

    def numeric_private_info(self, seat: int) -> dict[str, Any]:
        """:meth:`private_info` for ``infos="numeric"``, as :meth:`numeric_public_info`."""
        return {}

    @abc.abstractmethod
    def render(self) -> str:
        """The game as text."""

    def default_action(self, seat: int) -> int:
        """The action played in place of an illegal one when illegal actions are forgiven."""
        return default_of(self.legal_actions(seat), self.pass_action)

    def action_problem(self, seat: int, action: Any) -> str | None:
        """Why ``action`` is not legal for ``seat`` now, or ``None`` when it is."""
        if type(action) is int and action in self.legal_action_lists()[seat]:
            return None  # the common case, decided without the checks below
        problem = type_problem(action)
        if problem is not None:
            return problem
        action = int(action)
        if not 0 <= action < self.num_actions:
            return f"out of range 0..{self.num_actions - 1}"
        legal = self.legal_actions(seat)
        if action not in legal:
            return f"not legal now (legal: {legal})"
        return None

    def check_actions(self, actions: Sequence[Any]) -> list[int]:
        """Validate a joint action; return it as Python ints or raise IllegalActionError."""
        if len(actions) != self.num_players:
            raise IllegalActionError("the table", actions,
                                     f"expected {self.num_players} actions, one per seat")
        for seat, action in enumerate(actions):
            problem = self.action_problem(seat, action)
            if problem:
                raise IllegalActionError(f"seat {seat}", action, problem)
        return [int(a) for a in actions]

    # -- the sheets, kept with what derives from them ---------------------------
    def _new_sheets(self) -> None:
        """Empty sheets for every seat, with their derived caches."""
        n = self.num_players
        self.cells = [[0] * rules.NUM_CELLS for _ in range(n)]
        self.misthrows = [0] * n
        self._allowed = [rules.cells_allowed_values(c) for c in self.cells]
        self._scores = [0] * n
        empty = np.zeros((rules.NUM_ROWS, rules.NUM_FIELDS), dtype=np.int64)
        empty.setflags(write=False)
        self._sheets = [empty] * n

    def _locate_sheets(self, seats_start: int, seat_size: int) -> None:
        """Where each seat's :data:`~qwinto_env.spec.base.SHEET` block lies in the features:
        the seat blocks start at ``seats_start``, ``seat_size`` floats each."""
        starts = [seats_start + seat * seat_size for seat in range(self.num_players)]
        self._cells_at = [start + SHEET.cells.start for start in starts]
        self._misthrows_at = [start + SHEET.misthrows.start for start in starts]

    def _write(self, seat: int, cell: int, value: int) -> None:
        """Write ``value`` into ``cell`` of ``seat``'s sheet (legality checked by the caller)."""
        cells = self.cells[seat]
        cells[cell] = value
        rules.allowed_after_write(self._allowed[seat], cell, value)
        self._scores[seat] = rules.cells_score(cells, self.misthrows[seat])
        sheet = np.array(cells, dtype=np.int64).reshape(rules.NUM_ROWS, rules.NUM_FIELDS)
        sheet.setflags(write=False)
        self._sheets[seat] = sheet
        self._feats[self._cells_at[seat] + cell] = value / rules.MAX_VALUE
        self._legal = None

    def _misthrow(self, seat: int) -> None:
        """Mark a misthrow for ``seat``."""
        self.misthrows[seat] += 1
        self._scores[seat] = rules.cells_score(self.cells[seat], self.misthrows[seat])
        self._feats[self._misthrows_at[seat] + self.misthrows[seat] - 1] = 1.0

    def scores(self) -> list[int]:
        """Each seat's current score by the scoring rules."""
        return list(self._scores)

    def sheet(self, seat: int) -> np.ndarray:
        """``seat``'s sheet as a read-only 3x9 int array (a snapshot: later writes
        make a new array, so a stored sheet never changes)."""
        return self._sheets[seat]

    def game_over(self) -> bool:
        """Whether the end condition holds: someone has two full rows or four misthrows."""
        return any(m >= rules.MAX_MISTHROWS for m in self.misthrows) or any(
            rules.cells_full_rows(c) >= rules.FULL_ROWS_TO_END for c in self.cells)
