"""The terminal game's screens fit an 80x24 terminal: whole games with scripted answers
typed the way a person reads them off the screen, several seeds, bots with long names."""

import random
import re

import pytest

from agents import load
from qwinto_env import cards, screen
from qwinto_env.play import ChoiceError, TerminalGame, parse_choice

LONG_NAME = "pretrained:dice-2p/runs/a/very/long/checkpoint/path/policy.pt"
# Inputs a screen offers: "12)" numbers, "13-60)" ranges, "y4" fields, "p = pass".
NUMBER, RANGE = re.compile(r"(?<![\w-])(\d+)\)"), re.compile(r"(\d+)-(\d+)\)")
FIELD, PASS = re.compile(r"(?<!\w)([oyp][1-9])(?!\w)"), re.compile(r"(?<!\w)p = pass")


#: Names a terminal shows wider (CJK, emoji: 2 columns a character) or narrower (a
#: combining accent: none) than their characters.
WIDE_NAMES = ["北斎の名人ボット🎲三号機", "Ame\u0301lie 🎲"]


class LongNamed:
    """A bot from agents.load under a long name, as a checkpoint path would be."""

    def __init__(self, spec, game, players, name=LONG_NAME):
        self.bot, self.name = load(spec, game=game, num_players=players), name

    def reset(self, seed=None):
        self.bot.reset(seed=seed)

    def act(self, observation, action_mask):
        return self.bot.act(observation, action_mask)


class Person:
    """Reads each screen, checks that its inputs name exactly the legal choices, and
    answers with one of them at random; keeps every screen (the lines since the last
    prompt, the prompt line with the answer typed after it)."""

    def __init__(self, seed):
        self.rng, self.session = random.Random(seed), None
        self.screens, self.lines = [], []

    def print(self, text=""):
        self.lines.extend(str(text).split("\n"))

    def input(self, prompt):
        game, seat = self.session.game, self.session.seat
        legal = game.legal_actions(seat)
        offered = offered_inputs(self.lines)
        reached = {}
        for text in offered:
            try:
                reached[text] = parse_choice(text, legal, game)
            except ChoiceError:
                pass
        assert sorted(set(reached.values())) == sorted(legal), "\n".join(self.lines)
        answer = self.rng.choice(sorted(reached))
        self.screens.append(self.lines + [prompt + answer])
        self.lines = []
        return answer


def offered_inputs(lines):
    text = "\n".join(lines)
    found = set(NUMBER.findall(text)) | set(FIELD.findall(text))
    for low, high in RANGE.findall(text):
        found |= {str(n) for n in range(int(low), int(high) + 1)}
    if PASS.search(text):
        found.add("p")
    return found


def play(game, bots, seed, players=None):
    person = Person(seed)
    session = TerminalGame(game, bots, num_players=players, seed=seed,
                           input_fn=person.input, print_fn=person.print)
    person.session = session
    assert session.play() == 0
    return person


def bots_for(game, players):
    specs = ["expert", "greedy", "random"]
    bots = [load(specs[k % 3], game=game, num_players=players) for k in range(players - 2)]
    return [LongNamed("greedy", game, players)] + bots


def check_fits(person, players):
    """Every line fits 80 columns; up to 2 players a whole screen (the turn's events
    included) fits 24 lines, with more players the part from the status line on."""
    assert person.screens, "the person was never asked"
    for lines in person.screens + [person.lines]:
        wide = [line for line in lines if screen.text_width(line) > screen.WIDTH]
        assert not wide, f"lines wider than {screen.WIDTH}: {wide}"
    for lines in person.screens:
        if players > 2:
            lines = lines[max(i for i, line in enumerate(lines) if line.startswith("turn ")):]
        assert len(lines) <= screen.HEIGHT, f"{len(lines)} lines:\n" + "\n".join(lines)


def cells(line):
    """``line`` as a terminal shows it, one character a column (a wide one twice)."""
    return "".join(char * screen.text_width(char) for char in line)


def check_final_table(lines, players):
    start = next(i for i, line in enumerate(lines) if line.startswith("Final scores"))
    header, rows = lines[start + 1], [cells(row) for row in lines[start + 2:start + 2 + players]]
    assert all(len(row) == len(header) <= screen.WIDTH for row in rows), rows
    for word in ("orange", "yellow", "purple", "misthrows", "total"):
        end = header.index(word) + len(word) - 1  # numbers end under the word's end
        assert all(row[end].isdigit() and row[end + 1:end + 2] in ("", " ") for row in rows)
    assert any("..." in row for row in rows), "the long name was not cut"


@pytest.mark.parametrize("game", ["dice", "cards"])
@pytest.mark.parametrize("seed", range(4))
def test_two_player_screens_fit_80x24(game, seed):
    bot = [LongNamed("greedy", game, 2)] if seed % 2 else [["expert", "random"][seed // 2]]
    person = play(game, bot, seed)
    check_fits(person, 2)
    if seed % 2:
        check_final_table(person.lines, 2)


@pytest.mark.parametrize("game,players", [("dice", 3), ("dice", 4), ("dice", 6),
                                          ("cards", 3), ("cards", 4)])
def test_more_players_screens_fit_80_columns_and_24_lines_from_the_status(game, players):
    person = play(game, bots_for(game, players), players, players)
    check_fits(person, players)
    check_final_table(person.lines, players)


@pytest.mark.parametrize("text, width", [
    ("player 1 (expert)", 17), ("名人", 4), ("🎲", 2), ("Ame\u0301lie", 6), ("ＡＢ", 4),
    ("👍🏽", 4), ("a\u200db", 2)])
def test_text_width_counts_terminal_columns(text, width):
    assert screen.text_width(text) == width
    assert screen.text_width(screen.pad(text, 20)) == 20
    cut = screen.ellipsize(text + "x" * 20, 9)
    assert screen.text_width(cut) in (8, 9) and cut.endswith("...")


@pytest.mark.parametrize("game, players", [("dice", 2), ("cards", 2), ("dice", 3),
                                           ("cards", 4)])
def test_wide_names_keep_the_screens_in_80_columns_and_aligned(game, players):
    """Labels were cut and padded by their characters, so a name of wide characters ran
    past the 80th column and pushed the columns after it out of line."""
    bots = [LongNamed("greedy", game, players, name) for name in WIDE_NAMES]
    person = play(game, bots[:players - 1] + bots_for(game, players)[1:players - 2], 1, players)
    check_fits(person, players)
    check_final_table(person.lines, players)
    labels = [person.session.label(seat) for seat in range(players)]
    assert screen.text_width(labels[1]) in (21, 22) and labels[1].endswith("...")
    if players > 2:  # compact sheets side by side: the right one starts at column 42
        shown = [labels[1], labels[0], *labels[2:]]  # the wide name on the left
        first = cells(screen.sheets(person.session.game, shown)[0])
        assert first[42:].startswith(shown[1]), first


def test_solo_screens_fit_80x24():
    for game in ("dice", "cards"):
        check_fits(play(game, [], 1, 1), 1)


def card(colour, value):
    return cards.COLOUR_NAMES.index(colour) * 8 + cards.CARD_VALUES.index(value)


@pytest.mark.parametrize("hand,shown", [
    ([("orange", 4), ("yellow", 4), ("purple", 1)], "table"),  # 28 plays
    ([("orange", 4), ("yellow", 4), ("purple", 4)], "line"),   # 60 plays
])
def test_card_play_menu_offers_every_double_play(hand, shown):
    deck = [card("orange", 5), card("yellow", 3), card("grey", -2), card("purple", 6)]
    deck += [card(*c) for c in hand]
    deck += [c for c in range(cards.DECK_SIZE) if c not in deck]
    person = Person(0)
    session = TerminalGame("cards", [LongNamed("expert", "cards", 2)], seed=0,
                           input_fn=person.input, print_fn=person.print)
    session.game.reset(deck=deck)
    person.session = session
    assert session.play() == 0  # Person checks that the inputs shown reach every play
    first = "\n".join(person.screens[0])
    doubles = 16 if shown == "table" else 48
    assert ("  cards       TL>TR   TL>BL" in first) == (shown == "table")
    assert (f"13-{12 + doubles}) {doubles} double plays" in first) == (shown == "line")
    check_fits(person, 2)


def test_help_lists_every_choice_in_full():
    script = Person(0)
    answers = iter(["h", "1"])
    session = TerminalGame("dice", ["random"], seed=0, print_fn=script.print,
                           input_fn=lambda prompt: next(answers, "q"))
    session.play()
    text = "\n".join(script.lines)
    assert all(f"{n}) roll " in text for n in range(1, 8))
    assert max(map(len, script.lines)) <= screen.WIDTH
