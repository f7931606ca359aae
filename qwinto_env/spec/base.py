"""What the two games' specs share: the entry actions, the colour bitmasks, the reward
kinds, the sheet block that starts every seat's observation, the keys of the numeric
infos, and the two shapes a spec is declared with (:class:`Layout` for the pieces of a
feature vector, :class:`GameSpec` for the facts generic code looks up by game name).

Both games write on the same sheet (:mod:`qwinto_env.rules`) through the same entry
actions:

==========  ======================================================================
``0..26``   write the announced value into cell ``a``: row ``a // 9`` (0 orange,
            1 yellow, 2 purple), field ``a % 9``
``27``      pass: write nothing; the active player's pass at entry is a misthrow.
            The only legal action of a seat with nothing to decide.
==========  ======================================================================

Rewards (``reward=`` of every environment and batched engine):

* ``"win"`` (default for 2+ players): at the end, tied winners share +1 (each gets
  ``1/k``), the others get -1; a tie of every player is a draw (0 each).
* ``"margin"``: at the end, own score minus the best other score (solo: the score).
* ``"score"`` (default in solo play): dense, the change of the own score every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import rules

# -- actions both games share ------------------------------------------------------
#: Entry actions that write: action ``a`` writes into cell ``a``.
WRITES = range(rules.NUM_CELLS)
#: The pass action (see the module docstring).
PASS = WRITES.stop

#: The rows of each colour bitmask 0..7 (bit ``r`` = row ``r``): the dice rolled, or the
#: colours a card play announces.
COLOUR_ROWS: tuple[tuple[int, ...], ...] = tuple(
    tuple(r for r in range(rules.NUM_ROWS) if mask >> r & 1)
    for mask in range(1 << rules.NUM_ROWS))


def colour_flags(mask: int) -> np.ndarray:
    """The colour bitmask ``mask`` as one 0/1 flag per row (orange, yellow, purple), int64."""
    return np.array([mask >> r & 1 for r in range(rules.NUM_ROWS)], dtype=np.int64)


def padded_rows(rows: Sequence[Sequence[int]], shape: tuple[int, int], fill: int) -> np.ndarray:
    """``rows`` as an int64 array of ``shape``, the rows after them all ``fill`` (a numeric
    info of fixed shape); ValueError if there are more rows than ``shape`` holds."""
    out = np.full(shape, fill, dtype=np.int64)
    if rows:
        out[:len(rows)] = rows
    return out


# -- rewards ---------------------------------------------------------------------------
REWARDS = ("win", "margin", "score")


def check_reward(reward: str | None, num_players: int) -> str:
    """The reward kind for ``reward`` (``None``: the default); ValueError naming a bad one."""
    if reward is None:
        return "score" if num_players == 1 else "win"
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}; choose one of {REWARDS}")
    if reward == "win" and num_players == 1:
        raise ValueError('reward="win" needs 2+ players; solo play has no winner '
                         '(use "score" or "margin")')
    return reward


def terminal_rewards(scores: Sequence[int], kind: str) -> list[float]:
    """Terminal rewards of the ``"win"`` or ``"margin"`` kind for final ``scores``
    (see the module docstring)."""
    if kind == "win":
        best = max(scores)
        winners = [s == best for s in scores]
        if all(winners):
            return [0.0] * len(scores)
        k = sum(winners)
        return [1.0 / k if w else -1.0 for w in winners]
    if kind == "margin":
        if len(scores) == 1:
            return [float(scores[0])]
        return [float(s - max(o for j, o in enumerate(scores) if j != i))
                for i, s in enumerate(scores)]
    raise ValueError(f"unknown terminal reward kind {kind!r}")


def step_rewards(before: Sequence[int], scores: Sequence[int], kind: str,
                 done: bool) -> list[float]:
    """Every player's reward for one step that took the scores from ``before`` to
    ``scores``: the change of own score (``"score"``), else the terminal reward once the
    game is ``done`` and 0 before (see the module docstring)."""
    if kind == "score":
        return [float(s - p) for s, p in zip(scores, before)]
    return terminal_rewards(scores, kind) if done else [0.0] * len(scores)


# -- observation layouts ---------------------------------------------------------------
class Layout:
    """Named consecutive pieces of a feature vector, declared once, read and written by name.

    ``Layout(cells=27, misthrows=4)`` lays the pieces out in the order given:
    ``layout.cells`` is ``slice(0, 27)``, ``layout.misthrows`` ``slice(27, 31)`` and
    ``layout.size`` 31. A piece given as a Layout is nested: its attribute is that
    layout moved to where it starts. ``layout.at(offset)`` is the same layout starting
    at ``offset`` of a longer vector. Hot loops take plain ints from the slices once.
    """

    _RESERVED = ("start", "stop", "size", "pieces", "at")

    def __init__(self, start: int = 0, /, **pieces: int | Layout):
        self.start, self.pieces = start, pieces
        offset = start
        for name, piece in pieces.items():
            if name in self._RESERVED:
                raise ValueError(f"a layout piece cannot be called {name!r}")
            if isinstance(piece, Layout):
                setattr(self, name, piece.at(offset))
                offset += piece.size
            else:
                setattr(self, name, slice(offset, offset + piece))
                offset += piece
        self.stop, self.size = offset, offset - start

    def at(self, offset: int) -> Layout:
        """This layout starting at ``offset``."""
        return Layout(offset, **self.pieces)

    def __repr__(self) -> str:
        return f"Layout({self.start}, {', '.join(f'{k}={v!r}' for k, v in self.pieces.items())})"


#: Where every seat's block starts, in both games: its sheet (cell ``r*9+f``: value / 18,
#: 0 = empty) and its misthrows (thermometer: entry ``i`` is 1 when ``i < misthrows``).
SHEET = Layout(cells=rules.NUM_CELLS, misthrows=rules.MAX_MISTHROWS)


def ego_indices(features: Layout, num_players: int, rotate: Sequence[str] = (),
                own: Sequence[str] = ()) -> list[np.ndarray]:
    """Per seat, the indices into a feature vector laid out by ``features`` (absolute seat
    order) that make the seat's ego-centric observation.

    The pieces named in ``rotate`` and ``own`` hold one equal block per seat: a rotated
    piece comes in turn order starting at the seat (seat ``k`` = the ``k``-th seat after
    it), an own piece keeps the seat's block only; every other piece comes as it is.
    """
    n = num_players
    per_seat = []
    for seat in range(n):
        order = [(seat + k) % n for k in range(n)]
        idx: list[int] = []
        for name in features.pieces:
            piece = getattr(features, name)
            if name in rotate or name in own:
                block = (piece.stop - piece.start) // n
                seats = order if name in rotate else [seat]
                idx += [piece.start + s * block + i for s in seats for i in range(block)]
            else:
                idx += range(piece.start, piece.stop)
        per_seat.append(np.array(idx, dtype=np.intp))
    return per_seat


def decode_sheet_blocks(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells ``(..., 27)`` and misthrows ``(...)`` (int64) of :data:`SHEET` blocks
    ``(..., >= 31)``; values come back exactly (``value / 18`` rounded)."""
    cells = np.rint(blocks[..., SHEET.cells] * rules.MAX_VALUE).astype(np.int64)
    misthrows = np.rint(blocks[..., SHEET.misthrows].sum(-1)).astype(np.int64)
    return cells, misthrows


# -- infos ------------------------------------------------------------------------------
#: The ``infos="numeric"`` entries of both games (:mod:`qwinto_env.parallel`, Infos):
#: key -> shape, ``()`` for an int; every array is int64. A game's
#: :attr:`GameSpec.numeric_infos` adds its own.
NUMERIC_INFOS: dict[str, tuple[int, ...]] = {
    "sheet": (rules.NUM_ROWS, rules.NUM_FIELDS), "misthrows": (), "score": (), "phase": (),
    "active_player": (), "reroll_available": (), "roll_colours": (rules.NUM_ROWS,),
    "roll_value": (), "illegal_action": ()}
#: The columns of a row of Qwinto-v0's numeric ``opponent_actions`` (:mod:`qwinto_env.single`,
#: Infos): one opponent decision, the phase as its index in :attr:`GameSpec.phases`.
OPPONENT_ACTION_COLUMNS = ("seat", "phase", "action")
#: What fills the rows of ``opponent_actions`` that no decision took.
NO_ACTION = -1


# -- the facts generic code looks up by game name --------------------------------------
@dataclass(frozen=True)
class GameSpec:
    """One game's facts as a record (``qwinto_env.spec.SPECS[name]``)."""

    #: ``"dice"`` or ``"cards"``; ``title`` names it in messages ("dice game").
    name: str
    title: str
    #: Seats at a table (1 = the solo variant).
    min_players: int
    max_players: int
    #: Size of the ``Discrete`` action space, and the pass action.
    num_actions: int
    pass_action: int
    #: Phase names by phase number.
    phases: tuple[str, ...]
    #: Engine steps of one turn.
    steps_per_turn: int
    #: Length of the ego-centric observation for a player count.
    observation_size: Callable[[int], int]
    #: The ``infos="numeric"`` keys and shapes for a player count (:data:`NUMERIC_INFOS`
    #: and the game's own).
    numeric_infos: Callable[[int], dict[str, tuple[int, ...]]]
    #: A player's action as the other players see it (the card game's plays drop which
    #: card of the hidden hand was played); by default the action itself.
    public_action: Callable[[int], int] = int

    @property
    def player_counts(self) -> range:
        return range(self.min_players, self.max_players + 1)

    def is_player_count(self, num_players: Any) -> bool:
        """Whether ``num_players`` is an integer (not a bool) the game seats."""
        return not isinstance(num_players, (bool, np.bool_)) \
            and isinstance(num_players, (int, np.integer)) and num_players in self.player_counts

    def player_count_problem(self, num_players: Any) -> str | None:
        """Why ``num_players`` is no player count of the game (``"must be an integer in
        1..6 ..."``), None if it is one: every front end that refuses a count says this,
        after its own name for the setting."""
        if self.is_player_count(num_players):
            return None
        return (f"must be an integer in {self.min_players}..{self.max_players} for the "
                f"{self.title} (1 = solo variant), got {num_players!r}")

    def check_num_players(self, num_players: Any) -> int:
        """``num_players`` as an int; ValueError unless it is a player count of the game."""
        problem = self.player_count_problem(num_players)
        if problem is not None:
            raise ValueError(f"num_players {problem}")
        return int(num_players)

    def max_opponent_decisions(self, num_players: int) -> int:
        """The most decisions the other seats make between two of one player's (the rows of
        Qwinto-v0's numeric ``opponent_actions``). A player decides at the first step of
        each of its turns (several dice subsets or card plays are always legal), so at most
        ``num_players`` turns lie between, its own first; of a turn's steps only the last,
        the entry, lets anyone but the active player decide."""
        others = num_players - 1
        return others + others * (self.steps_per_turn - 1 + others)

    def learner_numeric_infos(self, num_players: int) -> dict[str, tuple[int, ...]]:
        """Qwinto-v0's ``infos="numeric"`` keys and shapes: the table's
        (:attr:`numeric_infos`), ``learner_seat`` and ``skipped_steps`` (ints), ``scores``
        ``(num_players,)`` and ``opponent_actions`` ``(max_opponent_decisions(num_players),
        3)``, one row per decision (:data:`OPPONENT_ACTION_COLUMNS`)."""
        rows = self.max_opponent_decisions(num_players)
        return {**self.numeric_infos(num_players), "learner_seat": (), "scores": (num_players,),
                "opponent_actions": (rows, len(OPPONENT_ACTION_COLUMNS)), "skipped_steps": ()}

    def players_for_size(self, observation_size: int) -> int | None:
        """The player count whose observation is ``observation_size`` long, or None."""
        return next((n for n in self.player_counts if self.observation_size(n) == observation_size),
                    None)
