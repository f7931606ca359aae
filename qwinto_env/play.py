"""Play Qwinto against bots in the terminal.

::

    python -m qwinto_env.play --game dice --opponents expert,runs/ppo/model.pt --seed 7
    qwinto-play --game cards --opponents random --players 3

You sit at seat ``--seat`` (default 0); the bots (specs for :func:`agents.load`:
``random``, ``greedy``, ``expert``, ``pretrained:<name>``, ``search[person]:<checkpoint>``
or a checkpoint path, comma-separated, one per other seat or one for all) play the other
seats.

The screen is laid out for a terminal of 80x24 (:mod:`qwinto_env.screen` has the layout).
At each of your decisions it shows, above the prompt: what happened since your last
answer (a line per move, two for a long one, e.g. ``player 1 (expert): write 12 in
orange field 7``), a status line (the turn and the roll; in the card game the 2x2
stacks ``TL TR / BL BR`` and your hand), every sheet and your choices:

==============  ==========================================================================
decision        choices shown
==============  ==========================================================================
roll            the seven colour subsets, numbered ``1``..``7`` in columns
keep / re-roll  ``1) keep the roll (13)  2) re-roll orange+yellow``
entry           one line per row with a writable field, naming the fields by short form,
                and ``p`` (pass) at the end (example below)
card play       a table, one line per card in your hand, one column per stack, each
                cell ``number) value rows`` (``5) 12 oy``: the value 12, which may go in
                orange or yellow; ``-`` when nobody may write); with two cards of one
                value also the double plays, a table of the card orders by the stack
                pairs ``A>B`` (the first card onto ``A``, then the second onto ``B``),
                or, where that table does not fit the screen, one line naming their
                numbers (``13-60) 48 double plays ...``) that ``h`` lists
==============  ==========================================================================

An entry's choices, where yellow has no field left for 13::

      write 13 in   orange: o1 o2 o3 o4 o5 o6 o7 o8 o9
                    purple: p2 p3 p4   p = pass (misthrow!)

Bot names longer than the screen allows are cut (``player 1 (pretraine...``) on the
screen and in the final table; the first line of the game names them in full.

Up to two players a whole decision screen, the moves since your last answer included,
fits 24 lines of 80 columns. With more players the sheets are compact (38 columns, two
side by side, a pentagon field shown by a ``<`` before it) and the screen from the
status line to the prompt fits 24 lines; the moves of the bots' turns above it scroll
out of a 24-line terminal (a taller one shows them all). ``h`` lists every choice in
full words, one per line: that list may be longer than the screen.

Answer with a number, or a short form:

============================  ============================================
input                         meaning
============================  ============================================
``3``                         choice number 3 (at an entry: the third
                              choice of the list ``h`` shows)
``y4`` / ``yellow 4``         write the value in yellow field 4
                              (fields count 1..9 from the left)
``p`` / ``pass``              pass (a misthrow when you are active)
``k`` / ``keep``              keep the roll
``r`` / ``reroll``            re-roll
``s`` / ``sheets``            show the screen again
``h`` / ``help`` / ``?``      list every choice, numbered, in full words
``q`` / ``quit``              leave the game
============================  ============================================

Anything else is answered with a short explanation and the same question; the game
state does not change until a valid choice is made. End of input (Ctrl-D) and Ctrl-C
leave cleanly with a message. At the end the sheets and every player's scoring
breakdown are printed (rows, the five pentagon columns, misthrows, total) in a table of
78 columns. The screens are ASCII; on a terminal whose encoding lacks a character of a
bot's name, :func:`main` writes it escaped (``\\xe8``), and a typed line it cannot
decode is answered "not a choice".

``--seed`` fixes the dice (or the deck) and the bots' own randomness, so the same seed
and the same choices replay the same game.

All input and output go through the ``input_fn`` / ``print_fn`` arguments of
:func:`main` and :class:`TerminalGame`, so tests and other front-ends can drive a game.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any, Callable, Sequence

import numpy as np

from . import rules, screen
from .console import command_exits, tolerant_stdio
from .game import Game, IllegalActionError
from .opponents import BotActionError, bot_action, make_opponents, split_specs
from .parallel import GAMES
from .spec import cards, dice
from .spec.base import PASS

__all__ = ["TerminalGame", "describe_action", "table_seeds", "seat_action", "play_step",
           "parse_choice", "ChoiceError", "main"]

_ROW_LETTERS = {name[0]: r for r, name in enumerate(rules.ROW_NAMES)}
_SHORT = {"p": "pass", "pass": "pass", "k": "keep", "keep": "keep", "r": "reroll",
          "reroll": "reroll", "re-roll": "reroll"}
_COMMANDS = {"s": "sheets", "sheets": "sheets", "sheet": "sheets", "h": "help",
             "help": "help", "?": "help", "q": "quit", "quit": "quit", "exit": "quit"}


class ChoiceError(ValueError):
    """Input that names none of the legal choices; the message says what to type."""


class _Leave(Exception):
    """The person left the game (quit, end of input, Ctrl-C)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class _BotFailed(Exception):
    """A bot's ``act`` raised; the message names the bot and the turn."""


# -- plain words -------------------------------------------------------------------------

def _field(cell: int) -> str:
    return f"{rules.ROW_NAMES[cell // rules.NUM_FIELDS]} field {cell % rules.NUM_FIELDS + 1}"


def _pass_words(game: Game, seat: int) -> str:
    return "pass (misthrow!)" if seat == game.active else "pass (write nothing)"


def describe_action(game: Game, seat: int, action: int) -> str:
    """``action`` of ``seat`` in plain words, for the game's current state.

    Examples: ``"write 11 in yellow field 4"``, ``"roll orange+purple (2..12)"``,
    ``"keep the roll (9)"``, ``"play purple 3 onto the top-right stack: 3 + 5 + 2 =
    10, orange+purple"``, ``"pass (misthrow!)"``.
    """
    if action < rules.NUM_CELLS:
        return f"write {game.value} in {_field(action)}"
    if action == game.pass_action:
        return _pass_words(game, seat)
    if game.name == "dice":
        return _describe_dice(game, action)
    return "play " + screen.play_words(game.hands[seat], game.tops(), action, full=True)


def _describe_dice(game: Game, action: int) -> str:
    if dice.ROLL_FIRST <= action < dice.KEEP:
        subset = action - dice.PASS
        k = len(dice.SUBSET_ROWS[subset])
        return f"roll {screen.colour_words(subset)} ({k}..{k * dice.DIE_FACES})"
    if action == dice.KEEP:
        return f"keep the roll ({game.value})"
    return f"re-roll {screen.colour_words(game.subset)}"


# -- a step in plain words ---------------------------------------------------------------

def _move_words(game: Game, seat: int, action: int, compact: bool) -> str | None:
    """What ``seat`` does with ``action`` (before the step), or None when it decides nothing
    (a pass outside the entry phase)."""
    if compact and game.name == "cards" and action >= cards.SINGLE_FIRST:
        return "play " + screen.play_words(game.hands[seat], game.tops(), action)
    if action != game.pass_action:
        return describe_action(game, seat, action)
    if game.public_info()["phase"] != "entry":
        return None
    if len(game.legal_actions(seat)) > 1:
        return _pass_words(game, seat)
    reason = f"cannot write {game.value}"
    return f"{reason}: misthrow!" if seat == game.active else reason


def _outcome(game: Game, phase: str, seat: int, action: int) -> str:
    """What the step showed after the move of ``seat``, the seat that was active: the dice
    faces of a roll, the misthrow count after a misthrow."""
    if game.name == "dice" and phase in ("choose", "reroll") and action != dice.KEEP:
        faces = [str(f) for f in game.dice if f]
        return " -> " + " + ".join(faces) + (f" = {game.value}" if len(faces) > 1 else "")
    if phase == "entry" and action == game.pass_action:
        return f" ({game.misthrows[seat]}/{rules.MAX_MISTHROWS})"
    return ""


def table_seeds(seed: int | None, num_players: int) -> list[int]:
    """The seeds ``seed`` derives for a table: the engine's first, then the bot ``k``
    seats after the person's (so one seed deals the same game in every front-end)."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(num_players,
                                                                         np.uint64)]


def seat_action(game: Game, seat: int, bot: Any) -> int:
    """``seat``'s action now: its only legal one, or ``bot.act(observation, mask)``
    (:func:`~qwinto_env.opponents.bot_action`: a bad answer raises BotActionError)."""
    legal = game.legal_actions(seat)
    if len(legal) == 1:
        return legal[0]
    mask = np.zeros(game.num_actions, dtype=np.int8)
    mask[legal] = 1
    return bot_action(bot, game.features()[game.observation_index(seat)], mask)


def play_step(game: Game, actions: Sequence[int], compact: bool = False
              ) -> list[tuple[int, str]]:
    """Step ``game`` with the joint ``actions`` and return ``(seat, text)`` for each seat
    that decided something, in seat order: ``"roll orange+purple (2..12) -> 3 + 5 = 8"``,
    ``"write 8 in purple field 3"``, ``"cannot write 8: misthrow! (1/4)"``. Seats with
    nothing to decide get no line. ``compact`` words card plays for 80 columns (``"play
    purple 6 on TR: 6 + 1 + 3 = 10, orange+yellow+purple"``, as the terminal game).

    Raises :class:`~qwinto_env.game.IllegalActionError` (game unchanged) for an illegal
    joint action.
    """
    actions = game.check_actions(actions)
    phase = game.public_info()["phase"]
    active = game.active
    words = [_move_words(game, seat, action, compact) for seat, action in enumerate(actions)]
    game.step(actions, validate=False)
    return [(seat, text + _outcome(game, phase, seat, action) if seat == active else text)
            for seat, (action, text) in enumerate(zip(actions, words)) if text]


def parse_choice(text: str, choices: Sequence[int], game: Game) -> int | str:
    """The action (or the command ``"sheets"``, ``"help"``, ``"quit"``) that ``text`` names.

    ``choices`` are the legal actions in the numbered order shown. Raises
    :class:`ChoiceError` with a short explanation for anything else.
    """
    word = " ".join(text.lower().split())
    count = len(choices)
    hint = "a field such as y4, or p" if _entry(choices) else f"a number from 1 to {count}"
    if not word:
        raise ChoiceError(f"please type {hint} (h lists the choices)")
    if word in _COMMANDS:
        return _COMMANDS[word]
    if word.isdecimal():
        number = _number(word, count)
        if number is None:
            raise ChoiceError(f"{screen.ellipsize(word, 20)} is not a choice: type a number "
                              f"from 1 to {count}")
        return choices[number - 1]
    action = _short_form(word, game)
    if action is None:
        raise ChoiceError(f"{screen.ellipsize(text.strip(), 20)!r} is not a choice: type {hint} "
                          f"(h lists the choices)")
    if action not in choices:
        raise ChoiceError(f"{screen.ellipsize(text.strip(), 20)!r} is not possible now (h lists "
                          f"the choices)")
    return action


def _entry(choices: Sequence[int]) -> bool:
    """Whether ``choices`` are an entry's (writes and the pass; the writes come first)."""
    return choices[0] < rules.NUM_CELLS or choices[0] == PASS


def _short_form(word: str, game: Game) -> int | None:
    """The action of a short form (``y4``, ``yellow 4``, ``pass``, ``keep``...), if any."""
    if word in _SHORT:
        name = _SHORT[word]
        if name == "pass":
            return game.pass_action
        if game.name != "dice":
            return None
        return dice.KEEP if name == "keep" else dice.REROLL
    head, digits = word.rstrip("0123456789").strip(), word[len(word.rstrip("0123456789")):]
    rows = [r for r, name in enumerate(rules.ROW_NAMES) if name == head]
    if head in _ROW_LETTERS:
        rows = [_ROW_LETTERS[head]]
    field = _number(digits, rules.NUM_FIELDS)
    if rows and field is not None:
        return rows[0] * rules.NUM_FIELDS + field - 1
    return None


def _number(digits: str, top: int) -> int | None:
    """The number in 1..``top`` that ``digits`` (decimal digits, maybe none) spell, or
    None: checked by length first, as int() refuses a pasted run of 4,300 digits."""
    digits = digits.lstrip("0")
    if not digits or len(digits) > len(str(top)) or int(digits) > top:
        return None
    return int(digits)


# -- the game loop -------------------------------------------------------------------------

class TerminalGame:
    """One game with a person at ``seat`` and bots at the other seats.

    ``input_fn(prompt)`` returns a line (raising ``EOFError`` at the end of input);
    ``print_fn(text)`` shows a line.
    """

    def __init__(self, game: str = "dice", opponents: Sequence[Any] = ("expert",),
                 num_players: int | None = None, seat: int = 0, seed: int | None = None,
                 start_player: int = 0, input_fn: Callable[[str], str] = input,
                 print_fn: Callable[[str], None] = print, **game_options: Any):
        if game not in GAMES:
            raise ValueError(f"unknown game {game!r}; choose one of {sorted(GAMES)}")
        specs = list(opponents)
        if num_players is None:
            num_players = 1 + len(specs)
        self.game: Game = GAMES[game](num_players=num_players, **game_options)
        n = self.game.num_players
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
            raise ValueError(f"seat must be in 0..{n - 1}, got {seat!r}")
        if not 0 <= start_player < n:
            raise ValueError(f"start_player must be in 0..{n - 1}, got {start_player!r}")
        self.seat = seat
        bots = make_opponents(specs, game, n) if n > 1 else []
        # bots[k-1] sits k seats after the person, as in the Gymnasium env.
        self.bots: dict[int, Any] = {(seat + k) % n: bot for k, bot in enumerate(bots, 1)}
        seeds = table_seeds(seed, n)
        self.game.reset(seed=seeds[0], start_player=start_player)
        for k, bot in enumerate(bots, 1):
            if callable(getattr(bot, "reset", None)):
                bot.reset(seed=seeds[k])
        self.input_fn, self.print_fn = input_fn, print_fn
        self._printed = 0  # lines shown since the last prompt: the screen's height so far

    def who(self, seat: int) -> str:
        """``"you"`` or ``"player 2 (expert)"``."""
        if seat == self.seat:
            return "you"
        bot = self.bots[seat]
        return f"player {seat} ({getattr(bot, 'name', type(bot).__name__)})"

    def label(self, seat: int) -> str:
        """:meth:`who`, cut to :data:`~qwinto_env.screen.LABEL_WIDTH` columns."""
        return screen.ellipsize(self.who(seat), screen.LABEL_WIDTH)

    def _out(self, text: str = "") -> None:
        """Show ``text`` wrapped at 80 columns, counting the lines since the last prompt."""
        lines = screen.wrap(text, " " * 6) if screen.text_width(text) > screen.WIDTH else [text]
        for line in lines:
            self._printed += 1
            self.print_fn(line)

    def play(self) -> int:
        """Play to the end (or until the person leaves); the exit status."""
        names = ", ".join(self.who(s) for s in sorted(self.bots)) or "nobody (solo)"
        self._out(f"Qwinto {self.game.name}: you are player {self.seat}, against {names}.")
        pentagons = "<..>" if self.game.num_players <= 2 else "<.."
        self._out(f"Fields count 1..9 from the left of a row (XX: no field); pentagons "
                  f"show as {pentagons}.")
        try:
            while not self.game.done:
                self._step()
        except _Leave as leave:
            self._out(f"{leave} Game abandoned in turn {self.game.turn + 1}.")
            return leave.status
        except KeyboardInterrupt:  # at the prompt or while a bot thinks
            self._out(f"Interrupted. Game abandoned in turn {self.game.turn + 1}.")
            return 130
        except (BotActionError, _BotFailed) as error:  # a faulty bot
            self._out(f"error: {error}; game stopped")
            return 1
        self._out("")
        for line in screen.sheets(self.game, self._labels()) + [""] + self.final_table():
            self._out(line)
        return 0

    def _labels(self) -> list[str]:
        return [self.label(s) for s in range(self.game.num_players)]

    def _step(self) -> None:
        game = self.game
        phase = game.public_info()["phase"]
        actions = []
        for seat in range(game.num_players):
            legal = game.legal_actions(seat)
            if seat == self.seat and len(legal) > 1:
                actions.append(self._ask(legal))
            else:
                actions.append(self._bot_action(seat))
        self._report(phase, play_step(game, actions, compact=True))

    def _bot_action(self, seat: int) -> int:
        try:
            return seat_action(self.game, seat, self.bots.get(seat))
        except BotActionError:
            raise
        except Exception as error:  # noqa: BLE001 - a bot's own failure, whatever it raised
            traceback.print_exc()  # for the bot's author, on stderr; the screen gets one line
            raise _BotFailed(f"{self.who(seat)} failed in turn {self.game.turn + 1}: "
                             f"{type(error).__name__}: {error}") from error

    def _report(self, phase: str, events: list[tuple[int, str]]) -> None:
        if phase in ("choose", "play") and self._printed:
            self._out("")  # a new turn starts: keep each turn's moves together
        for seat, text in events:
            self._out(f"  {self.label(seat)}: {text}")

    def _show(self, legal: list[int]) -> None:
        """The decision screen above the prompt: status, sheets, the compact menu."""
        game = self.game
        top = screen.status(game, self._labels(), self.seat) + screen.sheets(game, self._labels())
        for line in top + self._menu(legal, screen.HEIGHT - self._printed - len(top) - 1):
            self._out(line)

    def _menu(self, legal: list[int], room: int) -> list[str]:
        game = self.game
        if _entry(legal):
            return screen.entry_menu(game, legal, _pass_words(game, self.seat))
        if game.name == "cards":
            return screen.play_menu(game, self.seat, legal, room)
        return screen.columns([f"{n}) {describe_action(game, self.seat, a)}"
                               for n, a in enumerate(legal, 1)])

    def _prompt(self, legal: list[int]) -> str:
        if _entry(legal):
            return "your choice (y4 = yellow field 4, p = pass; h help, q quit): "
        return f"your choice (1-{len(legal)}, h help, q quit): "

    def _list(self, legal: list[int]) -> None:
        """Every choice in full words, numbered (may take more lines than the screen)."""
        for number, action in enumerate(legal, 1):
            self._out(f"  {number:2d}) {describe_action(self.game, self.seat, action)}")

    def _ask(self, legal: list[int]) -> int:
        """The person's choice among ``legal``; asks again until it is valid."""
        self._show(legal)
        while True:
            try:
                text = self.input_fn(self._prompt(legal))
            except EOFError:
                raise _Leave("End of input.", 0) from None
            self._printed = 0
            try:
                choice = parse_choice(text, legal, self.game)
            except ChoiceError as error:
                self._out(f"  {error}")
                continue
            if choice == "quit":
                raise _Leave("You left.", 0)
            if choice == "sheets":
                self._show(legal)
            elif choice == "help":
                self._out("  answer with a number (as listed here), or: y4 / yellow 4 (write "
                          "in yellow field 4), p(ass), k(eep), r(eroll), s(heets), q(uit)")
                self._list(legal)
            else:
                return int(choice)

    def final_table(self) -> list[str]:
        """The scoring breakdown of every player, and the winner(s); 78 columns."""
        game = self.game
        cols = " ".join(str(rules.CELL_COLUMN[pent]) for _, pent in rules.PENTAGON_COLUMNS)
        name = screen.LABEL_WIDTH + 2
        lines = [f"Final scores (pentagons: the complete 3-field columns {cols} of the grid)",
                 f"{'player':<{name}}{'orange':>7}{'yellow':>7}{'purple':>7}"
                 f"{'pentagons':>16}{'misthrows':>10}{'total':>7}"]
        totals = []
        for seat in range(game.num_players):
            b = rules.score_breakdown(game.sheet(seat), game.misthrows[seat])
            pents = " ".join(f"{p:2d}" if p else " ." for p in b["pentagons"])
            lines.append(screen.pad(self.label(seat), name)
                         + f"{b['rows'][0]:>7}{b['rows'][1]:>7}{b['rows'][2]:>7}"
                         f"{pents:>16}{b['misthrows']:>10}{b['total']:>7}")
            totals.append(b["total"])
        if game.num_players > 1:
            best = max(totals)
            winners = [self.label(s) for s, t in enumerate(totals) if t == best]
            lines += screen.wrap(("Winner: " if len(winners) == 1 else "Shared win: ")
                                 + ", ".join(winners) + f" with {best} points", "  ")
        return lines


# -- command line ----------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m qwinto_env.play",
        description="Play Qwinto (dice or cards) against bots in the terminal.")
    p.add_argument("--game", choices=sorted(GAMES), default="dice")
    p.add_argument("--opponents", default=None,
                   help="comma-separated bot specs, one per other seat or one for all: "
                        "random, greedy, expert, pretrained:<name>, "
                        "search[person]:pretrained:<name> or a checkpoint path "
                        "(default: expert)")
    p.add_argument("--players", type=int, default=None,
                   help="number of players, you included (default: 1 + number of "
                        "opponents; 1 = solo)")
    p.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    p.add_argument("--start", type=int, default=0, help="seat of the first player")
    p.add_argument("--seed", type=_seed, default=None,
                   help="seed for the dice/deck and the bots: replays the same game")
    return p


def _seed(text: str) -> int:
    if not text.strip().isdecimal():
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    try:
        return int(text)
    except ValueError:  # past the digits int() reads (4,300 by default)
        raise argparse.ArgumentTypeError(
            f"must be a non-negative integer of at most {sys.get_int_max_str_digits():,} "
            f"digits, got {screen.ellipsize(text.strip(), 20)!r}") from None


def main(argv: Sequence[str] | None = None, input_fn: Callable[[str], str] = input,
         print_fn: Callable[[str], None] = print) -> int:
    """Run the terminal game; returns the exit status (0 also when the person quits)."""
    parser = _parser()
    args = parser.parse_args(argv)
    tolerant_stdio()
    specs = ["expert"] if args.opponents is None else split_specs(args.opponents)
    if "" in specs:
        print_fn(f"error: --opponents {args.opponents!r}: bot {specs.index('') + 1} of "
                 f"{len(specs)} is empty")
        return 2
    if args.players == 1:
        if args.opponents:
            print_fn("error: solo play (--players 1) has no opponents")
            return 2
        specs = []
    with command_exits(parser.prog):  # Ctrl-C while the bots load, too
        try:
            session = TerminalGame(args.game, specs, num_players=args.players,
                                   seat=args.seat, seed=args.seed, start_player=args.start,
                                   input_fn=input_fn, print_fn=print_fn)
        except ValueError as error:
            print_fn(f"error: {error}")
            return 2
        return session.play()


if __name__ == "__main__":
    sys.exit(main())
