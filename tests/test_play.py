"""The terminal game (python -m qwinto_env.play): plain words, input handling, bots,
seeding, the final table; driven through injected I/O and through a piped subprocess."""

import re
import subprocess
import sys

import numpy as np
import pytest

from qwinto_env import cards, dice
from qwinto_env.cards import CardGame
from qwinto_env.dice import DiceGame
from qwinto_env.play import ChoiceError, TerminalGame, describe_action, main, parse_choice

BAD_INPUTS = ["abc", "", "   ", "99", "0", "-1", "y10", "q4"]


class Script:
    """Injected I/O: answers from a list, then EOFError; records every printed line."""

    def __init__(self, answers, end=EOFError):
        self.answers, self.end = list(answers), end
        self.prompts, self.lines = [], []

    def input(self, prompt):
        self.prompts.append(prompt)
        if not self.answers:
            raise self.end
        return self.answers.pop(0)

    def print(self, text=""):
        self.lines.extend(str(text).split("\n"))

    @property
    def text(self):
        return "\n".join(self.lines)


def run(argv, answers, end=EOFError):
    script = Script(answers, end)
    status = main(argv, input_fn=script.input, print_fn=script.print)
    return status, script


# -- whole games through injected I/O ---------------------------------------------------------

@pytest.mark.parametrize("game,opponents", [("dice", "expert"), ("dice", "greedy,random"),
                                            ("cards", "expert"), ("cards", "random,greedy")])
def test_full_game_with_bad_inputs(game, opponents):
    answers = BAD_INPUTS + ["h", "s"] + ["1"] * 400
    status, script = run(["--game", game, "--opponents", opponents, "--seed", "3"], answers)
    text = script.text
    assert status == 0, text[-2000:]
    assert "please type a number" in text
    assert "'abc' is not a choice" in text and "99 is not a choice" in text
    assert "'y10' is not a choice" in text
    assert "Final scores" in text and ("Winner:" in text or "Shared win:" in text)
    bots = opponents.split(",")
    for seat, name in enumerate(bots, 1):
        assert f"player {seat} ({name}):" in text, f"no move of {name} shown"
    # Bad input changes nothing: the same game as without it.
    _, clean = run(["--game", game, "--opponents", opponents, "--seed", "3"], ["1"] * 400)
    assert script.lines[-len(bots) - 3:] == clean.lines[-len(bots) - 3:]


def test_the_choices_and_the_moves_are_in_plain_words():
    status, script = run(["--game", "dice", "--opponents", "expert", "--seed", "1"],
                         ["7", "k"] + ["1"] * 400)
    text = script.text
    assert status == 0
    assert "roll orange+yellow+purple (3..18)" in text and "roll orange (1..6)" in text
    assert "you: roll orange+yellow+purple (3..18) -> " in text
    assert "you: keep the roll (" in text
    assert "write " in text and " in orange field 1" in text
    assert "pass (misthrow!)" in text
    assert "player 1 (expert): roll " in text


def test_card_game_shows_hand_and_stacks():
    status, script = run(["--game", "cards", "--opponents", "expert", "--seed", "2"],
                         ["1"] * 400)
    text = script.text
    assert status == 0
    assert "your hand: " in text and "TL [" in text and "BR [" in text
    assert "  card      onto TL       onto TR       onto BL       onto BR" in text
    assert "you: play " in text and " on TL: " in text
    assert "player 1 (expert): play " in text


def test_same_seed_replays_the_same_game():
    argv = ["--game", "dice", "--opponents", "expert,random", "--seed", "11"]
    _, a = run(argv, ["3", "r"] + ["1"] * 400)
    _, b = run(argv, ["3", "r"] + ["1"] * 400)
    assert a.lines == b.lines
    _, c = run(argv[:-1] + ["12"], ["3", "r"] + ["1"] * 400)
    assert a.lines != c.lines


def test_players_seat_and_solo():
    status, script = run(["--players", "3", "--opponents", "greedy", "--seat", "2",
                          "--seed", "0"], ["1"] * 600)
    assert status == 0
    assert "you are player 2, against player 0 (greedy), player 1 (greedy)" in script.text
    status, script = run(["--players", "1", "--seed", "0"], ["1"] * 600)
    assert status == 0 and "against nobody (solo)" in script.text
    assert "Winner" not in script.text


# -- leaving ----------------------------------------------------------------------------------

def test_end_of_input_quit_and_ctrl_c_leave_cleanly():
    status, script = run(["--seed", "0"], ["1", "2"])
    assert status == 0 and "End of input. Game abandoned in turn 1." in script.text
    status, script = run(["--seed", "0"], ["q"])
    assert status == 0 and "You left." in script.text
    status, script = run(["--seed", "0"], ["1"], end=KeyboardInterrupt)
    assert status == 130 and "Interrupted." in script.text


def test_a_bot_that_breaks_the_rules_stops_the_game_cleanly():
    class Cheater:
        name = "cheater"

        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask == 0)[0])

    script = Script(["1"] * 10)
    session = TerminalGame("dice", [Cheater()], seed=0, input_fn=script.input,
                           print_fn=script.print)
    assert session.play() == 1
    assert "error: bot Cheater 'cheater' answered act() with 9: not legal" in script.text


def test_a_bot_that_raises_stops_the_game_with_one_line_and_its_traceback(capsys):
    class Broken:
        name = "broken"

        def act(self, observation, action_mask):
            raise RuntimeError("kaboom")

    script = Script(["1"] * 10)
    session = TerminalGame("dice", [Broken()], seed=0, start_player=1,
                           input_fn=script.input, print_fn=script.print)
    assert session.play() == 1
    assert script.lines[-1] == ("error: player 1 (broken) failed in turn 1: RuntimeError: "
                                "kaboom; game stopped")
    assert 'raise RuntimeError("kaboom")' in capsys.readouterr().err


def test_ctrl_c_while_a_bot_thinks():
    class Sleeper:
        name = "sleeper"

        def act(self, observation, action_mask):
            raise KeyboardInterrupt

    script = Script(["1"] * 10)
    session = TerminalGame("dice", [Sleeper()], seed=0, start_player=1,
                           input_fn=script.input, print_fn=script.print)
    assert session.play() == 130
    assert script.lines[-1] == "Interrupted. Game abandoned in turn 1."


def test_ctrl_c_while_the_bots_load(monkeypatch, capsys):
    def interrupted(spec, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("qwinto_env.opponents._registered", interrupted)
    with pytest.raises(SystemExit) as stop:
        main(["--opponents", "pretrained:dice-2p"], input_fn=lambda _: "1")
    assert stop.value.code == 130
    assert capsys.readouterr().err == "python -m qwinto_env.play: error: interrupted\n"


def test_bad_command_lines():
    status, script = run(["--opponents", "nobody"], [])
    assert status == 2 and "unknown agent spec 'nobody'" in script.text
    status, script = run(["--opponents", "missing/model.pt"], [])
    assert status == 2 and "does not exist" in script.text
    status, script = run(["--players", "1", "--opponents", "expert"], [])
    assert status == 2 and "solo" in script.text
    status, script = run(["--players", "3", "--opponents", "random,random,random"], [])
    assert status == 2 and "one per other seat" in script.text
    status, script = run(["--seat", "5"], [])
    assert status == 2 and "seat" in script.text
    for opponents, message in ((",", "bot 1 of 2 is empty"), ("expert,", "bot 2 of 2 is empty"),
                               ("", "bot 1 of 1 is empty")):  # not solo, one bot or expert
        status, script = run(["--opponents", opponents], [])
        assert status == 2 and script.text == f"error: --opponents {opponents!r}: {message}"


def test_a_pasted_run_of_digits_is_answered_not_a_crash():
    """int() refuses 4,300 digits or more: a number or a field that long ended the game
    with a traceback."""
    digits = "9" * 5000
    status, script = run(["--seed", "0"], [digits, "y" + digits, "0" * 5000 + "1", "q"])
    assert status == 0 and "You left." in script.text
    assert f"{digits[:17]}... is not a choice: type a number from 1 to 7" in script.text
    assert f"'y{digits[:16]}...' is not a choice" in script.text
    assert "you: roll orange (1..6)" in script.text  # 000...1 is choice 1
    assert max(map(len, script.lines)) <= 80


@pytest.mark.parametrize("seed", ["-1", "x", "1.5"])
def test_a_bad_seed_is_named(seed, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--seed", seed])
    assert exit_.value.code == 2
    assert f"argument --seed: must be a non-negative integer, got {seed!r}" in \
        capsys.readouterr().err


def test_a_seed_past_the_digits_python_reads_is_named(capsys):
    """argparse said "invalid _seed value: '999...'" (the whole number, the function's name)."""
    with pytest.raises(SystemExit) as exit_:
        main(["--seed", "9" * 5000])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --seed: must be a non-negative integer of at most 4,300 digits" in err
    assert len(err) < 1000


# -- the words and the parser --------------------------------------------------------------------

def test_parse_choice():
    game = DiceGame(num_players=2, seed=0)
    game.step([34, 27], chance=(3, 4, 5))  # roll all three: 12
    game.step([35, 27])                    # keep: entry
    legal = game.legal_actions(0)
    assert parse_choice("1", legal, game) == legal[0]
    assert parse_choice(f" {len(legal)} ", legal, game) == legal[-1]
    assert parse_choice("y4", legal, game) == 12
    assert parse_choice("Yellow 4", legal, game) == 12
    assert parse_choice("P", legal, game) == 27
    assert parse_choice("pass", legal, game) == 27
    assert parse_choice("purple9", legal, game) == 26
    for command, meaning in [("s", "sheets"), ("?", "help"), ("quit", "quit")]:
        assert parse_choice(command, legal, game) == meaning
    for bad, message in [("", "please type"), ("x", "not a choice"),
                         (str(len(legal) + 1), "not a choice"), ("keep", "not possible now"),
                         ("o0", "not a choice"), ("2.5", "not a choice"),
                         ("\u00b2", "not a choice"), ("\x1b[A", "not a choice")]:
        with pytest.raises(ChoiceError, match=message):
            parse_choice(bad, legal, game)


def test_describe_dice_actions():
    game = DiceGame(num_players=2, seed=0)
    assert describe_action(game, 0, 33) == "roll yellow+purple (2..12)"
    assert describe_action(game, 0, 28) == "roll orange (1..6)"
    game.step([33, 27], chance=(1, 5, 6))
    assert describe_action(game, 0, dice.KEEP) == "keep the roll (11)"
    assert describe_action(game, 0, dice.REROLL) == "re-roll yellow+purple"
    game.step([35, 27])
    assert describe_action(game, 0, 12) == "write 11 in yellow field 4"
    assert describe_action(game, 0, 27) == "pass (misthrow!)"
    assert describe_action(game, 1, 27) == "pass (write nothing)"


def test_describe_card_plays():
    game = CardGame(num_players=2)
    # Stacks: orange 5 | yellow 3 / grey -2 | purple 6; seat 0 holds orange 4, yellow 4, grey 0.
    def card(colour, value):
        return cards.COLOUR_NAMES.index(colour) * 8 + cards.CARD_VALUES.index(value)

    deck = [card("orange", 5), card("yellow", 3), card("grey", -2), card("purple", 6),
            card("orange", 4), card("yellow", 4), card("grey", 0)]
    deck += [c for c in range(32) if c not in deck]
    game.reset(deck=deck)
    words = {a: describe_action(game, 0, a) for a in game.legal_actions(0)}
    assert words[28] == "play orange 4 onto the top-left stack: 4 + 3 - 2 = 5, orange+yellow"
    assert words[28 + 2 * 4 + 3] == ("play grey 0 onto the bottom-right stack: "
                                     "0 + 3 - 2 = 1, yellow")
    double = [w for w in words.values() if ", then " in w]
    assert len(double) == 16  # two orderings of the pair, eight adjacent stack pairs
    assert ("play orange 4 onto the top-left stack, then yellow 4 onto the top-right stack: "
            "4 + 4 + 6 = 14, orange+yellow+purple") in double


@pytest.mark.parametrize("empty_pile", ["end", "no_draw", "reshuffle"])
def test_every_card_play_is_worded_with_the_cards_it_counts(empty_pile):
    """Random games to the end, where the pile runs out and hands go short: at every play
    of the active seat, each legal play's words add up the cards the rules count (a
    short hand gave other cards' values, or an IndexError)."""
    rng = np.random.default_rng(3)
    worded = 0
    for seed in range(6):
        game = CardGame(num_players=3, empty_pile=empty_pile)
        game.reset(seed=seed)
        while not game.done:
            seat = game.active
            for action in game.legal_actions(seat):
                if action < cards.SINGLE_FIRST:
                    continue
                words = describe_action(game, seat, action)
                terms, value = re.search(r": (.*) = (-?\d+),", words).groups()
                announced, _ = cards.play_result(game.hands[seat], game.tops(), action)
                assert eval(terms) == int(value) == announced, words
                worded += len(game.hands[seat]) < cards.HAND_SIZE
            game.step([int(rng.choice(game.legal_actions(s))) for s in range(3)])
    assert worded or empty_pile != "no_draw"  # there, short hands are met


def test_terminal_game_accepts_agent_objects():
    from agents import load

    bot = load("random", game="cards", num_players=2)
    script = Script(["1"] * 400)
    session = TerminalGame("cards", [bot], seed=5, input_fn=script.input,
                           print_fn=script.print)
    assert session.play() == 0 and "player 1 (random)" in script.text


# -- the real program, stdin piped ------------------------------------------------------------------

@pytest.mark.parametrize("game", ["dice", "cards"])
def test_module_runs_with_piped_input_and_a_checkpoint(tmp_path, game):
    from agents.policy import PolicyNetwork, save_checkpoint

    size = (dice.observation_size if game == "dice" else cards.observation_size)(3)
    actions = 37 if game == "dice" else 88
    path = tmp_path / f"{game}.pt"
    save_checkpoint(path, PolicyNetwork(size, actions, hidden=(16,)), game, 3, size, actions)
    stdin = "\n".join(["what", "", "1000"] + ["1"] * 400) + "\n"
    result = subprocess.run(
        [sys.executable, "-m", "qwinto_env.play", "--game", game, "--opponents",
         f"expert,{path}", "--seed", "7"], input=stdin, capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "'what' is not a choice" in result.stdout and "1000 is not a choice" in result.stdout
    assert f"player 2 ({game}.pt):" in result.stdout
    assert "Final scores" in result.stdout


def test_module_reports_end_of_input():
    result = subprocess.run([sys.executable, "-m", "qwinto_env.play", "--seed", "1"],
                            input="2\n", capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.rstrip().endswith("End of input. Game abandoned in turn 1.")
    assert np.char.count(result.stdout, "your choice").item() == 2


def test_module_runs_on_a_terminal_of_another_encoding(tmp_path):
    """An ASCII terminal: a bot named with an accent and typed bytes that are no ASCII
    raised UnicodeEncodeError / UnicodeDecodeError with a traceback."""
    import os
    import shutil

    from agents.load import PRETRAINED_DIR

    bot = tmp_path / "mod\u00e8le.pt"
    shutil.copy(PRETRAINED_DIR / "dice-2p.pt", bot)
    result = subprocess.run(
        [sys.executable, "-m", "qwinto_env.play", "--opponents", str(bot), "--seed", "1"],
        input="\u00e9\n".encode() + b"\xff\nq\n", capture_output=True, timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0 and result.stderr == b"", result.stderr.decode()[-800:]
    out = result.stdout.decode("ascii")
    assert "against player 1 (mod\\xe8le.pt)" in out
    assert out.count("is not a choice") == 2 and out.rstrip().endswith("You left. Game "
                                                                      "abandoned in turn 1.")


def test_module_stops_quietly_when_the_reader_goes_away():
    proc = subprocess.Popen([sys.executable, "-m", "qwinto_env.play", "--seed", "1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # like `| head`: nobody reads the table
    try:
        proc.stdin.write(b"1\n" * 400)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # it may stop before reading all answers
    assert proc.wait(timeout=60) == 1
    assert proc.stderr.read() == b""
