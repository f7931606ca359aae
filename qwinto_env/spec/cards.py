"""Qwinto: Das Kartenspiel (the card game): its facts and its card rules, declared once.

The single-game engine (:mod:`qwinto_env.cards`), the batched engine
(:mod:`qwinto_env.batched.cards`), :mod:`qwinto_env.view`, the features and the bots read
them from here.

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
three cards are all grey, nobody may write and the active player marks a misthrow
(:func:`play_result`).

After the entry the active player refills to 3 cards, the game ends if a player has
two complete rows or four misthrows (or by the ``empty_pile`` rule, see
:mod:`qwinto_env.cards`), else the next seat becomes active.

Observation (ego-centric: "seat k" is the k-th seat after me, k = 0 is me)
---------------------------------------------------------------------------
``feat(card)`` (:data:`CARD`) is 12 floats: ``colour`` one-hot (orange, yellow, purple,
grey), then ``value`` one-hot (-2, 0, 1, ..., 6). Pieces of :func:`observation_layout`:

======================  =====  ==========================================================
piece                   size   content
======================  =====  ==========================================================
``seats``               32n    per seat k a :data:`SEAT` block: ``cells`` (27, value /
                               18, 0 = empty), ``misthrows`` (4, thermometer),
                               ``hand_size`` (1, hand size / 3)
``active``              n      active player, one-hot by relative seat
``hand``                36     my hand: slot 0, 1, 2 as ``feat(card)``; empty slot all 0
``common.phase``        2      phase one-hot: play, entry (all 0 once the game is over)
``common.tops``         48     stack tops 0..3, each ``feat(card)``
``common.pile``         1      draw-pile size / 25
``common.covered``      32     covered cards (under the tops), one flag per card id
``common.played``       4      stacks that received a card this turn
``common.counting``     4      stack whose card's neighbours count (single card, or
                               the double play's second card), one-hot
``common.value``        18     announced value one-hot 1..18 (all 0 before the play or
                               when the value is below 1)
``common.raw_value``    1      announced value (-6..18) as (value + 6) / 24; 0 before
                               the play
``common.colours``      3      announced colours: orange, yellow, purple
======================  =====  ==========================================================

The cards played this turn are the tops of the flagged stacks. Size ``33n + 149``.
Other seats' hands and the draw-pile order are never in an observation. The global
features (``state()``, :func:`features_layout`) hold the same public part in absolute
seat order, then every seat's hand (``hands``: 36 floats each, seat 0 first), then the
common part.
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from .. import rules
from .base import COLOUR_ROWS, NUMERIC_INFOS, PASS, SHEET, GameSpec, Layout, ego_indices

__all__ = ["NUM_COLOURS", "GREY", "COLOUR_NAMES", "CARD_VALUES", "DECK_SIZE", "HAND_SIZE",
           "NUM_STACKS", "CARD_COLOUR", "CARD_VALUE", "CARD_TUPLES", "CARD_COLOUR_BIT",
           "COLOUR_ROWS", "STACK_NAMES", "STACK_CODES", "NEIGHBOURS", "OTHER_NEIGHBOUR",
           "MIN_PLAY_VALUE", "PASS", "SINGLE_FIRST", "DOUBLE_FIRST", "SLOT_PAIRS",
           "STACK_PAIRS", "NUM_ACTIONS", "PLAYS", "PUBLIC_PLAYS", "public_action",
           "PLAY_COUNTED", "SINGLE_PLAYS", "DOUBLE_PLAYS", "PLAY", "ENTRY", "OVER", "PHASE_NAMES",
           "EMPTY_PILE_RULES", "PILE_RESHUFFLE", "PILE_END", "PILE_NO_DRAW",
           "CARD", "CARD_FEATURE_INDICES", "SEAT", "HAND_FEATURES", "COMMON", "MAX_PILE",
           "PLAY_VALUE_SPAN", "observation_layout", "features_layout", "observation_size",
           "observation_indices", "card_name", "play_result", "check_empty_pile",
           "MAX_PLAYED", "NO_CARD", "numeric_infos", "SPEC"]

# -- cards and stacks ----------------------------------------------------------
NUM_COLOURS = 4
GREY = 3
COLOUR_NAMES: tuple[str, ...] = ("orange", "yellow", "purple", "grey")
CARD_VALUES: tuple[int, ...] = (-2, 0, 1, 2, 3, 4, 5, 6)
DECK_SIZE = NUM_COLOURS * len(CARD_VALUES)
HAND_SIZE = 3
NUM_STACKS = 4
#: The stacks of the square ``0 1 / 2 3`` by name, and by the short code a terminal shows.
STACK_NAMES: tuple[str, ...] = ("top-left", "top-right", "bottom-left", "bottom-right")
STACK_CODES: tuple[str, ...] = tuple("".join(w[0].upper() for w in n.split("-"))
                                     for n in STACK_NAMES)
#: Colour and value of each card id.
CARD_COLOUR: tuple[int, ...] = tuple(c // len(CARD_VALUES) for c in range(DECK_SIZE))
CARD_VALUE: tuple[int, ...] = tuple(CARD_VALUES[c % len(CARD_VALUES)] for c in range(DECK_SIZE))
#: ``(colour name, value)`` of each card id.
CARD_TUPLES: tuple[tuple[str, int], ...] = tuple(
    (COLOUR_NAMES[CARD_COLOUR[c]], CARD_VALUE[c]) for c in range(DECK_SIZE))
#: Bit r (row r) set for a non-grey card of colour r; 0 for grey.
CARD_COLOUR_BIT: tuple[int, ...] = tuple(0 if k == GREY else 1 << k for k in CARD_COLOUR)
#: The two stacks orthogonally adjacent to each stack of the square ``0 1 / 2 3``.
NEIGHBOURS: tuple[tuple[int, int], ...] = ((1, 2), (0, 3), (0, 3), (1, 2))
#: ``OTHER_NEIGHBOUR[b][a]``: the neighbour of ``b`` that is not ``a`` (-1 if not adjacent).
OTHER_NEIGHBOUR: tuple[tuple[int, ...], ...] = tuple(
    tuple(NEIGHBOURS[b][1 - NEIGHBOURS[b].index(a)] if a in NEIGHBOURS[b] else -1
          for a in range(NUM_STACKS)) for b in range(NUM_STACKS))
#: Announced values lie in ``MIN_PLAY_VALUE..18`` (three cards of at least -2).
MIN_PLAY_VALUE = 3 * min(CARD_VALUES)

# -- actions (0..26 write and 27 pass: see qwinto_env.spec.base) -------------------------
SINGLE_FIRST = PASS + 1
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
#: For each play action (row ``a - SINGLE_FIRST``), the three cards whose values and
#: colours it announces, as indices into the hand's slots followed by the stack tops
#: (``0..2`` slot, ``3..6`` stack): the array form of :func:`play_result`.
PLAY_COUNTED = np.array(
    [(slots[0], HAND_SIZE + NEIGHBOURS[stacks[0]][0], HAND_SIZE + NEIGHBOURS[stacks[0]][1])
     if len(slots) == 1 else
     (slots[0], slots[1], HAND_SIZE + OTHER_NEIGHBOUR[stacks[1]][stacks[0]])
     for _, (slots, stacks) in sorted(PLAYS.items())], dtype=np.int64)
#: The single plays of a hand of ``h`` cards (``SINGLE_PLAYS[h]``), all legal at a play.
SINGLE_PLAYS: tuple[tuple[int, ...], ...] = tuple(
    tuple(a for a, (slots, _) in PLAYS.items() if len(slots) == 1 and slots[0] < h)
    for h in range(HAND_SIZE + 1))
#: The double plays of each slot pair (``SLOT_PAIRS[p]``), legal when both slots hold a
#: card and the two cards have the same value.
DOUBLE_PLAYS: tuple[tuple[int, ...], ...] = tuple(
    tuple(a for a, (slots, _) in PLAYS.items() if slots == pair) for pair in SLOT_PAIRS)

#: The most cards one play puts down (a double play's two).
MAX_PLAYED = max(len(slots) for slots, _ in PLAYS.values())

# -- phases and options ------------------------------------------------------------------
PLAY, ENTRY, OVER = range(3)
PHASE_NAMES = ("play", "entry", "over")
#: What happens when the draw pile runs out (see :mod:`qwinto_env.cards`).
PILE_RESHUFFLE, PILE_END, PILE_NO_DRAW = EMPTY_PILE_RULES = ("reshuffle", "end", "no_draw")

# -- observation -------------------------------------------------------------------------
#: ``feat(card)``: colour one-hot, then value one-hot.
CARD = Layout(colour=NUM_COLOURS, value=len(CARD_VALUES))
#: Per card id, its two set indices within ``feat(card)``: the colour's and the value's.
CARD_FEATURE_INDICES: tuple[tuple[int, int], ...] = tuple(
    (CARD.colour.start + CARD_COLOUR[c], CARD.value.start + c % len(CARD_VALUES))
    for c in range(DECK_SIZE))
#: A seat's block: its sheet block, then its hand size.
SEAT = Layout(**SHEET.pieces, hand_size=1)
HAND_FEATURES = HAND_SIZE * CARD.size
#: After the seat blocks, the active one-hot and the hand(s) (one phase flag but OVER's).
COMMON = Layout(phase=OVER, tops=NUM_STACKS * CARD.size, pile=1, covered=DECK_SIZE,
                played=NUM_STACKS, counting=NUM_STACKS, value=rules.MAX_VALUE, raw_value=1,
                colours=rules.NUM_ROWS)
#: The draw pile's size is shown divided by this: the solo game's initial pile (25).
MAX_PILE = DECK_SIZE - NUM_STACKS - HAND_SIZE
#: The announced value is shown as ``(value - MIN_PLAY_VALUE) / PLAY_VALUE_SPAN``.
PLAY_VALUE_SPAN = rules.MAX_VALUE - MIN_PLAY_VALUE


@functools.lru_cache(maxsize=None)
def observation_layout(num_players: int) -> Layout:
    """The pieces of an ``num_players``-player observation (module docstring)."""
    return Layout(seats=num_players * SEAT.size, active=num_players, hand=HAND_FEATURES,
                  common=COMMON)


@functools.lru_cache(maxsize=None)
def features_layout(num_players: int) -> Layout:
    """The pieces of the global features: every seat's hand where the observation has one."""
    return Layout(seats=num_players * SEAT.size, active=num_players,
                  hands=num_players * HAND_FEATURES, common=COMMON)


def observation_size(num_players: int) -> int:
    """Length of the card game's (ego-centric) observation vector (``33 n + 149``)."""
    return observation_layout(num_players).size


def observation_indices(num_players: int) -> list[np.ndarray]:
    """Per seat, the permutation of the global features that makes its observation."""
    return ego_indices(features_layout(num_players), num_players,
                       rotate=("seats", "active"), own=("hands",))


# -- the card rules ----------------------------------------------------------------------
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


def check_empty_pile(empty_pile: str) -> str:
    """``empty_pile`` unchanged; ValueError unless it is one of :data:`EMPTY_PILE_RULES`."""
    if empty_pile not in EMPTY_PILE_RULES:
        raise ValueError(f"unknown empty_pile rule {empty_pile!r}; choose one of "
                         f"{EMPTY_PILE_RULES}")
    return empty_pile


#: Each play as the other players see it: the same stacks, from the first hand slots
#: (which card of a hidden hand was played would tell where it lay in the sorted hand).
PUBLIC_PLAYS: dict[int, int] = {
    a: next(b for b, (from_slots, onto) in PLAYS.items()
            if onto == stacks and from_slots == tuple(range(len(slots))))
    for a, (slots, stacks) in PLAYS.items()}


def public_action(action: int) -> int:
    """``action`` as the other players see it: a play as in :data:`PUBLIC_PLAYS`."""
    return PUBLIC_PLAYS.get(int(action), int(action))


# -- infos ------------------------------------------------------------------------------
#: What fills a card slot without a card in the numeric infos (no colour, value or stack
#: is -1).
NO_CARD = -1


def numeric_infos(num_players: int) -> dict[str, tuple[int, ...]]:
    """The card game's ``infos="numeric"`` keys and shapes: both games'
    (:data:`~qwinto_env.spec.base.NUMERIC_INFOS`; ``roll_colours`` and ``roll_value``
    are the announcement, ``reroll_available`` is 0) and

    * ``played`` (2, 3): this turn's cards in play order, as (colour, value, stack);
    * ``stacks`` (4, 2): the four stack tops, as (colour, value);
    * ``pile_size`` (): the cards left in the draw pile;
    * ``hand_sizes`` (n,): the cards in each seat's hand;
    * ``hand`` (3, 2): **the agent's own** hand, (colour, value) per slot.

    A colour is its index in :data:`COLOUR_NAMES` (3 = grey); a slot without a card is
    :data:`NO_CARD` in every column.
    """
    return {**NUMERIC_INFOS, "played": (MAX_PLAYED, 3), "stacks": (NUM_STACKS, 2),
            "pile_size": (), "hand_sizes": (num_players,), "hand": (HAND_SIZE, 2)}


SPEC = GameSpec(name="cards", title="card game", min_players=1, max_players=4,
                num_actions=NUM_ACTIONS, pass_action=PASS, phases=PHASE_NAMES,
                steps_per_turn=2, observation_size=observation_size,
                numeric_infos=numeric_infos, public_action=public_action)
