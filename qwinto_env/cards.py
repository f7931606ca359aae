"""Qwinto: Das Kartenspiel (the card game) as a single-game engine.

Game properties (OpenSpiel style): 1-4 players (1 = solo, the player is always
active); explicit chance (the shuffled deck, and the reshuffles of the covered
cards); the active player rotates; the play is sequential for the active player,
the entry simultaneous for everybody; **imperfect information** (hands and the
draw-pile order are hidden); the game always terminates (every turn the active
player either writes a number or marks a misthrow, and both are bounded).

Cards
-----
32 cards, ids ``0..31``: card ``c`` has colour ``c // 8`` (0 orange, 1 yellow,
2 purple, 3 grey; the non-grey colours are the sheet's row indices) and value
``CARD_VALUES[c % 8]`` with ``CARD_VALUES = (-2, 0, 1, 2, 3, 4, 5, 6)``.

The four face-up stacks lie in a 2x2 square, positions ``0 1 / 2 3``; adjacency is
orthogonal only: 0-1, 0-2, 1-3, 2-3. Every hand is kept sorted by card id, so hand
slot 0 always holds the lowest id.

Turn and actions (``Discrete(88)``)
-----------------------------------
A turn is two env steps:

=========  ==========================================  ===========================
phase      active player                               everybody else
=========  ==========================================  ===========================
``PLAY``   28..39 single play, 40..87 double play      27 (nothing to decide)
``ENTRY``  0..26 write r*9+f, 27 misthrow              0..26 write, 27 pass
=========  ==========================================  ===========================

==========  =====================================================================
``0..26``   write the announced value in row ``a // 9`` (0 orange, 1 yellow,
            2 purple), field ``a % 9``; same meaning as in the dice game
``27``      pass; the active player's pass at entry is a misthrow; the only legal
            action of a seat with nothing to decide
``28..39``  single play: hand slot ``s = (a-28) // 4`` onto stack ``t = (a-28) % 4``
``40..87``  double play: ``k = a - 40``; the ordered slot pair
            ``SLOT_PAIRS[k // 8]`` = (i, j) and the ordered adjacent stack pair
            ``STACK_PAIRS[k % 8]`` = (A, B): card ``i`` goes onto stack ``A`` first,
            then card ``j`` onto stack ``B``. Legal when both cards have the same
            value.
==========  =====================================================================

``SLOT_PAIRS = ((0,1), (0,2), (1,0), (1,2), (2,0), (2,1))`` and
``STACK_PAIRS = ((0,1), (0,2), (1,0), (1,3), (2,0), (2,3), (3,1), (3,2))``.

Single play of card ``x`` onto stack ``t``: value = x + the tops of the two stacks
adjacent to ``t``; colours = the non-grey colours among those three cards. Double
play: value = 2v + the top of B's other neighbour (A's top is now the first card);
colours from the first card, the second card and that top. The value lies in -6..18
(three cards of at most 6), so it is never above 18; when it is below 1, or when the
three cards are all grey, nobody may write and the active player marks a misthrow.

After the entry the active player refills to 3 cards, the game ends if a player has
two complete rows or four misthrows (or by the ``empty_pile`` rule below), else the
next seat becomes active.

Observation (ego-centric: "seat k" is the k-th seat after me, k = 0 is me)
---------------------------------------------------------------------------
``feat(card)`` is 12 floats: colour one-hot (orange, yellow, purple, grey), then
value one-hot (-2, 0, 1, ..., 6).

===================  =====  ==========================================================
slice                size   content
===================  =====  ==========================================================
``32k .. 32k+26``    27     seat k's sheet, cell ``r*9+f``: value / 18, 0 = empty
``32k+27 .. 32k+30`` 4      seat k's misthrows, thermometer
``32k+31``           1      seat k's hand size / 3
``32n .. 32n+n-1``   n      active player, one-hot by relative seat
next                 36     my hand: slot 0, 1, 2 as ``feat(card)``; empty slot all 0
next                 2      phase one-hot: play, entry (all 0 once the game is over)
next                 48     stack tops 0..3, each ``feat(card)``
next                 1      draw-pile size / 25
next                 32     covered cards (under the tops), one flag per card id
next                 4      stacks that received a card this turn
next                 4      stack whose card's neighbours count (single card, or the
                            double play's second card), one-hot
next                 18     announced value one-hot 1..18 (all 0 before the play or
                            when the value is below 1)
next                 1      announced value (-6..18) as (value + 6) / 24; 0 before play
next                 3      announced colours: orange, yellow, purple
===================  =====  ==========================================================

The cards played this turn are the tops of the flagged stacks. Size ``33n + 149``.
Other seats' hands and the draw-pile order are never in an
observation. :meth:`CardGame.features` (the env's ``state()``) holds the same public
part in absolute seat order, then every seat's hand (36 floats each, seat 0 first),
then the common part.

Chance
------
``reset(seed=s)`` reseeds the game's own ``random.Random``. A reset without ``deck``
shuffles ``list(range(32))`` with ``rng.shuffle``. ``deck`` (a permutation of
0..31) is dealt as: ``deck[0..3]`` onto stacks 0..3, ``deck[4+3s .. 6+3s]`` to seat
``s`` (seat 0 first), the rest is the draw pile, ``deck[4+3n]`` drawn first.

A refill draws one card at a time from the pile. With ``empty_pile="reshuffle"``,
when the pile is empty and a card is still needed, the covered cards (all cards of
the stacks except the four tops, after this turn's play) become the new pile: with
``step(actions, chance=order)`` the pile is ``order`` (a permutation of
:meth:`CardGame.covered_cards`, first element drawn first); without ``chance`` it is
``sorted(covered)`` shuffled with ``rng.shuffle``. ``chance`` is ignored by steps that
do not reshuffle (:meth:`CardGame.will_reshuffle` tells in advance). A batched engine
reproduces a game exactly by passing the same ``deck`` and ``chance`` orders.

Options
-------
``empty_pile`` decides what happens when the draw pile runs out:

* ``"reshuffle"`` (default, RULES.md): shuffle the covered cards into a new pile
  and keep drawing. Hands are then always refilled to 3 (the covered cards always
  outnumber the cards needed).
* ``"end"``: the refill draws what there is; the game ends after the turn in which
  the pile became empty (or was found empty).
* ``"no_draw"``: the refill draws what there is and play goes on with smaller hands;
  the game ends when the player about to become active holds no card.

Version history: v0, first release.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

import numpy as np

from . import rules
from .game import Game, IllegalActionError, check_seed

# -- cards and stacks ----------------------------------------------------------
NUM_COLOURS = 4
GREY = 3
COLOUR_NAMES: tuple[str, ...] = ("orange", "yellow", "purple", "grey")
CARD_VALUES: tuple[int, ...] = (-2, 0, 1, 2, 3, 4, 5, 6)
DECK_SIZE = NUM_COLOURS * len(CARD_VALUES)
HAND_SIZE = 3
NUM_STACKS = 4
#: Colour and value of each card id.
CARD_COLOUR: tuple[int, ...] = tuple(c // len(CARD_VALUES) for c in range(DECK_SIZE))
CARD_VALUE: tuple[int, ...] = tuple(CARD_VALUES[c % len(CARD_VALUES)] for c in range(DECK_SIZE))
#: ``(colour name, value)`` of each card id.
CARD_TUPLES: tuple[tuple[str, int], ...] = tuple(
    (COLOUR_NAMES[CARD_COLOUR[c]], CARD_VALUE[c]) for c in range(DECK_SIZE))
#: Bit r (row r) set for a non-grey card of colour r; 0 for grey.
CARD_COLOUR_BIT: tuple[int, ...] = tuple(0 if k == GREY else 1 << k for k in CARD_COLOUR)
#: The rows (colours) of each colour bitmask 0..7.
COLOUR_ROWS: tuple[tuple[int, ...], ...] = tuple(
    tuple(r for r in range(rules.NUM_ROWS) if mask >> r & 1) for mask in range(8))
#: The two stacks orthogonally adjacent to each stack of the square ``0 1 / 2 3``.
NEIGHBOURS: tuple[tuple[int, int], ...] = ((1, 2), (0, 3), (0, 3), (1, 2))
#: ``OTHER_NEIGHBOUR[b][a]``: the neighbour of ``b`` that is not ``a`` (-1 if not adjacent).
OTHER_NEIGHBOUR: tuple[tuple[int, ...], ...] = tuple(
    tuple(NEIGHBOURS[b][1 - NEIGHBOURS[b].index(a)] if a in NEIGHBOURS[b] else -1
          for a in range(NUM_STACKS)) for b in range(NUM_STACKS))

# -- actions ---------------------------------------------------------------------
PASS = 27
SINGLE_FIRST = 28
DOUBLE_FIRST = SINGLE_FIRST + HAND_SIZE * NUM_STACKS  # 40
SLOT_PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1))
STACK_PAIRS: tuple[tuple[int, int], ...] = (
    (0, 1), (0, 2), (1, 0), (1, 3), (2, 0), (2, 3), (3, 1), (3, 2))
NUM_ACTIONS = DOUBLE_FIRST + len(SLOT_PAIRS) * len(STACK_PAIRS)  # 88
#: For each play action (28..87): (hand slots, stacks) in play order; the last card counts.
PLAYS: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {
    **{SINGLE_FIRST + s * NUM_STACKS + t: ((s,), (t,))
       for s in range(HAND_SIZE) for t in range(NUM_STACKS)},
    **{DOUBLE_FIRST + p * len(STACK_PAIRS) + q: (SLOT_PAIRS[p], STACK_PAIRS[q])
       for p in range(len(SLOT_PAIRS)) for q in range(len(STACK_PAIRS))},
}

PLAY, ENTRY, OVER = 0, 1, 2
PHASE_NAMES = ("play", "entry", "over")
EMPTY_PILE_RULES = ("reshuffle", "end", "no_draw")

# -- observation layout ----------------------------------------------------------
CARD_FEATS = NUM_COLOURS + len(CARD_VALUES)  # 12
PUBLIC_BLOCK = rules.NUM_CELLS + rules.MAX_MISTHROWS + 1  # sheet, misthrows, hand size
HAND_BLOCK = HAND_SIZE * CARD_FEATS  # 36
MAX_PILE = DECK_SIZE - NUM_STACKS - HAND_SIZE  # 25, the solo game's initial pile
MIN_PLAY_VALUE = 3 * min(CARD_VALUES)  # -6
PLAY_VALUE_SPAN = rules.MAX_VALUE - MIN_PLAY_VALUE  # 24
# Offsets inside the common part.
C_PHASE = 0
C_TOPS = C_PHASE + 2
C_PILE = C_TOPS + NUM_STACKS * CARD_FEATS
C_COVERED = C_PILE + 1
C_PLAYED = C_COVERED + DECK_SIZE
C_COUNTING = C_PLAYED + NUM_STACKS
C_VALUE = C_COUNTING + NUM_STACKS
C_RAW_VALUE = C_VALUE + rules.MAX_VALUE
C_COLOURS = C_RAW_VALUE + 1
COMMON = C_COLOURS + rules.NUM_ROWS  # 113
#: Offset of each card's value feature within ``feat(card)`` (the colour's is CARD_COLOUR).
_CARD_VALUE_FEAT = tuple(NUM_COLOURS + c % len(CARD_VALUES) for c in range(DECK_SIZE))


def observation_size(num_players: int) -> int:
    """Length of the card game's (ego-centric) observation vector."""
    return num_players * (PUBLIC_BLOCK + 1) + HAND_BLOCK + COMMON


def card_name(card: int) -> str:
    """``"orange 5"``-style name of a card id."""
    return f"{COLOUR_NAMES[CARD_COLOUR[card]]} {CARD_VALUE[card]}"


def play_result(hand: Sequence[int], tops: Sequence[int], action: int) -> tuple[int, int]:
    """Value and colour bitmask (bit r = row r) that play ``action`` announces.

    ``hand`` is the active player's sorted hand, ``tops`` the four stack tops before
    the play. The action is trusted to be a legal play for that hand.
    """
    slots, stacks = PLAYS[action]
    if len(slots) == 1:
        card = hand[slots[0]]
        n1, n2 = NEIGHBOURS[stacks[0]]
        counted = (card, tops[n1], tops[n2])
    else:  # the first card now tops the second stack's neighbour A; its other one counts
        first, second = hand[slots[0]], hand[slots[1]]
        counted = (first, second, tops[OTHER_NEIGHBOUR[stacks[1]][stacks[0]]])
    a, b, c = counted
    return (CARD_VALUE[a] + CARD_VALUE[b] + CARD_VALUE[c],
            CARD_COLOUR_BIT[a] | CARD_COLOUR_BIT[b] | CARD_COLOUR_BIT[c])


def _observation_indices(num_players: int) -> list[np.ndarray]:
    """Per seat, the permutation of the global features that makes its observation."""
    n = num_players
    active_start = n * PUBLIC_BLOCK
    hands_start = active_start + n
    common_start = hands_start + n * HAND_BLOCK
    per_seat = []
    for seat in range(n):
        order = [(seat + k) % n for k in range(n)]
        idx = [s * PUBLIC_BLOCK + i for s in order for i in range(PUBLIC_BLOCK)]
        idx += [active_start + s for s in order]
        idx += range(hands_start + seat * HAND_BLOCK, hands_start + (seat + 1) * HAND_BLOCK)
        idx += range(common_start, common_start + COMMON)
        per_seat.append(np.array(idx, dtype=np.intp))
    return per_seat


class CardGame(Game):
    """One game of Qwinto: Das Kartenspiel. See the module docstring for the tables.

    ``empty_pile`` is ``"reshuffle"`` (default), ``"end"`` or ``"no_draw"``.
    """

    name = "cards"
    num_actions = NUM_ACTIONS
    pass_action = PASS
    reset_options = ("deck",)

    def __init__(self, num_players: int = 2, seed: int | None = None,
                 empty_pile: str = "reshuffle"):
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) \
                or not 1 <= num_players <= 4:
            raise ValueError(f"num_players must be an integer in 1..4 for the card game "
                             f"(1 = solo), got {num_players!r}")
        if empty_pile not in EMPTY_PILE_RULES:
            raise ValueError(f"unknown empty_pile rule {empty_pile!r}; choose one of "
                             f"{EMPTY_PILE_RULES}")
        self.num_players = int(num_players)
        self.empty_pile = empty_pile
        n = self.num_players
        self._obs_index = _observation_indices(n)
        self._active_start = n * PUBLIC_BLOCK
        self._hands_start = self._active_start + n
        self._common_start = self._hands_start + n * HAND_BLOCK
        self._size = self._common_start + COMMON
        self.reset(seed)

    # -- state -------------------------------------------------------------
    def reset(self, seed: int | None = None, start_player: int = 0,
              deck: Sequence[int] | None = None) -> None:
        """Start a new game; ``deck`` fixes the deal (see the module docstring)."""
        seed = check_seed(seed)
        start_player = self.check_start_player(start_player)
        deck = self.check_reset_options({"deck": deck})["deck"]
        if seed is not None or not hasattr(self, "rng"):
            self.rng = random.Random(seed)
        if deck is None:
            deck = list(range(DECK_SIZE))
            self.rng.shuffle(deck)
        n = self.num_players
        self._new_sheets()
        self.stacks: list[list[int]] = [[card] for card in deck[:NUM_STACKS]]
        self.hands: list[list[int]] = [
            sorted(deck[NUM_STACKS + HAND_SIZE * s:NUM_STACKS + HAND_SIZE * (s + 1)])
            for s in range(n)]
        # The draw pile is stored reversed, so the next card is pile[-1] (pop is O(1)).
        self._pile: list[int] = list(reversed(deck[NUM_STACKS + HAND_SIZE * n:]))
        self.active = start_player
        self.phase = PLAY
        self.played: list[tuple[int, int]] = []  # (card, stack) this turn, in play order
        self.value = 0           # announced value (valid once ``played`` is non-empty)
        self.colours = 0         # announced colours, bit r = row r
        self.done = False
        self.turn = 0
        self.reshuffles = 0
        self.last_entries: list[int] = [PASS] * n
        # The feature vector is kept up to date by every change of state (a few
        # scalar writes per step instead of re-encoding ~100 one-hot bits).
        self._feats = np.zeros(self._size, dtype=np.float32)
        self._encode_all()
        self._legal = None

    def check_reset_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """``deck`` (if in ``options``) as a list of card ids, or ValueError unless it is
        ``None`` or a permutation of 0..31; other keys are left out."""
        if "deck" not in options:
            return {}
        deck = options["deck"]
        if deck is not None:
            deck = self._check_order("deck", deck, range(DECK_SIZE))
        return {"deck": deck}

    @staticmethod
    def _check_order(name: str, order: Any, expected: Any) -> list[int]:
        """``order`` as a list of ints, or ValueError unless it is a permutation of ``expected``."""
        try:
            items = list(order)
        except TypeError as exc:
            raise ValueError(f"{name} must be a sequence of card ids, got {order!r}") from exc
        if not all(isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_))
                   for c in items):
            raise ValueError(f"{name} must be a sequence of integer card ids, got {order!r}")
        cards = [int(c) for c in items]
        if sorted(cards) != sorted(expected):
            raise ValueError(f"{name} must be a permutation of the card ids "
                             f"{sorted(expected)}, got {cards}")
        return cards

    def draw_pile(self) -> list[int]:
        """The draw pile in draw order (first element drawn next). Hidden from players."""
        return self._pile[::-1]

    def covered_cards(self) -> list[int]:
        """The cards under the four stack tops, ascending (a reshuffle's input)."""
        return sorted(c for stack in self.stacks for c in stack[:-1])

    def tops(self) -> list[int]:
        """The four stack tops (card ids), stacks 0..3."""
        return [stack[-1] for stack in self.stacks]

    def will_reshuffle(self) -> bool:
        """Whether the next step reshuffles the covered cards into a new draw pile."""
        if self.phase != ENTRY or self.empty_pile != "reshuffle":
            return False
        return len(self._pile) < HAND_SIZE - len(self.hands[self.active])

    # -- rules -------------------------------------------------------------
    def _compute_legal(self, seat: int) -> list[int]:
        phase = self.phase
        if phase == ENTRY:
            value = self.value
            if not 1 <= value <= rules.MAX_VALUE or not self.colours:
                return [PASS]
            return self._entry_legal(seat, COLOUR_ROWS[self.colours], value)
        if seat != self.active or phase == OVER:
            return [PASS]
        hand = self.hands[seat]
        size = len(hand)
        legal = [SINGLE_FIRST + s * NUM_STACKS + t for s in range(size) for t in range(NUM_STACKS)]
        for p, (i, j) in enumerate(SLOT_PAIRS):
            if i < size and j < size and CARD_VALUE[hand[i]] == CARD_VALUE[hand[j]]:
                first = DOUBLE_FIRST + p * len(STACK_PAIRS)
                legal.extend(range(first, first + len(STACK_PAIRS)))
        return legal

    def step(self, actions: Sequence[int], chance: Sequence[int] | None = None, *,
             validate: bool = True) -> None:
        """Apply one joint action. ``chance`` is the new draw-pile order when this
        step reshuffles (see the module docstring); other steps ignore it."""
        if self.done:
            raise IllegalActionError("the table", actions, "the game is over; call reset()")
        if validate:
            actions = self.check_actions(actions)
        if chance is not None and self.will_reshuffle():
            chance = self._check_order("chance (the reshuffled draw pile)", chance,
                                       self.covered_cards())
        else:
            chance = None
        self._legal = None
        if self.phase == PLAY:
            self._play(actions[self.active])
        else:
            self._enter(actions, chance)

    def _play(self, action: int) -> None:
        hand = self.hands[self.active]
        self.value, self.colours = play_result(hand, self.tops(), action)
        slots, stacks = PLAYS[action]
        cards = [hand[s] for s in slots]
        for card, stack in zip(cards, stacks):
            self.stacks[stack].append(card)
            hand.remove(card)
        self.played = list(zip(cards, stacks))
        self.phase = ENTRY
        self._encode_play(stacks)

    def _enter(self, actions: list[int], chance: list[int] | None) -> None:
        value = self.value
        active = self.active
        for seat, action in enumerate(actions):
            if action != PASS:
                self._write(seat, action, value)
            elif seat == active:
                self._misthrow(seat)
        self.last_entries = actions
        pile_ran_out = self._refill(active, chance)
        self.played, self.value, self.colours = [], 0, 0
        self.turn += 1
        nxt = (active + 1) % self.num_players
        if self.game_over() or (self.empty_pile == "end" and pile_ran_out) or \
                (self.empty_pile == "no_draw" and not self.hands[nxt]):
            self.done = True
            self.phase = OVER
        else:
            self.active = nxt
            self.phase = PLAY
        self._encode_turn_end(active)

    def _write(self, seat: int, cell: int, value: int) -> None:
        super()._write(seat, cell, value)
        self._feats[seat * PUBLIC_BLOCK + cell] = value / rules.MAX_VALUE
        self._legal = None

    def _misthrow(self, seat: int) -> None:
        super()._misthrow(seat)
        self._feats[seat * PUBLIC_BLOCK + rules.NUM_CELLS + self.misthrows[seat] - 1] = 1.0

    def _refill(self, seat: int, chance: list[int] | None) -> bool:
        """Draw ``seat`` back up to 3 cards; whether the draw pile is empty afterwards."""
        hand = self.hands[seat]
        pile = self._pile
        while len(hand) < HAND_SIZE:
            if not pile:
                if self.empty_pile != "reshuffle":
                    break
                self._reshuffle(chance)
            hand.append(pile.pop())
        hand.sort()
        return not pile

    def _reshuffle(self, chance: list[int] | None) -> None:
        """Turn the covered cards into the new draw pile (``chance`` = its draw order)."""
        if chance is None:
            chance = self.covered_cards()
            self.rng.shuffle(chance)
        for stack in self.stacks:
            del stack[:-1]
        self._pile[:] = chance[::-1]
        self.reshuffles += 1
        base = self._common_start + C_COVERED
        self._feats[base:base + DECK_SIZE] = 0.0

    # -- observation ---------------------------------------------------------
    def features(self) -> np.ndarray:
        return self._feats.copy()

    def _encode_card(self, off: int, card: int) -> None:
        feats = self._feats
        feats[off:off + CARD_FEATS] = 0.0
        feats[off + CARD_COLOUR[card]] = 1.0
        feats[off + _CARD_VALUE_FEAT[card]] = 1.0

    def _encode_hand(self, seat: int) -> None:
        feats = self._feats
        hand = self.hands[seat]
        off = self._hands_start + seat * HAND_BLOCK
        feats[off:off + HAND_BLOCK] = 0.0
        for card in hand:
            feats[off + CARD_COLOUR[card]] = 1.0
            feats[off + _CARD_VALUE_FEAT[card]] = 1.0
            off += CARD_FEATS
        feats[seat * PUBLIC_BLOCK + PUBLIC_BLOCK - 1] = len(hand) / HAND_SIZE

    def _encode_all(self) -> None:
        """Encode everything but the sheets from scratch (new game or edited state)."""
        feats = self._feats
        base = self._common_start
        feats[self._active_start:] = 0.0
        feats[self._active_start + self.active] = 1.0
        for seat in range(self.num_players):
            self._encode_hand(seat)
        if self.phase != OVER:
            feats[base + C_PHASE + self.phase] = 1.0
        for t, stack in enumerate(self.stacks):
            self._encode_card(base + C_TOPS + t * CARD_FEATS, stack[-1])
            for card in stack[:-1]:
                feats[base + C_COVERED + card] = 1.0
        feats[base + C_PILE] = len(self._pile) / MAX_PILE
        if self.played:
            self._encode_announcement()

    def _encode_announcement(self) -> None:
        feats = self._feats
        base = self._common_start
        for _, t in self.played:
            feats[base + C_PLAYED + t] = 1.0
        feats[base + C_COUNTING + self.played[-1][1]] = 1.0
        value = self.value
        if 1 <= value <= rules.MAX_VALUE:
            feats[base + C_VALUE + value - 1] = 1.0
        feats[base + C_RAW_VALUE] = (value - MIN_PLAY_VALUE) / PLAY_VALUE_SPAN
        for r in COLOUR_ROWS[self.colours]:
            feats[base + C_COLOURS + r] = 1.0

    def _encode_play(self, stacks: Sequence[int]) -> None:
        """Features after the active player played onto ``stacks``."""
        feats = self._feats
        base = self._common_start
        self._encode_hand(self.active)
        for stack in stacks:
            self._encode_card(base + C_TOPS + stack * CARD_FEATS, self.stacks[stack][-1])
            feats[base + C_COVERED + self.stacks[stack][-2]] = 1.0
        feats[base + C_PHASE + PLAY] = 0.0
        feats[base + C_PHASE + ENTRY] = 1.0
        self._encode_announcement()

    def _encode_turn_end(self, refilled: int) -> None:
        """Features after the entry, the refill of seat ``refilled`` and the end check."""
        feats = self._feats
        base = self._common_start
        self._encode_hand(refilled)
        feats[base + C_PILE] = len(self._pile) / MAX_PILE
        feats[base + C_PLAYED:base + COMMON] = 0.0
        feats[base + C_PHASE + ENTRY] = 0.0
        if self.phase == PLAY:
            feats[base + C_PHASE + PLAY] = 1.0
        feats[self._active_start + refilled] = 0.0
        feats[self._active_start + self.active] = 1.0

    def observation_index(self, seat: int) -> np.ndarray:
        return self._obs_index[seat]

    def public_info(self) -> dict[str, Any]:
        """Phase, active player, stacks, pile size, hand sizes and this turn's play.

        ``roll`` is the announcement, named as in the dice game so tools that read
        ``roll["value"]`` work for both games: ``{"colours", "value", "cards"}``, with the
        same keys on every step (for Gymnasium's vector envs, which stack infos key by
        key); before the play its ``cards`` and ``colours`` are ``()`` and its ``value``
        0 (a played value can be 0 too: ``cards`` tells them apart).
        ``reroll_available`` is always ``False`` (the card game has no re-roll).
        """
        played = tuple((CARD_TUPLES[card], stack) for card, stack in self.played)
        roll = {"colours": tuple(rules.ROW_NAMES[r] for r in COLOUR_ROWS[self.colours]),
                "value": self.value, "cards": tuple(card for card, _ in played)}
        return {"phase": PHASE_NAMES[self.phase], "roll": roll, "active_player": self.active,
                "reroll_available": False, "played": played,
                "stacks": tuple(CARD_TUPLES[stack[-1]] for stack in self.stacks),
                "pile_size": len(self._pile),
                "hand_sizes": tuple(len(hand) for hand in self.hands)}

    def private_info(self, seat: int) -> dict[str, Any]:
        """``seat``'s own hand as ``(colour, value)`` tuples, in slot order."""
        return {"hand": tuple(map(CARD_TUPLES.__getitem__, self.hands[seat]))}

    def render(self) -> str:
        from .render import render_sheets  # render is a leaf; import lazily for speed
        tops = [f"[{card_name(top):>9}]" for top in self.tops()]
        covered = sum(len(stack) - 1 for stack in self.stacks)
        lines = [f"Qwinto cards, turn {self.turn + 1}, player {self.active} active, "
                 f"phase {PHASE_NAMES[self.phase]}",
                 f"stacks  {tops[0]} {tops[1]}   draw pile {len(self._pile)}, "
                 f"covered {covered}",
                 f"        {tops[2]} {tops[3]}"]
        if self.played:
            cards = ", ".join(f"{card_name(c)} on stack {t}" for c, t in self.played)
            colours = "+".join(rules.ROW_NAMES[r] for r in range(rules.NUM_ROWS)
                               if self.colours >> r & 1) or "no colour"
            writable = "" if self.colours and self.value >= 1 else " (nobody can write)"
            lines.append(f"played {cards}: value {self.value}, {colours}{writable}")
        lines.append("hands   " + ", ".join(f"player {s}: {len(h)} cards"
                                            for s, h in enumerate(self.hands)))
        return "\n".join(lines) + "\n" + render_sheets(self.cells, self.misthrows, self.scores())
