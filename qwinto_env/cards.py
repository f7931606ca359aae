"""Qwinto: Das Kartenspiel (the card game) as a single-game engine.

The game's facts and card rules (cards, stacks, actions, phases, player limits,
observation layout, :func:`play_result`) are declared in :mod:`qwinto_env.spec.cards`
and re-exported here: ``qwinto_env.cards`` is the card game's public module.

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
from .spec.base import colour_flags, padded_rows
from .spec.cards import *  # noqa: F403 -- the game's facts are part of this module's API


def _card_pair(card: int) -> tuple[int, int]:
    """Colour index and value of ``card``, as the numeric infos give a card."""
    return CARD_COLOUR[card], CARD_VALUE[card]


class CardGame(Game):
    """One game of Qwinto: Das Kartenspiel. See the module docstring for the tables.

    ``empty_pile`` is ``"reshuffle"`` (default), ``"end"`` or ``"no_draw"``.
    """

    spec = SPEC
    reset_options = ("deck",)

    def __init__(self, num_players: int = 2, seed: int | None = None,
                 empty_pile: str = "reshuffle"):
        n = self.num_players = SPEC.check_num_players(num_players)
        self.empty_pile = check_empty_pile(empty_pile)
        self._obs_index = observation_indices(n)
        self._info_shapes = SPEC.numeric_infos(n)
        layout = features_layout(n)
        self._size = layout.size
        self._locate_sheets(layout.seats.start, SEAT.size)
        self._hand_size_at = [start + SEAT.hand_size.start for start in
                              range(layout.seats.start, layout.seats.stop, SEAT.size)]
        self._active_start, self._hands_start = layout.active.start, layout.hands.start
        # Where each piece of the common part starts (ints: the encoders run every step).
        c = layout.common
        self._phase_at, self._tops_at, self._pile_at = c.phase.start, c.tops.start, c.pile.start
        self._covered_at, self._played_at = c.covered.start, c.played.start
        self._counting_at, self._value_at = c.counting.start, c.value.start
        self._raw_value_at, self._colours_at = c.raw_value.start, c.colours.start
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

    def stack_pile(self, cards: Sequence[int]) -> None:
        """Move ``cards`` (distinct cards of the draw pile) to its top, ``cards[0]`` drawn
        next. Only the hidden order changes, nothing an observation shows: callers that
        draw each card as a chance outcome of their own (:mod:`qwinto_env.openspiel`)
        make the refill take it. ValueError naming the cards not in the pile."""
        pile = self._pile
        missing = [c for c in cards if c not in pile]
        if missing or len(set(cards)) != len(cards):
            raise ValueError(f"stack_pile needs distinct cards of the draw pile; "
                             f"{missing or list(cards)} are not (pile: {sorted(pile)})")
        for card in cards:
            pile.remove(card)
        pile.extend(reversed(cards))

    def covered_cards(self) -> list[int]:
        """The cards under the four stack tops, ascending (a reshuffle's input)."""
        return sorted(c for stack in self.stacks for c in stack[:-1])

    def tops(self) -> list[int]:
        """The four stack tops (card ids), stacks 0..3."""
        return [stack[-1] for stack in self.stacks]

    def will_reshuffle(self) -> bool:
        """Whether the next step reshuffles the covered cards into a new draw pile."""
        if self.phase != ENTRY or self.empty_pile != PILE_RESHUFFLE:
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
        legal = list(SINGLE_PLAYS[size])
        for p, (i, j) in enumerate(SLOT_PAIRS):
            if i < size and j < size and CARD_VALUE[hand[i]] == CARD_VALUE[hand[j]]:
                legal.extend(DOUBLE_PLAYS[p])
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
        if self.game_over() or (self.empty_pile == PILE_END and pile_ran_out) or \
                (self.empty_pile == PILE_NO_DRAW and not self.hands[nxt]):
            self.done = True
            self.phase = OVER
        else:
            self.active = nxt
            self.phase = PLAY
        self._encode_turn_end(active)

    def _refill(self, seat: int, chance: list[int] | None) -> bool:
        """Draw ``seat`` back up to 3 cards; whether the draw pile is empty afterwards."""
        hand = self.hands[seat]
        pile = self._pile
        while len(hand) < HAND_SIZE:
            if not pile:
                if self.empty_pile != PILE_RESHUFFLE:
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
        self._feats[self._covered_at:self._covered_at + DECK_SIZE] = 0.0

    # -- observation ---------------------------------------------------------
    def features(self) -> np.ndarray:
        return self._feats.copy()

    def _encode_card(self, off: int, card: int) -> None:
        feats = self._feats
        feats[off:off + CARD.size] = 0.0
        colour, value = CARD_FEATURE_INDICES[card]
        feats[off + colour] = 1.0
        feats[off + value] = 1.0

    def _encode_hand(self, seat: int) -> None:
        feats = self._feats
        hand = self.hands[seat]
        off = self._hands_start + seat * HAND_FEATURES
        feats[off:off + HAND_FEATURES] = 0.0
        for card in hand:
            colour, value = CARD_FEATURE_INDICES[card]
            feats[off + colour] = 1.0
            feats[off + value] = 1.0
            off += CARD.size
        feats[self._hand_size_at[seat]] = len(hand) / HAND_SIZE

    def _encode_all(self) -> None:
        """Encode everything but the sheets from scratch (new game or edited state)."""
        feats = self._feats
        feats[self._active_start:] = 0.0
        feats[self._active_start + self.active] = 1.0
        for seat in range(self.num_players):
            self._encode_hand(seat)
        if self.phase != OVER:
            feats[self._phase_at + self.phase] = 1.0
        for t, stack in enumerate(self.stacks):
            self._encode_card(self._tops_at + t * CARD.size, stack[-1])
            for card in stack[:-1]:
                feats[self._covered_at + card] = 1.0
        feats[self._pile_at] = len(self._pile) / MAX_PILE
        if self.played:
            self._encode_announcement()

    def _encode_announcement(self) -> None:
        feats = self._feats
        for _, t in self.played:
            feats[self._played_at + t] = 1.0
        feats[self._counting_at + self.played[-1][1]] = 1.0
        value = self.value
        if 1 <= value <= rules.MAX_VALUE:
            feats[self._value_at + value - 1] = 1.0
        feats[self._raw_value_at] = (value - MIN_PLAY_VALUE) / PLAY_VALUE_SPAN
        for r in COLOUR_ROWS[self.colours]:
            feats[self._colours_at + r] = 1.0

    def _encode_play(self, stacks: Sequence[int]) -> None:
        """Features after the active player played onto ``stacks``."""
        feats = self._feats
        self._encode_hand(self.active)
        for stack in stacks:
            self._encode_card(self._tops_at + stack * CARD.size, self.stacks[stack][-1])
            feats[self._covered_at + self.stacks[stack][-2]] = 1.0
        feats[self._phase_at + PLAY] = 0.0
        feats[self._phase_at + ENTRY] = 1.0
        self._encode_announcement()

    def _encode_turn_end(self, refilled: int) -> None:
        """Features after the entry, the refill of seat ``refilled`` and the end check."""
        feats = self._feats
        self._encode_hand(refilled)
        feats[self._pile_at] = len(self._pile) / MAX_PILE
        feats[self._played_at:self._size] = 0.0
        feats[self._phase_at + ENTRY] = 0.0
        if self.phase == PLAY:
            feats[self._phase_at + PLAY] = 1.0
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

    def numeric_public_info(self) -> dict[str, Any]:
        """:meth:`public_info` as numbers: a card is its colour (0..3, 3 grey) and value,
        a slot without a card :data:`NO_CARD` in every column; ``reroll_available`` 0."""
        shapes = self._info_shapes
        played = [(*_card_pair(card), stack) for card, stack in self.played]
        tops = [_card_pair(stack[-1]) for stack in self.stacks]
        return {"phase": self.phase, "active_player": self.active, "reroll_available": 0,
                "roll_colours": colour_flags(self.colours), "roll_value": self.value,
                "played": padded_rows(played, shapes["played"], NO_CARD),
                "stacks": padded_rows(tops, shapes["stacks"], NO_CARD),
                "pile_size": len(self._pile),
                "hand_sizes": np.array([len(hand) for hand in self.hands], dtype=np.int64)}

    def numeric_private_info(self, seat: int) -> dict[str, Any]:
        """``seat``'s own hand as (colour, value) rows, in slot order."""
        hand = [_card_pair(card) for card in self.hands[seat]]
        return {"hand": padded_rows(hand, self._info_shapes["hand"], NO_CARD)}

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
