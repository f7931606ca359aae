"""The card game's rules at engine level: deck, adjacency, plays, entry, refill,
reshuffle, the end conditions, explicit chance, and property tests over random games."""

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwinto_env import cards, rules
from qwinto_env.cards import (DOUBLE_FIRST, ENTRY, OVER, PASS, PLAY, SINGLE_FIRST, SLOT_PAIRS,
                              STACK_PAIRS, CardGame)
from qwinto_env.game import IllegalActionError

COLOURS = ("orange", "yellow", "purple", "grey")
# Adjacency of the square 0 1 / 2 3, written out independently of the engine's tables.
ADJACENT = {0: {1, 2}, 1: {0, 3}, 2: {0, 3}, 3: {1, 2}}


def card(colour: str, value: int) -> int:
    """Card id from its colour name and value, as documented: colour * 8 + value index."""
    return COLOURS.index(colour) * 8 + (-2, 0, 1, 2, 3, 4, 5, 6).index(value)


def deck_with(stacks, hands, pile=()):
    """A full deck order dealing ``stacks`` (4 cards), ``hands`` (3 per seat) and
    putting ``pile`` on top of the draw pile; the other cards follow, ascending."""
    head = list(stacks) + [c for hand in hands for c in hand] + list(pile)
    assert len(set(head)) == len(head), "a card dealt twice in the test's own set-up"
    return head + [c for c in range(32) if c not in head]


def new_game(stacks, hands, pile=(), **kwargs):
    game = CardGame(num_players=len(hands), **kwargs)
    game.reset(seed=0, deck=deck_with(stacks, hands, pile))
    return game


def single(game, c, stack):
    """The single-play action putting card ``c`` of the active hand onto ``stack``."""
    return SINGLE_FIRST + game.hands[game.active].index(c) * 4 + stack


def double(game, first, second, a, b):
    hand = game.hands[game.active]
    pair = SLOT_PAIRS.index((hand.index(first), hand.index(second)))
    return DOUBLE_FIRST + pair * 8 + STACK_PAIRS.index((a, b))


def everyone_else_passes(game, action):
    return [action if s == game.active else PASS for s in range(game.num_players)]


def all_cards(game):
    return sorted([c for h in game.hands for c in h] + [c for s in game.stacks for c in s]
                  + game.draw_pile())


def snapshot(game):
    """Everything a step may change, as comparable text."""
    return repr((game.hands, game.stacks, game.draw_pile(), game.cells, game.misthrows,
                 game.active, game.phase, game.played, game.value, game.colours, game.done,
                 game.features().tolist(), game.rng.getstate()))


def bury(game, keep):
    """Move all but the next ``keep`` draw-pile cards under stack 0's top (covered)."""
    pile = game.draw_pile()
    game._pile[:] = pile[:keep][::-1]
    game.stacks[0][:-1] = pile[keep:]
    game._encode_all()


TOPS = [card("orange", 1), card("yellow", 2), card("grey", 4), card("purple", 6)]
# Filler hands that collide with no card the tests name.
PURPLE_LOW = [card("purple", -2), card("purple", 0), card("purple", 1)]
ORANGE_MID = [card("orange", 2), card("orange", 3), card("orange", 4)]


# -- deck and table ------------------------------------------------------------------

def test_deck_composition():
    deck = [(cards.COLOUR_NAMES[cards.CARD_COLOUR[c]], cards.CARD_VALUE[c]) for c in range(32)]
    assert len(set(deck)) == 32 == cards.DECK_SIZE
    for colour in COLOURS:
        assert sorted(v for k, v in deck if k == colour) == [-2, 0, 1, 2, 3, 4, 5, 6]
    assert cards.CARD_COLOUR_BIT[card("grey", 3)] == 0
    assert cards.CARD_COLOUR_BIT[card("purple", 3)] == 1 << 2   # purple is row 2


def test_adjacency_is_orthogonal_only():
    for stack, neighbours in enumerate(cards.NEIGHBOURS):
        assert set(neighbours) == ADJACENT[stack]
    assert 3 not in cards.NEIGHBOURS[0] and 2 not in cards.NEIGHBOURS[1]   # diagonals
    assert set(STACK_PAIRS) == {(a, b) for a in ADJACENT for b in ADJACENT[a]}
    assert cards.OTHER_NEIGHBOUR[1][0] == 3 and cards.OTHER_NEIGHBOUR[0][1] == 2
    assert cards.OTHER_NEIGHBOUR[0][3] == -1


def test_action_layout_covers_every_play_once():
    assert cards.NUM_ACTIONS == 88 and PASS == 27
    assert len(cards.PLAYS) == 12 + 48 == cards.NUM_ACTIONS - SINGLE_FIRST
    assert len(set(cards.PLAYS.values())) == len(cards.PLAYS)
    assert cards.PLAYS[28 + 2 * 4 + 3] == ((2,), (3,))
    assert cards.PLAYS[40 + 3 * 8 + 5] == ((1, 2), (2, 3))


def test_deal_follows_the_deck_order():
    hands = [[card("orange", 5), card("grey", 5), card("yellow", 0)],
             [card("purple", 3), card("purple", 4), card("grey", -2)]]
    pile = [card("yellow", 6), card("orange", 6)]
    game = new_game(TOPS, hands, pile)
    assert game.tops() == TOPS
    assert game.hands == [sorted(h) for h in hands]
    assert game.draw_pile()[:2] == pile and len(game.draw_pile()) == 32 - 4 - 6
    assert game.covered_cards() == [] and all_cards(game) == list(range(32))


def test_shuffled_deal_is_seeded():
    a, b = CardGame(3, seed=5), CardGame(3, seed=5)
    assert a.hands == b.hands and a.draw_pile() == b.draw_pile() and a.tops() == b.tops()
    deck = list(range(32))
    random.Random(5).shuffle(deck)   # the documented default shuffle
    assert a.tops() == deck[:4] and a.hands[0] == sorted(deck[4:7])
    assert a.draw_pile() == deck[13:]
    assert CardGame(3, seed=6).draw_pile() != a.draw_pile()


# -- plays -----------------------------------------------------------------------------

@pytest.mark.parametrize("stack, value, colours", [
    (0, 3 + 2 + 4, ("yellow", "purple")),   # neighbours 1 (yellow 2), 2 (grey 4)
    (1, 3 + 1 + 6, ("orange", "purple")),   # neighbours 0 (orange 1), 3 (purple 6)
    (2, 3 + 1 + 6, ("orange", "purple")),
    (3, 3 + 2 + 4, ("yellow", "purple")),
])
def test_single_play_value_and_colours(stack, value, colours):
    x = card("purple", 3)
    game = new_game(TOPS, [[x, card("orange", 0), card("grey", 6)], PURPLE_LOW])
    game.step(everyone_else_passes(game, single(game, x, stack)))
    info = game.public_info()
    assert info["roll"]["value"] == value and info["roll"]["colours"] == colours
    assert game.tops()[stack] == x and x not in game.hands[0]
    assert info["played"] == ((("purple", 3), stack),)
    assert game.phase == ENTRY and len(game.hands[0]) == 2


def test_double_play_counts_the_second_card_and_its_other_neighbour():
    o5, g5 = card("orange", 5), card("grey", 5)
    hands = [[o5, g5, card("yellow", 0)], PURPLE_LOW]
    game = new_game(TOPS, hands)
    legal = game.legal_actions(0)
    assert len(legal) == 12 + 2 * 8   # singles + both orders of the pair, 8 stack pairs each
    # orange 5 onto stack 0, then grey 5 onto stack 1: 5 + 5 + top of 3 (purple 6)
    game.step([double(game, o5, g5, 0, 1), PASS])
    assert (game.value, game.public_info()["roll"]["colours"]) == (16, ("orange", "purple"))
    assert game.tops()[:2] == [o5, g5] and game.hands[0] == [card("yellow", 0)]
    assert game.covered_cards() == sorted(TOPS[:2])
    # reversed: grey 5 onto stack 1, then orange 5 onto stack 0: 5 + 5 + top of 2 (grey 4)
    game = new_game(TOPS, hands)
    game.step([double(game, g5, o5, 1, 0), PASS])
    assert (game.value, game.public_info()["roll"]["colours"]) == (14, ("orange",))
    assert game.public_info()["played"] == ((("grey", 5), 1), (("orange", 5), 0))


def test_double_play_needs_equal_values():
    game = new_game(TOPS, [[card("orange", 5), card("grey", 3), card("yellow", 0)], PURPLE_LOW])
    assert game.legal_actions(0) == list(range(SINGLE_FIRST, DOUBLE_FIRST))
    with pytest.raises(IllegalActionError, match="not legal now"):
        game.step([DOUBLE_FIRST, PASS])
    three = new_game(TOPS, [[card("orange", 5), card("grey", 5), card("yellow", 5)], PURPLE_LOW])
    assert three.legal_actions(0) == list(range(SINGLE_FIRST, cards.NUM_ACTIONS))


def test_play_is_mandatory_and_only_for_the_active_player():
    game = new_game(TOPS, [ORANGE_MID, PURPLE_LOW])
    assert PASS not in game.legal_actions(0)
    assert game.legal_actions(1) == [PASS]
    with pytest.raises(IllegalActionError, match="seat 0"):
        game.step([PASS, PASS])
    with pytest.raises(IllegalActionError, match="seat 1"):
        game.step([28, 28])


# -- entry -------------------------------------------------------------------------------

def test_entry_masks_follow_value_and_colours():
    x = card("purple", 3)
    game = new_game(TOPS, [[x, card("orange", 0), card("grey", 6)], PURPLE_LOW])
    game._write(1, 9 + 4, 9)   # seat 1: yellow field 4 holds 9 already
    game.step(everyone_else_passes(game, single(game, x, 0)))   # 9, yellow + purple
    for seat in (0, 1):
        legal = set(game.legal_actions(seat))
        expected = {r * 9 + f for r in (1, 2) for f in range(9)
                    if rules.can_write(game.sheet(seat), r, f, 9)} | {PASS}
        assert legal == expected
    assert 13 not in game.legal_actions(1) and 13 in game.legal_actions(0)


@pytest.mark.parametrize("tops, play_card, stack, value", [
    # grey only: grey 4 onto stack 0, neighbours grey 2 and grey 3
    ([card("grey", 1), card("grey", 2), card("grey", 3), card("orange", 6)], card("grey", 4), 0, 9),
    # value 0: orange -2 onto stack 0, neighbours yellow 0 and purple 2
    ([card("orange", 6), card("yellow", 0), card("purple", 2), card("grey", 6)],
     card("orange", -2), 0, 0),
    # value -6: three -2 cards
    ([card("grey", 6), card("yellow", -2), card("purple", -2), card("grey", 5)],
     card("orange", -2), 0, -6),
])
def test_nobody_writes_on_grey_only_or_sub_1_values(tops, play_card, stack, value):
    game = new_game(tops, [[play_card, card("yellow", 5), card("yellow", 6)],
                           [card("orange", 5), card("purple", 5), card("orange", 4)]])
    game.step(everyone_else_passes(game, single(game, play_card, stack)))
    assert game.value == value
    assert game.legal_actions(0) == [PASS] and game.legal_actions(1) == [PASS]
    game.step([PASS, PASS])
    assert game.misthrows == [1, 0]   # only the active player marks a misthrow


def test_values_never_exceed_18_and_18_is_writable():
    assert 3 * max(cards.CARD_VALUES) == rules.MAX_VALUE
    o6 = card("orange", 6)
    game = new_game([card("grey", 0), card("yellow", 6), card("purple", 6), card("grey", 1)],
                    [[o6, 0, 1], ORANGE_MID])
    game.step(everyone_else_passes(game, single(game, o6, 0)))
    assert game.value == 18
    assert game.legal_actions(1) == list(range(28))   # any field of the three rows, or pass


def test_active_writes_or_misthrows_others_pass_freely():
    x = card("purple", 3)
    game = new_game(TOPS, [[x, card("orange", 0), card("grey", 6)], PURPLE_LOW, ORANGE_MID])
    game.step(everyone_else_passes(game, single(game, x, 0)))   # 9, yellow + purple
    game.step([9 + 3, PASS, 18 + 5])
    assert game.cells[0][12] == 9 and game.cells[2][23] == 9 and game.misthrows == [0, 0, 0]
    assert game.active == 1 and game.phase == PLAY and game.last_entries == [12, PASS, 23]


# -- refill and the draw pile ------------------------------------------------------------

def test_refill_draws_from_the_top_of_the_pile_after_the_entry():
    o5, g5, y0 = card("orange", 5), card("grey", 5), card("yellow", 0)
    pile = [card("yellow", 6), card("orange", 6), card("purple", 5)]
    game = new_game(TOPS, [[o5, g5, y0], PURPLE_LOW], pile)
    size = len(game.draw_pile())
    game.step([double(game, o5, g5, 0, 1), PASS])
    assert len(game.hands[0]) == 1   # no refill before the entry
    game.step([PASS, PASS])
    assert game.hands[0] == sorted([y0] + pile[:2]) and game.hands[1] == PURPLE_LOW
    assert game.draw_pile()[0] == pile[2] and len(game.draw_pile()) == size - 2
    assert game.active == 1


def test_reshuffle_with_explicit_chance():
    o5, g5, y0 = card("orange", 5), card("grey", 5), card("yellow", 0)
    game = new_game(TOPS, [[o5, g5, y0], PURPLE_LOW])
    bury(game, keep=1)
    last = game.draw_pile()[0]
    game.step([double(game, o5, g5, 0, 1), PASS])
    assert game.will_reshuffle()
    covered = game.covered_cards()
    assert set(TOPS[:2]) <= set(covered) and all_cards(game) == list(range(32))
    order = covered[::-1]
    game.step([PASS, PASS], chance=order)
    # one card from the old pile, then the first card of the reshuffled pile
    assert game.hands[0] == sorted([y0, last, order[0]])
    assert game.draw_pile() == order[1:] and game.covered_cards() == []
    assert game.reshuffles == 1 and all_cards(game) == list(range(32))


def test_reshuffle_default_shuffles_the_sorted_covered_cards_with_the_game_rng():
    x = card("orange", 5)
    game = new_game(TOPS, [[x, 0, 1], PURPLE_LOW])
    bury(game, keep=0)
    game.step(everyone_else_passes(game, single(game, x, 3)))
    expected = game.covered_cards()
    twin = random.Random()
    twin.setstate(game.rng.getstate())
    twin.shuffle(expected)
    game.step([PASS, PASS])
    assert game.hands[0] == sorted([0, 1, expected[0]]) and game.draw_pile() == expected[1:]


def test_bad_chance_raises_and_changes_nothing():
    x = card("orange", 5)
    game = new_game(TOPS, [[x, 0, 1], PURPLE_LOW])
    bury(game, keep=0)
    game.step(everyone_else_passes(game, single(game, x, 3)))
    before = snapshot(game)
    for bad in ([0, 1], game.covered_cards()[:-1] + [x], "abc"):
        with pytest.raises(ValueError, match="chance"):
            game.step([PASS, PASS], chance=bad)
    assert snapshot(game) == before


def test_chance_is_ignored_without_a_reshuffle():
    x = card("orange", 5)
    a = new_game(TOPS, [[x, 0, 1], PURPLE_LOW])
    b = new_game(TOPS, [[x, 0, 1], PURPLE_LOW])
    for game, chance in ((a, None), (b, [99])):
        game.step(everyone_else_passes(game, single(game, x, 3)), chance=chance)
        assert not game.will_reshuffle()
        game.step([PASS, PASS], chance=chance)
    assert a.hands == b.hands and a.draw_pile() == b.draw_pile()


def test_empty_pile_end_ends_after_the_turn_that_empties_the_pile():
    x, y = card("orange", 5), card("orange", 4)
    game = new_game(TOPS, [[x, y, 0], PURPLE_LOW], empty_pile="end")
    bury(game, keep=2)
    game.step(everyone_else_passes(game, single(game, x, 3)))
    game.step([PASS, PASS])            # draws one, one left
    assert not game.done and len(game.draw_pile()) == 1
    game.step([PASS, single(game, PURPLE_LOW[0], 0)])
    game.step([PASS, PASS])            # draws the last card: the game ends
    assert game.done and game.phase == OVER and len(game.hands[1]) == 3
    assert game.legal_actions(0) == [PASS]
    with pytest.raises(IllegalActionError, match="game is over"):
        game.step([PASS, PASS])


def test_empty_pile_no_draw_plays_on_until_the_next_player_has_no_card():
    hand = [card("orange", 5), card("grey", 5), card("yellow", 0)]
    game = new_game(TOPS, [hand], empty_pile="no_draw")
    bury(game, keep=0)
    for left in (2, 1):
        game.step([game.legal_actions(0)[0]])   # a single play
        game.step([PASS])
        assert game.hands[0] and len(game.hands[0]) == left and not game.done
    assert game.legal_actions(0) == [SINGLE_FIRST + t for t in range(4)]   # one slot left
    with pytest.raises(IllegalActionError):
        game.step([SINGLE_FIRST + 4])   # slot 1 is empty
    game.step([SINGLE_FIRST])
    game.step([PASS])
    assert game.done and game.hands == [[]] and game.misthrows == [3]
    assert all_cards(game) == list(range(32))


def test_reshuffle_mode_always_refills_to_three():
    for seed in range(30):
        game = CardGame(4, seed=seed)
        rng = random.Random(seed)
        while not game.done:
            game.step([rng.choice(game.legal_actions(s)) for s in range(4)])
            if game.phase == PLAY:
                assert all(len(h) == 3 for h in game.hands)


# -- end conditions and turn order --------------------------------------------------------

def two_rows_almost_full(game, seat):
    """Orange 10..18 complete; yellow 1..8 in fields 0..7, field 8 (cell 17) open (9..17)."""
    for f in range(9):
        game._write(seat, f, 10 + f)
    for f in range(8):
        game._write(seat, 9 + f, 1 + f)


def test_two_full_rows_end_the_game_after_the_turn():
    y5 = card("yellow", 5)
    tops = [card("yellow", 3), card("orange", 2), card("grey", 4), card("purple", 0)]
    game = new_game(tops, [[y5, 0, 1], [4, 5, 8]])
    two_rows_almost_full(game, 1)
    game.step(everyone_else_passes(game, single(game, y5, 3)))   # 5 + 2 + 4 = 11, yellow
    assert 17 in game.legal_actions(1)
    game.step([PASS, 17])
    assert game.done and game.phase == OVER
    assert rules.cells_full_rows(game.cells[1]) == 2 and game.misthrows == [1, 0]


def test_one_full_row_does_not_end_the_game():
    y5 = card("yellow", 5)
    tops = [card("yellow", 3), card("orange", 2), card("grey", 4), card("purple", 0)]
    game = new_game(tops, [[y5, 0, 1], [4, 5, 8]])
    two_rows_almost_full(game, 1)
    game.step(everyone_else_passes(game, single(game, y5, 3)))
    game.step([PASS, PASS])
    assert not game.done and game.active == 1


def test_fourth_misthrow_ends_the_solo_game_and_solo_player_is_always_active():
    game = CardGame(1, seed=3)
    for turn in range(4):
        assert game.active == 0 and not game.done
        game.step([game.legal_actions(0)[0]])
        game.step([PASS])
    assert game.done and game.misthrows == [4] and game.scores()[0] == -20


def test_start_player_and_rotation():
    game = CardGame(3, seed=0)
    game.reset(start_player=2)
    assert game.active == 2
    assert game.legal_actions(0) == [PASS] and PASS not in game.legal_actions(2)
    game.step([PASS, PASS, game.legal_actions(2)[0]])
    game.step([PASS, PASS, PASS])
    assert game.active == 0


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"num_players": 5}, "num_players"), ({"num_players": 0}, "num_players"),
    ({"num_players": True}, "num_players"), ({"empty_pile": "stop"}, "empty_pile"),
])
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CardGame(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"deck": list(range(31))}, "deck must be a permutation"),
    ({"deck": [0] * 32}, "deck must be a permutation"),
    ({"deck": 5}, "deck must be a sequence"),
    ({"deck": [float(c) for c in range(32)]}, "integer card ids"),
    ({"start_player": 2}, "start_player"),
])
def test_bad_reset_arguments_change_nothing(kwargs, message):
    game = CardGame(2, seed=1)
    game.step([game.legal_actions(0)[0], PASS])
    before = snapshot(game)
    with pytest.raises(ValueError, match=message):
        game.reset(**kwargs)
    assert snapshot(game) == before


# -- property tests over random legal games ----------------------------------------------------

def reference_play(hand, tops, action):
    """Value and colour names of a play, from the documented layout and ADJACENT."""
    k = action - SINGLE_FIRST
    if k < 12:
        x = hand[k // 4]
        counted = [x] + [tops[n] for n in sorted(ADJACENT[k % 4])]
    else:
        i, j = SLOT_PAIRS[(k - 12) // 8]
        a, b = STACK_PAIRS[(k - 12) % 8]
        (other,) = ADJACENT[b] - {a}
        counted = [hand[i], hand[j], tops[other]]
    value = sum(cards.CARD_VALUE[c] for c in counted)
    colours = {COLOURS[c // 8] for c in counted} - {"grey"}
    return value, colours


def reference_play_actions(hand):
    legal = [28 + s * 4 + t for s in range(len(hand)) for t in range(4)]
    for p, (i, j) in enumerate(SLOT_PAIRS):
        if max(i, j) < len(hand) and cards.CARD_VALUE[hand[i]] == cards.CARD_VALUE[hand[j]]:
            legal += range(40 + 8 * p, 48 + 8 * p)
    return legal


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(1, 4),
       empty_pile=st.sampled_from(cards.EMPTY_PILE_RULES), pass_bias=st.floats(0.0, 0.8))
def test_random_games_obey_the_rules(seed, players, empty_pile, pass_bias):
    check_random_game(seed, players, empty_pile, pass_bias)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(1, 4),
       empty_pile=st.sampled_from(cards.EMPTY_PILE_RULES), pass_bias=st.floats(0.0, 0.8))
def test_many_random_games_obey_the_rules(seed, players, empty_pile, pass_bias):
    check_random_game(seed, players, empty_pile, pass_bias)


def check_random_game(seed, players, empty_pile, pass_bias):
    """Play one random legal game, checking every step against the rules."""
    game = CardGame(players, seed=seed, empty_pile=empty_pile)
    rng = random.Random(seed)
    max_steps = 2 * players * (27 + 4)   # every turn the active player writes or misthrows
    for _ in range(max_steps):
        if game.done:
            break
        assert all_cards(game) == list(range(32))       # deck conservation
        incremental = game.features()
        game._encode_all()                               # the same features from scratch
        assert np.array_equal(game.features(), incremental)
        assert all(h == sorted(h) and len(h) <= 3 for h in game.hands)
        active, hand, tops = game.active, list(game.hands[game.active]), game.tops()
        if game.phase == PLAY:
            assert game.legal_actions(active) == reference_play_actions(hand)
            assert all(game.legal_actions(s) == [PASS] for s in range(players) if s != active)
            action = rng.choice(game.legal_actions(active))
            game.step([action if s == active else PASS for s in range(players)])
            value, colours = reference_play(hand, tops, action)
            assert game.value == value and -6 <= value <= 18
            assert set(game.public_info()["roll"]["colours"]) == colours
            continue
        writable = 1 <= game.value and game.colours
        rows = [r for r in range(3) if game.colours >> r & 1]
        before = [list(c) for c in game.cells]
        actions = []
        for s in range(players):
            legal = game.legal_actions(s)
            expected = [r * 9 + f for r in rows for f in range(9)
                        if writable and rules.can_write(game.sheet(s), r, f, game.value)]
            assert legal == expected + [PASS]
            # pass_bias varies how fast misthrows end the game, so pile rules get exercised
            actions.append(PASS if len(legal) == 1 or rng.random() < pass_bias
                           else rng.choice(legal[:-1]))
        misthrows = list(game.misthrows)
        game.step(actions)
        for s in range(players):
            assert not rules.cells_violations(game.cells[s])
            assert game._allowed[s] == rules.cells_allowed_values(game.cells[s])
            assert game.scores()[s] == rules.cells_score(game.cells[s], game.misthrows[s])
            assert sum(a != b for a, b in zip(before[s], game.cells[s])) == (actions[s] != PASS)
            assert game.misthrows[s] - misthrows[s] == (s == active and actions[s] == PASS)
        if empty_pile == "reshuffle" and not game.done:
            assert len(game.hands[active]) == 3
    assert game.done, "the game did not end"
    assert all_cards(game) == list(range(32))
    assert game.game_over() or empty_pile != "reshuffle"


def test_explicit_deck_and_chance_reproduce_a_seeded_game():
    """What a batched engine relies on: the documented shuffles, replayed explicitly."""
    reshuffles = 0
    for seed in range(20):
        seeded = CardGame(4, seed=seed)
        deck = list(range(32))
        random.Random(seed).shuffle(deck)
        replay = CardGame(4, seed=seed + 1000)
        replay.reset(deck=deck)
        rng = random.Random(seed)
        while not seeded.done:
            actions = [rng.choice(seeded.legal_actions(s)) for s in range(4)]
            chance = None
            if seeded.will_reshuffle():
                twin = random.Random()
                twin.setstate(seeded.rng.getstate())
                chance = seeded.covered_cards()
                twin.shuffle(chance)
            seeded.step(actions)
            replay.step(actions, chance=chance)
            assert (seeded.hands, seeded.stacks, seeded.draw_pile(), seeded.cells,
                    seeded.misthrows) == (replay.hands, replay.stacks, replay.draw_pile(),
                                          replay.cells, replay.misthrows)
            assert np.array_equal(seeded.features(), replay.features())
        assert replay.done and seeded.reshuffles == replay.reshuffles
        reshuffles += seeded.reshuffles
    assert reshuffles > 0   # the chance path was exercised
