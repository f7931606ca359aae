"""The screens of the terminal game (:mod:`qwinto_env.play`), laid out for 80x24.

Every function returns lines of at most :data:`WIDTH` columns. A decision screen is,
top to bottom:

=============  ==========================================================================
part           lines
=============  ==========================================================================
status         dice: 1 (turn, who rolled what); cards: 2 (turn, the 2x2 stacks as
               ``TL TR / BL BR``, your hand)
sheets         up to 2 players: 4 per player (head line, then the three rows as in
               :func:`qwinto_env.render.render_sheet`); 3 or more: compact sheets
               (``render_sheet(cells, compact=True)``) two side by side, 4 per
               pair of players
menu           roll / keep or re-roll: numbered, in columns; entry: one line per row with
               a writable field, naming the fields by their short forms (``y4``), ``p``
               (pass) on the last one; card play: a table card x stack of the single
               plays, then the double plays in columns when they fit, else one line
               naming their numbers (``h`` lists them)
=============  ==========================================================================

A seat's label (``you`` or ``player 1 (expert)``) is cut to :data:`LABEL_WIDTH`
columns, ending in ``...`` when cut. Columns are the terminal's (:func:`text_width`: a
CJK character or an emoji takes two), not characters. In the card game's menus a card is written by
colour initial and value (``o4``, ``g-2``), a stack by its code
(:data:`qwinto_env.spec.cards.STACK_CODES`) and the rows a value may go in by their
initials (``oy``; ``-`` when nobody may write).
"""

from __future__ import annotations

import textwrap
import unicodedata
from typing import Sequence

from . import rules
from .game import Game
from .render import render_sheet
from .spec import cards

__all__ = ["WIDTH", "HEIGHT", "LABEL_WIDTH", "text_width", "pad", "ellipsize", "wrap", "columns",
           "colour_words", "play_words", "status", "sheets", "entry_menu", "play_menu"]

#: The terminal size every screen is laid out for.
WIDTH, HEIGHT = 80, 24
#: The widest seat label.
LABEL_WIDTH = 22
#: Stack codes, in stack order (positions ``0 1 / 2 3`` of the square).
_COMPACT_WIDTH = 38  # one compact sheet; two side by side with a gap of 4 fill 80


def text_width(text: str) -> int:
    """The columns ``text`` takes in a terminal: 2 for a wide or full-width character (CJK,
    most emoji), none for a combining mark or a joiner, 1 for any other. Every width on
    the screens is measured so (a bot's name may hold any of them)."""
    return sum(0 if unicodedata.category(c) in ("Mn", "Me", "Cf")
               else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def pad(text: str, width: int, fill: str = " ") -> str:
    """``text`` filled with ``fill`` to ``width`` columns (``str.ljust`` counts characters)."""
    return text + fill * (width - text_width(text))


def ellipsize(text: str, width: int) -> str:
    """``text``, cut to ``width`` columns with ``...`` at the end when too long."""
    if text_width(text) <= width:
        return text
    kept, used = 0, 0
    for char in text:
        used += text_width(char)
        if used > width - 3:
            break
        kept += 1
    return text[:kept] + "..."


def wrap(text: str, indent: str = "") -> list[str]:
    """``text`` wrapped at :data:`WIDTH`, continuation lines indented by ``indent``."""
    for limit in range(WIDTH, 0, -1):  # textwrap counts characters: narrower for wide ones
        lines = textwrap.wrap(text, limit, subsequent_indent=indent,
                              break_on_hyphens=False) or [""]
        if max(map(text_width, lines)) <= WIDTH:
            return lines
    return lines


def columns(items: Sequence[str], indent: int = 2) -> list[str]:
    """``items`` row by row in equal columns, as many columns as fit in :data:`WIDTH`."""
    if not items:
        return []
    width = max(map(len, items)) + 2
    per_line = max(1, (WIDTH - indent + 2) // width)
    return [(" " * indent + "".join(s.ljust(width) for s in items[i:i + per_line])).rstrip()
            for i in range(0, len(items), per_line)]


def colour_words(bits: int, short: bool = False) -> str:
    """The rows of bitmask ``bits``: ``orange+purple`` (``op`` when ``short``)."""
    names = [name for r, name in enumerate(rules.ROW_NAMES) if bits >> r & 1]
    return "".join(name[0] for name in names) if short else "+".join(names)


def _card(card: int) -> str:
    return f"{cards.COLOUR_NAMES[cards.CARD_COLOUR[card]][0]}{cards.CARD_VALUE[card]}"


def play_words(hand: Sequence[int], tops: Sequence[int], action: int, full: bool = False
               ) -> str:
    """A card play in short, ``purple 6 on TR: 6 + 1 + 3 = 10, orange+yellow+purple``, or
    with ``full`` in whole words, ``purple 6 onto the top-right stack: ...`` (two cards:
    ``..., then ...``; ``nobody can write`` where the short form says ``nobody``)."""
    value, colours = cards.play_result(hand, tops, action)
    slots, stacks = cards.PLAYS[action]
    where = ([f"onto the {cards.STACK_NAMES[t]} stack" for t in stacks] if full
             else [f"on {cards.STACK_CODES[t]}" for t in stacks])
    placed = (", then " if full else ", ").join(
        f"{cards.card_name(hand[s])} {w}" for s, w in zip(slots, where))
    counted = cards.PLAY_COUNTED[action - cards.SINGLE_FIRST]
    # PLAY_COUNTED numbers the hand's slots, then the tops: a hand the empty pile left
    # short (empty_pile "end" or "no_draw") keeps the tops at their places
    pool = [*hand, *[-1] * (cards.HAND_SIZE - len(hand)), *tops]
    total = " + ".join(str(cards.CARD_VALUE[pool[i]]) for i in counted).replace("+ -", "- ")
    nobody = "nobody can write" if full else "nobody"
    writable = colour_words(colours) if value >= rules.MIN_VALUE and colours else nobody
    return f"{placed}: {total} = {value}, {writable}"


# -- status and sheets ---------------------------------------------------------------------

def status(game: Game, labels: Sequence[str], seat: int) -> list[str]:
    """The line(s) above the sheets: the turn, the roll or the stacks and ``seat``'s hand.
    The first is filled with ``-`` to set the screen off from the moves above it."""
    turn = f"turn {game.turn + 1}"
    if game.name == "dice":
        if not game.subset:
            text = f"{turn}: {labels[game.active]} to roll"
        else:
            text = (f"{turn}: {labels[game.active]} rolled {colour_words(game.subset)} = "
                    f"{game.value}" + (", re-roll available" if game.reroll_left else ""))
        return [pad(f"{text} ", WIDTH, "-")] if text_width(text) < WIDTH else wrap(text)
    if game.played:
        left = f"{turn}: write {game.value} in {colour_words(game.colours)}"
    else:
        info = game.public_info()
        left = (f"{turn}: {labels[game.active]} to play, pile {info['pile_size']}, "
                f"covered {len(game.covered_cards())}")
    hand = "your hand: " + ", ".join(cards.card_name(c) for c in game.hands[seat])
    tops = [f"{code} [{cards.card_name(top):>9}]"
            for code, top in zip(cards.STACK_CODES, game.tops())]
    return [pad(f"{ellipsize(left, 41)} ", 43, "-") + f" {tops[0]} {tops[1]}",
            f"{hand:<44}{tops[2]} {tops[3]}"]


def sheets(game: Game, labels: Sequence[str]) -> list[str]:
    """Every player's sheet, score and misthrows (module docstring: the layout)."""
    scores = game.scores()
    boxes = ["".join("X" if i < m else "." for i in range(rules.MAX_MISTHROWS))
             for m in game.misthrows]
    if game.num_players <= 2:
        lines = []
        for seat, label in enumerate(labels):
            lines.append(f"{label}: score {scores[seat]:3d}, misthrows [{boxes[seat]}]")
            lines.extend("  " + line for line in render_sheet(game.cells[seat]))
        return lines
    blocks = [[f"{pad(label, LABEL_WIDTH)} {scores[seat]:3d} [{boxes[seat]}]",
               *render_sheet(game.cells[seat], compact=True)] for seat, label in enumerate(labels)]
    lines = []
    for left, right in zip(blocks[::2], blocks[1::2] + [[]]):
        lines.extend((pad(a, _COMPACT_WIDTH + 4) + b).rstrip()
                     for a, b in zip(left, right or [""] * len(left)))
    return lines


# -- menus ---------------------------------------------------------------------------------

def entry_menu(game: Game, legal: Sequence[int], pass_words: str) -> list[str]:
    """The entry choices by short form, one row per line, and ``p`` on the last line."""
    head = f"write {game.value} in"
    lines = []
    for r, name in enumerate(rules.ROW_NAMES):
        fields = [f"{name[0]}{c - r * rules.NUM_FIELDS + 1}" for c in legal
                  if c // rules.NUM_FIELDS == r and c < rules.NUM_CELLS]
        if fields:
            lines.append(f"  {head if not lines else '':<14}{name + ':':<8}{' '.join(fields)}")
    tail = f"p = {pass_words}"
    if not lines:
        return [f"  {tail}"]
    if len(lines[-1]) + 4 + len(tail) <= WIDTH:
        lines[-1] += f"   {tail}"
    else:
        lines.append(f"  {'':<14}{tail}")
    return lines


def play_menu(game: Game, seat: int, legal: Sequence[int], room: int) -> list[str]:
    """The card plays: the table card x stack of the single plays, then the table card
    order x stack pair of the double plays when both fit in ``room`` lines, else one
    line naming the double plays' numbers. A cell is ``number) value rows``."""
    hand, tops = game.hands[seat], game.tops()
    number = {action: n for n, action in enumerate(legal, 1)}
    lines = [f"  {'card':<10}"
             + "".join(f"onto {code:<9}" for code in cards.STACK_CODES).rstrip()]
    for slot, card in enumerate(hand):
        row = [cards.SINGLE_FIRST + slot * cards.NUM_STACKS + t for t in range(cards.NUM_STACKS)]
        lines.append(f"  {cards.card_name(card):<10}" + "".join(
            f"{number[a]:>2}) {_outcome(hand, tops, a):<10}" for a in row).rstrip())
    doubles = [a for a in legal if a >= cards.DOUBLE_FIRST]
    if not doubles:
        return lines
    block = _double_table(hand, tops, doubles, number)
    if len(lines) + len(block) <= room:
        return lines + block
    return lines + [f"  {number[doubles[0]]}-{number[doubles[-1]]}) {len(doubles)} double "
                    f"plays (two cards of equal value): h lists them"]


def _double_table(hand: Sequence[int], tops: Sequence[int], doubles: Sequence[int],
                  number: dict[int, int]) -> list[str]:
    """Rows: the ordered card pairs; columns: the stack pairs ``A>B``, the row's first
    card going onto ``A``, then its second onto ``B``."""
    pairs = sorted({cards.PLAYS[a][0] for a in doubles})
    head, values = f"{'  cards':<12}", f"{'  value':<12}"
    for a, b in cards.STACK_PAIRS:
        head += f"{'  ' + cards.STACK_CODES[a] + '>' + cards.STACK_CODES[b]:<8}"
        # Both cards have one value, so a stack pair announces the same value for every pair.
        action = next(x for x in doubles if cards.PLAYS[x][1] == (a, b))
        values += f"{cards.play_result(hand, tops, action)[0]:>4}    "
    lines = [head.rstrip(), values.rstrip()]
    for pair in pairs:
        label = f"  {_card(hand[pair[0]])} {_card(hand[pair[1]])}"
        lines.append(f"{label:<12}" + "".join(
            f"{number[x]:>3}) {_rows(hand, tops, x):<3}" for x in doubles
            if cards.PLAYS[x][0] == pair).rstrip())
    return lines


def _rows(hand: Sequence[int], tops: Sequence[int], action: int) -> str:
    """The rows (initials) the play's value may go in; ``-`` when nobody may write."""
    value, colours = cards.play_result(hand, tops, action)
    return colour_words(colours, short=True) if value >= rules.MIN_VALUE and colours else "-"


def _outcome(hand: Sequence[int], tops: Sequence[int], action: int) -> str:
    """``10 oy``: the play's value and the rows it may go in."""
    return f"{cards.play_result(hand, tops, action)[0]:>3} {_rows(hand, tops, action)}"
