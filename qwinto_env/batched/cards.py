"""Qwinto: Das Kartenspiel as a batched engine: N independent games per call.

Same rules (including the ``empty_pile`` option), the same ``Discrete(88)`` actions and
the same observation features and masks as :class:`qwinto_env.cards.CardGame` and the
ParallelEnv (``obs[n, seat]`` equals the single engine's
``features()[observation_index(seat)]`` bit for bit). Card, play, legality and encoding
tables are built from the game's spec (:mod:`qwinto_env.spec.cards`) at construction;
the sheets are :class:`~.sheets.Sheets`. The play, the refill and reshuffle and the end
of a turn are written a second time here, vectorised, for speed. **The contract between
the two engines is the differential tests** (``tests/test_batched_cards.py``: the same
decks, orders and actions give the same observations, masks, rewards, scores and
endings, for every ``empty_pile`` rule): a rule change is made in both engines and
proven by them.

State beyond the sheets (N games, P seats; a turn is two steps, play then entry, and a
game ends only at an entry, so the phase is one number for the batch as in the dice
engine):

================  ==============  ======================================================
array             shape, dtype    content
================  ==============  ======================================================
``hands``         (N,P,3) int64   card ids, ascending; 32 marks an empty slot (last)
``tops``          (N,4) int64     top card of each stack
``covered``       (N,32) bool     cards under the tops
``pile``          (N,32) int64    the draw pile in draw order, ``pile[n, pos:end]``
``pile_pos``,     (N,) int64      next card to draw, and the pile's length
``pile_end``
``active``        (N,) int64      active seat
``value``         (N,) int64      announced value (-6..18; 0 before the play)
``colours``       (N,) int64      announced colours, bit r = row r
``played``        (N,4) bool      stacks that received a card this turn
``counting``      (N,) int64      stack whose neighbours count (4 before the play)
``turn``          (N,) int32      turns completed in the current game
================  ==============  ======================================================

Chance: every (auto-)reset deals a deck drawn from ``gen`` (``reset(deck=...)`` fixes
the decks of all games). A reshuffle (``empty_pile="reshuffle"``: the pile is empty and
the active player still needs a card) turns the covered cards into a new pile in an
order drawn from ``gen``, or given by ``step(actions, chance=orders)``: ``orders`` (N, 32),
where row ``n`` of a reshuffling game starts with a permutation of its covered cards
(:meth:`covered_cards`), first card drawn first; :meth:`will_reshuffle` tells in
advance which games reshuffle at the next step. On torch (no host syncs, see
:mod:`~qwinto_env.batched.dice`) every entry step draws a deck per game: dealt to a game
that ends, and ordering (covered cards first) the pile of a game that reshuffles.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import rules
from ..spec.cards import (CARD, CARD_COLOUR_BIT, CARD_FEATURE_INDICES, CARD_VALUE, DECK_SIZE,
                          DOUBLE_PLAYS, ENTRY, HAND_FEATURES, HAND_SIZE, MAX_PILE,
                          MIN_PLAY_VALUE, NEIGHBOURS, NUM_ACTIONS, NUM_STACKS, OTHER_NEIGHBOUR,
                          OVER, PASS, PILE_END, PILE_NO_DRAW, PILE_RESHUFFLE, PLAY,
                          PLAY_VALUE_SPAN, PLAYS, SEAT, SINGLE_FIRST,
                          SINGLE_PLAYS, SLOT_PAIRS, SPEC, check_empty_pile, features_layout,
                          observation_indices, observation_size)
from ..spec.base import COLOUR_ROWS
from .backend import Rows, to_backend
from .base import BatchedGame, StepResult
from .sheets import VALUE_SLOTS, check_sheets, position_array

EMPTY = DECK_SIZE  # card id of an empty hand slot (sorts after every card)


def _signed64(x: int) -> int:
    """A 64-bit pattern as the int64 holding it."""
    return x - (1 << 64) if x >= 1 << 63 else x


def _pair_bits() -> list[tuple[int, int]]:
    """Per slot pair: (word, int64 bits) of its double-play actions."""
    out = []
    for plays in DOUBLE_PLAYS:
        word = plays[0] // 64
        assert all(a // 64 == word for a in plays)  # a pair's actions never straddle two words
        out.append((word, _signed64(sum(1 << (a - 64 * word) for a in plays))))
    return out


_PAIR_BITS = _pair_bits()


@functools.lru_cache(maxsize=None)
def _numpy_tables(num_players: int) -> dict[str, np.ndarray]:
    """Card, play and encoding tables as numpy arrays, derived from the card game's spec."""
    P = num_players
    card_value = list(CARD_VALUE) + [0]
    card_bit = list(CARD_COLOUR_BIT) + [0]
    card_feat = np.zeros((DECK_SIZE + 1, CARD.size), dtype=np.float32)  # EMPTY: all 0
    for c, indices in enumerate(CARD_FEATURE_INDICES):
        card_feat[c, list(indices)] = 1.0
    # Per action (28..87 meaningful): hand slots and stacks of the first and the last
    # card played (equal for a single play), and the stacks whose tops count with the
    # last card: both neighbours (single), or the last stack's other neighbour (double;
    # the first card is the other counted card).
    first_slot, last_slot = np.zeros(NUM_ACTIONS, np.int64), np.zeros(NUM_ACTIONS, np.int64)
    first_stack, last_stack = np.zeros(NUM_ACTIONS, np.int64), np.zeros(NUM_ACTIONS, np.int64)
    x_stack, y_stack = np.zeros(NUM_ACTIONS, np.int64), np.zeros(NUM_ACTIONS, np.int64)
    double = np.zeros(NUM_ACTIONS, bool)
    for action, (slots, stacks) in PLAYS.items():
        first_slot[action], last_slot[action] = slots[0], slots[-1]
        first_stack[action], last_stack[action] = stacks[0], stacks[-1]
        if len(slots) == 1:
            x_stack[action], y_stack[action] = NEIGHBOURS[stacks[0]]
        else:
            double[action] = True
            y_stack[action] = OTHER_NEIGHBOUR[stacks[1]][stacks[0]]
    single_bits = [sum(1 << a for a in plays) for plays in SINGLE_PLAYS]
    assert max(single_bits) < 1 << 63  # single plays live in word 0
    phase_onehot = np.zeros((OVER + 1, OVER), dtype=np.float32)  # OVER: no flag
    phase_onehot[range(OVER), range(OVER)] = 1.0
    counting = np.zeros((NUM_STACKS + 1, NUM_STACKS), dtype=np.float32)
    counting[:NUM_STACKS] = np.eye(NUM_STACKS, dtype=np.float32)
    return {
        "card_value": np.array(card_value, dtype=np.int64),
        "card_bit": np.array(card_bit, dtype=np.int64),
        "card_feat": card_feat,
        "first_slot": first_slot, "last_slot": last_slot,
        "first_stack": first_stack, "last_stack": last_stack,
        "x_stack": x_stack, "y_stack": y_stack, "double": double,
        "single_bits": np.array(single_bits, dtype=np.int64),
        # Scalars as the single engine computes them (Python float, then float32).
        "hand_feat": np.array([k / HAND_SIZE for k in range(HAND_SIZE + 1)], dtype=np.float32),
        "pile_feat": np.array([k / MAX_PILE for k in range(DECK_SIZE + 1)], dtype=np.float32),
        "raw_value_feat": np.array([(v - MIN_PLAY_VALUE) / PLAY_VALUE_SPAN
                                    for v in range(MIN_PLAY_VALUE, rules.MAX_VALUE + 1)],
                                   dtype=np.float32),
        "value_onehot": np.eye(VALUE_SLOTS, dtype=np.float32)[:, 1:],
        "colours_feat": np.array([[float(r in rows) for r in range(rules.NUM_ROWS)]
                                  for rows in COLOUR_ROWS], dtype=np.float32),
        "phase_onehot": phase_onehot, "counting_onehot": counting,
        "active_onehot": np.eye(P, dtype=np.float32),
        "obs_index": np.stack(observation_indices(P)).astype(np.int64),
        "seats": np.arange(P, dtype=np.int64),
    }


#: Bitmasks of the stacks a play covers: one stack, or two neighbouring ones (a double).
_PLAYED_STACKS = sorted({1 << s for s in range(NUM_STACKS)}
                        | {(1 << a) | (1 << b) for a in range(NUM_STACKS) for b in NEIGHBOURS[a]})


def _check_announcement(value: np.ndarray, colours: np.ndarray, played: np.ndarray,
                        counting: np.ndarray) -> None:
    """Raise ``ValueError`` naming the first field of an entry's announcement that no
    play makes: ``value`` outside -6..18, ``colours`` outside 0..7, ``played`` not one
    stack or two neighbouring ones, ``counting`` not a stack that was played."""
    where = "an entry needs the play's announcement"
    if ((value < MIN_PLAY_VALUE) | (value > rules.MAX_VALUE)).any():
        raise ValueError(f"{where}: value must be in {MIN_PLAY_VALUE}..{rules.MAX_VALUE}, "
                         f"got {value.tolist()}")
    if ((colours < 0) | (colours >= len(COLOUR_ROWS))).any():
        raise ValueError(f"{where}: colours must be a row bitmask 0..{len(COLOUR_ROWS) - 1}, "
                         f"got {colours.tolist()}")
    stacks = (played << np.arange(NUM_STACKS)).sum(-1)
    if not np.isin(stacks, _PLAYED_STACKS).all():
        n = int(np.argmin(np.isin(stacks, _PLAYED_STACKS)))
        raise ValueError(f"{where}: played must mark one stack or two neighbouring ones, "
                         f"got {played[n].tolist()} in game {n}")
    games = np.arange(len(played))
    if ((counting < 0) | (counting >= NUM_STACKS)).any() \
            or not played[games, np.clip(counting, 0, NUM_STACKS - 1)].all():
        raise ValueError(f"{where}: counting must be a played stack, got {counting.tolist()} "
                         f"for played {played.astype(int).tolist()}")


class BatchedCardGame(BatchedGame):
    """``num_games`` independent card games of ``num_players`` seats (1..4), stepped together.

    Parameters as :class:`~qwinto_env.batched.BatchedDiceGame`, plus ``empty_pile``
    (``"reshuffle"``, ``"end"`` or ``"no_draw"``, see :mod:`qwinto_env.cards`).
    """

    spec = SPEC

    def __init__(self, num_games: int, num_players: int = 2, *, backend: str = "numpy",
                 device: Any = None, seed: int | None = None, reward: str | None = None,
                 start_player: int = 0, random_start: bool = False,
                 empty_pile: str = "reshuffle", final_observations: bool = False):
        super().__init__(num_games, num_players, backend=backend, device=device, seed=seed,
                         reward=reward, start_player=start_player, random_start=random_start,
                         final_observations=final_observations)
        B, N, P = self.backend, self.num_games, self.num_players
        self.empty_pile = check_empty_pile(empty_pile)
        self.obs_size = observation_size(P)
        self._layout = features_layout(P)
        self.feature_size = self._layout.size
        self._t = to_backend(B, _numpy_tables(P))
        self._games = B.arange(N)
        self._positions = B.astype(B.arange(DECK_SIZE), B.int8)
        self.reset()

    # -- state -----------------------------------------------------------------------
    def reset(self, seed: int | None = None, start_player: Any = None,
              deck: Any = None) -> None:
        """Start all N games afresh: ``seed`` reseeds the generator, ``start_player``
        (a seat or N seats) and ``deck`` ((N, 32) permutations of 0..31, dealt as in
        :meth:`qwinto_env.cards.CardGame.reset`) fix this deal only. A bad argument
        raises ``ValueError`` naming it and changes nothing."""
        B, N, P = self.backend, self.num_games, self.num_players
        gen, active = self._reset_args(seed, start_player)
        if deck is not None:
            deck = B.as_int64(deck, "deck")
            ok = tuple(deck.shape) == (N, DECK_SIZE)
            if ok:
                ok = bool((B.sort(deck) == B.arange(DECK_SIZE)[None, :]).all())
            if not ok:
                raise ValueError(f"deck must be {N} permutations of the card ids 0..31, "
                                 f"shape ({N}, 32)")
        active = self._begin_reset(gen, active)
        self.sheet_state.reset()
        self.hands = B.zeros((N, P, HAND_SIZE), B.int64)
        self.tops = B.zeros((N, NUM_STACKS), B.int64)
        self.covered = B.zeros((N, DECK_SIZE), B.bool_)
        self.pile = B.zeros((N, DECK_SIZE), B.int64)
        self.pile_pos = B.zeros((N,), B.int64)
        self.pile_end = B.zeros((N,), B.int64)
        self.active = active
        self.turn = B.zeros((N,), B.int32)
        self._deal(B.rows(self._games >= 0),
                   B.permutations(self.gen, N, DECK_SIZE) if deck is None else deck)
        self._clear_announcement()
        self.phase = PLAY
        self._legal = None

    def _deal(self, rows: Rows, deck: Any) -> None:
        """Deal the games ``rows`` from ``deck`` (``rows.count``, 32)."""
        B, P = self.backend, self.num_players
        rows.put(self.tops, deck[:, :NUM_STACKS])
        for seat in range(P):
            start = NUM_STACKS + HAND_SIZE * seat
            rows.put(self.hands[:, seat], B.sort(deck[:, start:start + HAND_SIZE]))
        rest = DECK_SIZE - NUM_STACKS - HAND_SIZE * P
        rows.put(self.pile[:, :rest], deck[:, DECK_SIZE - rest:])
        rows.put(self.pile_pos, 0)
        rows.put(self.pile_end, rest)
        rows.put(self.covered, False)

    def _clear_announcement(self) -> None:
        B, N = self.backend, self.num_games
        self.value = B.zeros((N,), B.int64)
        self.colours = B.zeros((N,), B.int64)
        self.played = B.zeros((N, NUM_STACKS), B.bool_)
        self.counting = B.zeros((N,), B.int64) + NUM_STACKS

    def set_positions(self, cells: Any, misthrows: Any, active: Any, phase: int, hands: Any,
                      tops: Any, covered: Any, pile: Any, value: Any = 0, colours: Any = 0,
                      played: Any = False, counting: Any = NUM_STACKS, *,
                      validate: bool = True) -> None:
        """Put every game at a given position (what search bots plan from, with the
        cards they cannot see dealt by themselves).

        ``cells`` (N, P, 27), ``misthrows`` (N, P): the sheets; ``active`` (N,) seats;
        ``phase`` (one for the batch) ``PLAY`` or ``ENTRY``; ``hands`` (N, P, 3) card ids,
        -1 for an empty slot; ``tops`` (N, 4); ``covered`` (N, 32) bool, the cards under
        the tops; ``pile`` (N, L) the draw pile in draw order, -1 after its last card.
        Every card is in exactly one of hands, tops, covered and pile. At ``ENTRY``, the
        play's announcement: ``value`` (N,) -6..18, ``colours`` (N,) bitmask,
        ``played`` (N, 4) stacks that got a card (one, or two neighbouring ones),
        ``counting`` (N,) the played stack whose neighbours counted. The turn counters
        restart at 0.

        With ``validate`` (default) a bad argument raises ``ValueError`` naming it,
        before anything changes.
        """
        B, N, P = self.backend, self.num_games, self.num_players
        hands = position_array(hands, "hands", (N, P, HAND_SIZE))
        hands = np.sort(np.where(hands < 0, EMPTY, hands), axis=-1)
        tops = position_array(tops, "tops", (N, NUM_STACKS))
        covered = position_array(covered, "covered", (N, DECK_SIZE), boolean=True)
        pile = position_array(pile, "pile", (N, -1))
        size = (pile >= 0).sum(-1)
        value, colours, counting, active = (
            position_array(x, name, (N,)) for x, name in
            ((value, "value"), (colours, "colours"), (counting, "counting"), (active, "active")))
        played = position_array(played, "played", (N, NUM_STACKS), boolean=True)
        entry = value, colours, played, counting
        if validate:
            check_sheets(cells, misthrows, (N, P))
            self._check_position(active, phase, hands, tops, covered, pile, entry)
        self.sheet_state.load(B.asarray(cells, B.int64), B.asarray(misthrows, B.int64))
        full = np.zeros((N, DECK_SIZE), dtype=np.int64)
        full[:, :pile.shape[1]] = np.maximum(pile, 0)
        # copies: the engine writes its state in place, the caller keeps its arrays
        self.hands, self.tops, self.pile, self.pile_end, self.active = (
            B.asarray(x, B.int64) for x in (hands, tops, full, size, active))
        self.covered = B.asarray(covered, B.bool_)
        self.pile_pos = B.zeros((N,), B.int64)
        self.turn = B.zeros((N,), B.int32)
        self._clear_announcement()
        if phase == ENTRY:
            self.value, self.colours, self.counting = (B.asarray(x, B.int64)
                                                       for x in (value, colours, counting))
            self.played = B.asarray(played, B.bool_)
        self.phase = int(phase)
        self._legal = None

    def _check_position(self, active: np.ndarray, phase: Any, hands: np.ndarray,
                        tops: np.ndarray, covered: np.ndarray, pile: np.ndarray,
                        entry: tuple[np.ndarray, ...]) -> None:
        """Raise ``ValueError`` for a position :meth:`set_positions` cannot set."""
        P = self.num_players
        if ((active < 0) | (active >= P)).any():
            raise ValueError(f"active must be seats in 0..{P - 1}, got {active.tolist()}")
        if isinstance(phase, bool) or phase not in (PLAY, ENTRY):
            raise ValueError(f"phase must be PLAY or ENTRY ({PLAY}, {ENTRY}), got {phase!r}")
        if ((pile < 0)[:, :-1] & (pile >= 0)[:, 1:]).any():
            raise ValueError("pile must list its cards first, then -1")
        count = np.zeros((len(hands), DECK_SIZE + 1), dtype=np.int64)
        for ids in (hands.reshape(len(hands), -1), tops, np.where(pile < 0, EMPTY, pile)):
            if ((ids < 0) | (ids > EMPTY)).any():
                raise ValueError(f"card ids must be in 0..{DECK_SIZE - 1}")
            np.add.at(count, (np.arange(len(ids))[:, None], ids), 1)
        count = count[:, :DECK_SIZE] + covered
        if (count != 1).any():
            n = int(np.argwhere(count != 1)[0, 0])
            raise ValueError(f"game {n}: every card must be in exactly one of the hands, "
                             f"tops, covered cards and pile (counts {count[n].tolist()})")
        empty = ~(hands[np.arange(len(hands)), active] < EMPTY).any(-1)
        if phase == PLAY and empty.any():  # a running game's active seat always has a card
            n = int(np.argmax(empty))
            raise ValueError(f"hands: game {n}'s active seat {int(active[n])} holds no card "
                             f"to play")
        if phase == ENTRY:
            _check_announcement(*entry)

    def state_bytes_per_game(self) -> float:
        """Bytes of game state per game (the arrays listed in the module docstring)."""
        arrays = self.sheet_state.arrays() + (
            self.hands, self.tops, self.covered, self.pile, self.pile_pos, self.pile_end,
            self.active, self.value, self.colours, self.played, self.counting, self.turn)
        return sum(self.backend.nbytes(a) for a in arrays) / self.num_games

    def hand_sizes(self) -> Any:
        """Cards in each seat's hand (N, P) int64."""
        return (self.hands < EMPTY).sum(-1)

    def _active_hands(self) -> Any:
        """The active seats' hands (N, 3)."""
        return self.hands.reshape(-1, HAND_SIZE)[self._base_game + self.active]

    def covered_cards(self, game: int) -> list[int]:
        """The cards under the stack tops of ``game``, ascending (a reshuffle's input)."""
        return [int(c) for c in self.backend.to_numpy(self.backend.nonzero(self.covered[game]))]

    def will_reshuffle(self) -> Any:
        """(N,) bool: the games whose next step reshuffles the covered cards."""
        B = self.backend
        if self.phase != ENTRY or self.empty_pile != PILE_RESHUFFLE:
            return B.zeros((self.num_games,), B.bool_)
        need = HAND_SIZE - (self._active_hands() < EMPTY).sum(-1)
        return (self.pile_end - self.pile_pos) < need

    # -- legality ------------------------------------------------------------------
    def legal_bits(self) -> Any:
        """Legal actions as int64 bitmasks (N, P, 2): action ``a`` is bit ``a % 64`` of
        word ``a // 64`` (88 actions need two words). A new array each call: writing it
        changes nothing in the engine."""
        return self.backend.copy(self._legal_bits())

    def _legal_bits(self) -> Any:
        """:meth:`legal_bits`, computed once per step and shared by the step's checks
        (never given out: a caller's writes would make illegal actions legal)."""
        if self._legal is None:
            B, t, N, P = self.backend, self._t, self.num_games, self.num_players
            legal = B.zeros((N, P, 2), B.int64)
            if self.phase == ENTRY:
                legal[..., 0] = self.sheet_state.legal_writes(self.value, self.colours)
            else:
                hand = self._active_hands()
                size = (hand < EMPTY).sum(-1)
                values = t["card_value"][hand]
                words = [t["single_bits"][size], B.zeros((N,), B.int64)]
                for p, (i, j) in enumerate(SLOT_PAIRS):
                    same = (values[:, i] == values[:, j]) & (size > max(i, j))
                    word, bits = _PAIR_BITS[p]
                    words[word] = words[word] | (bits * same)
                is_active = t["seats"][None, :] == self.active[:, None]
                legal[..., 0] = B.where(is_active, words[0][:, None], 1 << PASS)
                legal[..., 1] = B.where(is_active, words[1][:, None], 0)
            self._legal = legal
        return self._legal

    def action_masks(self) -> Any:
        """Legal-action masks (N, P, 88) int8, exactly the ParallelEnv's ``action_mask``."""
        bits = self.backend.unpack_bits(self._legal_bits(), 64)
        return bits.reshape(self.num_games, self.num_players, 128)[..., :NUM_ACTIONS]

    # -- stepping ------------------------------------------------------------------
    def step(self, actions: Any, chance: Any = None, *, validate: bool = True) -> StepResult:
        """Apply one joint action per game: ``actions`` (N, P) integers.

        ``chance`` (N, 32) fixes the new pile order of the games that reshuffle in this
        step (module docstring); other rows are ignored. With ``validate`` (default) an
        illegal action raises :class:`~qwinto_env.game.IllegalActionError` naming the
        game, seat and action, and nothing changes; ``validate=False`` skips that check
        (no host synchronisation), for callers whose actions are legal: an illegal action
        then leaves its own game in some legal state of the rules (which one is
        unspecified) and never touches another game. Bad shapes, dtypes and ``chance``
        raise either way, before anything changes.
        """
        B, N, P = self.backend, self.num_games, self.num_players
        a = self._actions(actions, validate)
        orders = None if chance is None else self._check_chance(chance)
        rewards = B.zeros((N, P), B.float32)
        legal = self._legal_bits()
        self._legal = None
        if self.phase == PLAY:
            self._play(self._legal_play(a, legal))
            return self._no_endings(rewards)
        return self._enter(a, legal[..., 0], rewards, orders)

    def _legal_at(self, actions: Any) -> Any:
        # Two 64-bit words of legal bits per seat: word a // 64, bit a % 64.
        B = self.backend
        words = self._legal_bits().reshape(-1, 2)[B.arange(actions.shape[0] * actions.shape[1]),
                                                  B.flat(actions >> 6)]
        return ((words.reshape(actions.shape) >> (actions & 63)) & 1) == 1

    def _legal_play(self, a: Any, legal: Any) -> Any:
        """The active seats' plays (N,) in the actions ``a`` (N, P), made legal: an id
        out of range counts as the nearest one, and one that is not a legal play of its
        game (per ``legal``, :meth:`legal_bits`) as the first card on the first stack,
        always legal at a play (an active hand is never empty there)."""
        B = self.backend
        rows = self._base_game + self.active
        act = B.clip(B.flat(a)[rows], 0, NUM_ACTIONS - 1)
        # One 1-D gather of each play's word of legal bits: cheaper than a row gather.
        word = B.take(B.flat(legal), 2 * rows + (act >> 6), 0)
        return SINGLE_FIRST + (act - SINGLE_FIRST) * ((word >> (act & 63)) & 1)

    def _check_chance(self, chance: Any) -> Any:
        B = self.backend
        orders = B.as_int64(chance, "chance (reshuffled pile orders)")
        if tuple(orders.shape) != (self.num_games, DECK_SIZE):
            raise ValueError(f"chance must be pile orders of shape ({self.num_games}, 32)")
        for n in B.to_numpy(B.nonzero(self.will_reshuffle())).tolist():
            covered = self.covered_cards(n)
            given = [int(c) for c in B.to_numpy(orders[n, :len(covered)])]
            if sorted(given) != covered:
                raise ValueError(f"chance row {n} must start with a permutation of the "
                                 f"covered cards {covered}, got {given}")
        return orders

    def _play(self, act: Any) -> None:
        B, t, games = self.backend, self._t, self._games
        hand = self._active_hands()
        double = t["double"][act]
        first = hand[games, t["first_slot"][act]]
        last = hand[games, t["last_slot"][act]]
        x = B.where(double, first, self.tops[games, t["x_stack"][act]])
        y = self.tops[games, t["y_stack"][act]]
        cv, cb = t["card_value"], t["card_bit"]
        self.value = cv[last] + cv[x] + cv[y]
        self.colours = cb[last] | cb[x] | cb[y]
        a_stack, b_stack = t["first_stack"][act], t["last_stack"][act]
        # The old tops become covered: stack A's only in a double play (for a single
        # play A is B, whose old top is covered anyway).
        old_a, old_b = self.tops[games, a_stack], self.tops[games, b_stack]
        self.covered[games, old_a] = self.covered[games, old_a] | double
        self.covered[games, old_b] = True
        self.tops[games, a_stack] = B.where(double, first, old_a)
        self.tops[games, b_stack] = last
        first_slot = t["first_slot"][act]
        hand[games, first_slot] = B.where(double, EMPTY, hand[games, first_slot])
        hand[games, t["last_slot"][act]] = EMPTY
        self.hands.reshape(-1, HAND_SIZE)[self._base_game + self.active] = B.sort(hand)
        self.played = B.zeros((self.num_games, NUM_STACKS), B.bool_)
        self.played[games, a_stack] = True
        self.played[games, b_stack] = True
        self.counting = b_stack
        self.phase = ENTRY

    def _enter(self, a: Any, legal: Any, rewards: Any, orders: Any) -> StepResult:
        B = self.backend
        # Masks over the full batch cannot draw only for the games that need it: they
        # draw a deck for every game at every entry, the deal if it ends and (covered
        # cards first) the order if it reshuffles. A game uses at most one: one that
        # ends is dealt afresh, and its reshuffled pile is never seen.
        self._decks = None if B.syncs_free else B.permutations(self.gen, self.num_games,
                                                                DECK_SIZE)
        if orders is None and self._decks is not None and self.empty_pile == "reshuffle":
            orders = self._covered_first(self._decks)
        ended = self.sheet_state.enter(a, self.value, self._base_game + self.active, legal)
        pile_ran_out = self._refill(orders)
        self.turn += 1
        self._clear_announcement()
        self.phase = PLAY
        nxt = self._next_seats()
        if self.empty_pile == PILE_END:
            ended = ended | pile_ran_out
        elif self.empty_pile == PILE_NO_DRAW:
            next_hand = self.hands.reshape(-1, HAND_SIZE)[self._base_game + nxt]
            ended = ended | ((next_hand < EMPTY).sum(-1) == 0)
        return self._end_turn(ended, rewards, nxt)

    def _final_features(self, rows: Rows) -> Any:
        return self._features(rows, OVER)

    def _restart(self, rows: Rows) -> None:
        decks = self._decks
        if decks is None:  # index lists: shuffle for the ended games only
            decks = self.backend.permutations(self.gen, rows.count, DECK_SIZE)
        self._deal(rows, decks)

    def _refill(self, orders: Any) -> Any:
        """Draw the active seats back up to 3 cards (reshuffling when the rule says so);
        return (N,) bool: the pile is empty afterwards."""
        B, games = self.backend, self._games
        rows = self._base_game + self.active
        hand = self.hands.reshape(-1, HAND_SIZE)[rows]
        size = (hand < EMPTY).sum(-1)
        for slot in range(HAND_SIZE):
            wants = size <= slot  # this slot is empty: draw a card for it
            if B.known_empty(wants):
                continue
            empty_pile = self.pile_pos == self.pile_end
            if self.empty_pile == "reshuffle":
                self._reshuffle(B.rows(wants & empty_pile), orders)
            else:
                wants = wants & ~empty_pile
            card = self.pile[games, B.where(wants, self.pile_pos, 0)]
            hand[:, slot] = B.where(wants, card, hand[:, slot])
            self.pile_pos = self.pile_pos + B.astype(wants, B.int64)
        self.hands.reshape(-1, HAND_SIZE)[rows] = B.sort(hand)
        return self.pile_pos == self.pile_end

    def _reshuffle(self, rows: Rows, orders: Any) -> None:
        """The covered cards of the games ``rows`` become their new pile, in the order
        ``orders`` (N, 32) gives, else a random one."""
        B = self.backend
        if rows.empty:
            return
        covered = rows.take(self.covered)
        if orders is None:
            # Random keys for the covered cards, 2 (last) for the others: sorting gives a
            # uniform random order of the covered cards first.
            keys = B.where(covered, B.uniform(self.gen, (rows.count, DECK_SIZE)), 2.0)
            new = B.argsort(keys)
        else:
            new = rows.take(orders)
        rows.put(self.pile, new)
        rows.put(self.pile_pos, 0)
        rows.put(self.pile_end, covered.sum(-1))
        rows.put(self.covered, False)

    def _covered_first(self, decks: Any) -> Any:
        """Each game's covered cards in their order in ``decks`` (N, 32), then the others:
        a uniform random order of them when the decks are uniform permutations."""
        B = self.backend
        covered = B.take_along(self.covered, decks, -1)  # whether decks[n, i] is covered
        # Each card's place: covered ones in deck order, then the others. int8 (places
        # are below 32) halves the cost of these full-batch steps on a CPU.
        before = B.astype(covered, B.int8).cumsum(-1, dtype=B.int8)  # covered up to i
        others = self._positions - before + before[:, DECK_SIZE - 1:]
        place = B.where(covered, before - 1, others)
        out = B.empty(tuple(decks.shape), B.int64)
        B.put_along(out, B.astype(place, B.int64), decks, -1)
        return out

    # -- observations ----------------------------------------------------------------------
    def features(self) -> Any:
        """Global feature vectors (N, F) float32, the single engine's ``features()``
        (every hand included: for centralised critics, not for players)."""
        return self._features(None, self.phase)

    def _features(self, games: Rows | None, phase: int) -> Any:
        """Features of the games ``games`` (None: all) shown in ``phase`` (OVER: the end)."""
        B, t, P = self.backend, self._t, self.num_players

        def rows(x: Any) -> Any:
            return x if games is None else games.take(x)

        k = self.num_games if games is None else games.count
        card_feat, layout = t["card_feat"], self._layout
        c = layout.common
        out = B.zeros((k, self.feature_size), B.float32)
        self.sheet_state.write_features(out, games, SEAT.size)
        hands = rows(self.hands)
        sizes = (hands < EMPTY).sum(-1)
        hand_feat = card_feat[hands].reshape(k, P, HAND_FEATURES)
        for seat in range(P):
            out[:, layout.seats.start + seat * SEAT.size + SEAT.hand_size.start] = \
                t["hand_feat"][sizes[:, seat]]
            start = layout.hands.start + seat * HAND_FEATURES
            out[:, start:start + HAND_FEATURES] = hand_feat[:, seat]
        out[:, layout.active] = t["active_onehot"][rows(self.active)]
        out[:, c.phase] = t["phase_onehot"][phase]
        out[:, c.tops] = card_feat[rows(self.tops)].reshape(k, -1)
        out[:, c.pile.start] = t["pile_feat"][rows(self.pile_end) - rows(self.pile_pos)]
        out[:, c.covered] = B.astype(rows(self.covered), B.float32)
        if phase == ENTRY:
            value = rows(self.value)
            out[:, c.played] = B.astype(rows(self.played), B.float32)
            out[:, c.counting] = t["counting_onehot"][rows(self.counting)]
            out[:, c.value] = t["value_onehot"][B.where(value > 0, value, 0)]
            out[:, c.raw_value.start] = t["raw_value_feat"][value - MIN_PLAY_VALUE]
            out[:, c.colours] = t["colours_feat"][rows(self.colours)]
        return out
