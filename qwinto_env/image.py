"""Positions as pictures: the score sheets drawn as the printed game shows them.

=====================================  ===============================================
call                                   result
=====================================  ===============================================
``draw(game, viewer=None)``            ``HxWx3 uint8`` array of the whole table
``save_png(path, game_or_frame)``      a PNG file (written atomically)
=====================================  ===============================================

:func:`qwinto_env.video.record_gif` plays a whole game into an animated GIF.

The picture holds every player's sheet (the three coloured rows offset on the sheet's
12-column grid as printed, the crossed-out gap, the pentagon fields as pentagons, the
written numbers, the four misthrow boxes, the score), the active player's sheet framed,
and above the sheets the public state: the dice game's roll (each die in its colour,
and the sum) or the card game's four stack tops and the cards played this turn; at the
end, who won. With
``viewer=seat`` the card game also shows that seat's own hand (nobody else's).

The canvas size depends only on the game and the player count (:func:`frame_size`), so
the frames of a game, and of every game of one table, stack into a video. The envs'
``render_mode="rgb_array"`` returns :func:`draw`'s array; the parts that never change
(the empty sheets) are drawn once per table and copied.
"""

from __future__ import annotations

import functools
import numbers
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from . import rules
from .fileio import atomic_write, check_output
from .game import Game
from .spec import cards

__all__ = ["draw", "save_png", "save_gif", "check_fps", "frame_size", "field_box",
           "misthrow_box", "hand_box"]

CELL = 36            # a field's side, pixels
LABEL = 64           # the row names' column
SIDE = 132           # the score and misthrow column right of the grid
HEAD = 26            # a sheet's title line
SHEET_H = HEAD + rules.NUM_ROWS * CELL + 12
WIDTH = LABEL + rules.NUM_GRID_COLUMNS * CELL + SIDE + 16
TABLE_H = 96         # the roll or the stacks, above the sheets
CARD_W, CARD_H = 34, 42

BACKGROUND = (250, 248, 240)
INK = (30, 30, 30)
FRAME = (200, 40, 40)
GAP = (150, 150, 150)
#: Fill of a row's fields, by row then card colour (orange, yellow, purple, grey).
COLOURS = ((240, 140, 50), (240, 205, 60), (160, 100, 200), (160, 160, 160))
PALE = tuple(tuple(255 - (255 - c) // 3 for c in colour) for colour in COLOURS)


@functools.lru_cache(maxsize=None)
def _font(size: int) -> ImageFont.ImageFont:
    """Pillow's own font (no system fonts, nothing downloaded)."""
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, ImportError, OSError):  # Pillow < 10.1, or built without FreeType:
        return ImageFont.load_default()         # its one bitmap size


def frame_size(num_players: int) -> tuple[int, int]:
    """``(height, width)`` of every frame of a table of ``num_players``."""
    return TABLE_H + num_players * SHEET_H, WIDTH


def _pentagon(x: int, y: int, size: int) -> list[tuple[float, float]]:
    """A pentagon, point up, inside the square at ``(x, y)``."""
    cx, cy, r = x + size / 2, y + size / 2 + 2, size / 2 - 1
    return [(cx + r * np.sin(2 * np.pi * k / 5), cy - r * np.cos(2 * np.pi * k / 5))
            for k in range(5)]


def _field_box(top: int, row: int, column: int) -> tuple[int, int]:
    return LABEL + column * CELL, top + HEAD + row * CELL


def field_box(seat: int, cell: int) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` pixels of ``seat``'s field ``cell`` in a frame."""
    r, f = divmod(cell, rules.NUM_FIELDS)
    x, y = _field_box(TABLE_H + seat * SHEET_H, r, rules.FIELD_COLUMNS[r][f])
    return x, y, x + CELL, y + CELL


def misthrow_box(seat: int, box: int) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` pixels of ``seat``'s misthrow box ``box``."""
    x = LABEL + rules.NUM_GRID_COLUMNS * CELL + 14 + box * 26
    y = TABLE_H + seat * SHEET_H + HEAD + 20
    return x, y, x + 21, y + 21


def hand_box() -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` pixels of the card game's hand (``viewer``)."""
    x = WIDTH - 16 - cards.HAND_SIZE * (CARD_W + 6)
    return x, 24, WIDTH - 16, 24 + CARD_H + 1


def _cut(text: str, size: int, width: float) -> str:
    """``text``, cut to at most ``width`` pixels in font ``size`` (ending in ``...``)."""
    font = _font(size)
    if font.getlength(text) <= width:
        return text
    while text and font.getlength(text + "...") > width:
        text = text[:-1]
    return text + "..."


def _centred(pen: ImageDraw.ImageDraw, box: Sequence[float], text: str, size: int,
             fill: tuple[int, int, int] = INK) -> None:
    left, top, right, bottom = pen.textbbox((0, 0), text, font=_font(size))
    x = (box[0] + box[2] - (right - left)) / 2 - left
    y = (box[1] + box[3] - (bottom - top)) / 2 - top
    pen.text((x, y), text, font=_font(size), fill=fill)


def _empty_sheet(pen: ImageDraw.ImageDraw, seat: int) -> None:
    """The printed part of one sheet: row names, fields, gaps, pentagons, boxes."""
    top = TABLE_H + seat * SHEET_H
    pentagons = set(rules.PENTAGON_FIELDS)
    for r, name in enumerate(rules.ROW_NAMES):
        _, y = _field_box(top, r, 0)
        pen.text((8, y + CELL / 2 - 7), name, font=_font(13), fill=INK)
        x, _ = _field_box(top, r, rules.GAP_COLUMNS[r])
        pen.rectangle((x + 2, y + 2, x + CELL - 2, y + CELL - 2), fill=GAP)
        pen.line((x + 6, y + 6, x + CELL - 6, y + CELL - 6), fill=BACKGROUND, width=3)
        pen.line((x + 6, y + CELL - 6, x + CELL - 6, y + 6), fill=BACKGROUND, width=3)
        for f, column in enumerate(rules.FIELD_COLUMNS[r]):
            x, _ = _field_box(top, r, column)
            if (r, f) in pentagons:
                pen.polygon(_pentagon(x, y, CELL), fill=PALE[r], outline=COLOURS[r], width=2)
            else:
                pen.rectangle((x + 1, y + 1, x + CELL - 1, y + CELL - 1), fill=PALE[r],
                              outline=COLOURS[r], width=2)
    pen.text((LABEL + rules.NUM_GRID_COLUMNS * CELL + 14, top + HEAD + 2), "misthrows",
             font=_font(12), fill=INK)
    for i in range(rules.MAX_MISTHROWS):
        x, y, _, _ = misthrow_box(seat, i)
        pen.rectangle((x, y, x + 20, y + 20), outline=INK, width=1)


@functools.lru_cache(maxsize=16)
def _background(num_players: int) -> Image.Image:
    height, width = frame_size(num_players)
    image = Image.new("RGB", (width, height), BACKGROUND)
    pen = ImageDraw.Draw(image)
    for seat in range(num_players):
        _empty_sheet(pen, seat)
    return image


def _fill_sheet(pen: ImageDraw.ImageDraw, game: Game, seat: int, name: str) -> None:
    top = TABLE_H + seat * SHEET_H
    score = f"   score {game.scores()[seat]}"
    name = _cut(name, 15, WIDTH - 16 - _font(15).getlength(score))  # the score stays
    pen.text((8, top + 5), name + score, font=_font(15), fill=INK)
    for cell, value in enumerate(game.cells[seat]):
        if value:
            x, y, right, bottom = field_box(seat, cell)
            _centred(pen, (x, y + 2, right, bottom), str(value), 17)
    for i in range(game.misthrows[seat]):
        x, y, _, _ = misthrow_box(seat, i)
        pen.line((x + 3, y + 3, x + 17, y + 17), fill=FRAME, width=3)
        pen.line((x + 3, y + 17, x + 17, y + 3), fill=FRAME, width=3)
    if seat == game.active and not game.done:
        pen.rectangle((2, top + 1, WIDTH - 3, top + SHEET_H - 3), outline=FRAME, width=3)


def _card(pen: ImageDraw.ImageDraw, x: int, y: int, card: int) -> None:
    colour = COLOURS[cards.CARD_COLOUR[card]]
    pen.rounded_rectangle((x, y, x + CARD_W, y + CARD_H), radius=5, fill=colour, outline=INK)
    _centred(pen, (x, y, x + CARD_W, y + CARD_H), str(cards.CARD_VALUE[card]), 18)


def _dice_table(pen: ImageDraw.ImageDraw, game: Game) -> None:
    roll = game.public_info()["roll"]
    if not roll["value"]:
        pen.text((12, 38), "no roll yet", font=_font(15), fill=INK)
        return
    x = 12
    for r, face in enumerate(roll["dice"]):
        if face:
            pen.rounded_rectangle((x, 20, x + 52, 72), radius=8, fill=COLOURS[r], outline=INK)
            _centred(pen, (x, 20, x + 52, 72), str(face), 24)
            x += 64
    pen.text((x + 8, 34), f"= {roll['value']}", font=_font(22), fill=INK)


def _cards_table(pen: ImageDraw.ImageDraw, game: Game, viewer: int | None) -> None:
    """The stacks as laid out (two over two), what was played, and the viewer's hand."""
    for stack, card in enumerate(game.tops()):
        _card(pen, 12 + stack % 2 * (CARD_W + 6), 4 + stack // 2 * (CARD_H + 4), card)
    roll = game.public_info()["roll"]
    if roll["cards"]:
        colours = "+".join(roll["colours"]) or "no colour"
        pen.text((110, 34), f"played: {roll['value']}, {colours}", font=_font(15), fill=INK)
    if viewer is not None:
        x, y, _, _ = hand_box()
        pen.text((x - 80, 34), "your hand", font=_font(15), fill=INK)
        for slot, card in enumerate(game.hands[viewer]):
            _card(pen, x + slot * (CARD_W + 6), y, card)


def _game_over(game: Game, names: Sequence[str] | None) -> str:
    """``Game over, won by <names>``; by seat numbers where the names do not fit the
    frame's width (a tie of two long bot names): the sheets below carry the names."""
    if game.num_players == 1:
        return "Game over"
    scores = game.scores()
    best = [seat for seat in range(game.num_players) if scores[seat] == max(scores)]
    text = "Game over, won by " + " and ".join(
        names[seat] if names else f"player {seat}" for seat in best)
    if _font(20).getlength(text) <= WIDTH - 24:
        return text
    seats = [str(seat) for seat in best]
    return "Game over, won by " + (f"player {seats[0]}" if len(seats) == 1 else
                                   f"players {', '.join(seats[:-1])} and {seats[-1]}")


def draw(game: Game, viewer: int | None = None, names: Sequence[str] | None = None
         ) -> np.ndarray:
    """The table as an ``HxWx3 uint8`` array (see the module docstring).

    ``viewer``: the seat whose hand the card game shows (``None``: no hand); ``names``:
    a title per seat (default ``player k``), cut with ``...`` where it does not fit
    beside the score; the winners are named by seat where their names do not fit.
    """
    n = game.num_players
    if viewer is not None and (isinstance(viewer, (bool, np.bool_))
                               or not isinstance(viewer, (int, np.integer))
                               or not 0 <= viewer < n):
        raise ValueError(f"viewer must be a seat in 0..{n - 1} or None, got {viewer!r}")
    viewer = None if viewer is None else int(viewer)
    if names is not None and len(names) != n:
        raise ValueError(f"names must give one name per seat ({n}), got {len(names)}")
    image = _background(n).copy()
    pen = ImageDraw.Draw(image)
    if game.done:
        pen.text((12, 36), _game_over(game, names), font=_font(20), fill=INK)
    elif game.name == "dice":
        _dice_table(pen, game)
    else:
        _cards_table(pen, game, viewer)
    for seat in range(n):
        _fill_sheet(pen, game, seat, names[seat] if names else f"player {seat}")
    # A writable copy, as Gymnasium's own envs return (asarray would be read-only).
    return np.array(image, dtype=np.uint8)


def _frame(game_or_frame: Game | np.ndarray, viewer: int | None) -> np.ndarray:
    if isinstance(game_or_frame, Game):
        return draw(game_or_frame, viewer)
    frame = np.asarray(game_or_frame)
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"a frame must be an HxWx3 uint8 array, got {frame.dtype} "
                         f"{frame.shape}")
    return frame


def save_png(path: str | os.PathLike, game_or_frame: Game | np.ndarray,
             viewer: int | None = None) -> Path:
    """Write a game's position (or a frame from :func:`draw`) as a PNG; returns the path.
    A ``path`` that cannot be written (no such folder, a folder) or that ends in another
    suffix than ``.png`` (``x.jpg``) raises ValueError, and nothing is written."""
    check_output(path, ".png")
    image = Image.fromarray(_frame(game_or_frame, viewer))
    atomic_write(path, lambda file: image.save(file, format="PNG"))
    return Path(path)


#: Frame rates a GIF can hold: its delays count hundredths of a second in 16 bits (up to
#: 655.35 s, which the last frame, shown three times as long, must fit), down to 0.02 s.
MIN_FPS, MAX_FPS = 0.005, 50.0
#: The longest delay of a GIF frame, in milliseconds.
MAX_DELAY_MS = 655_350


def check_fps(fps: Any) -> float:
    """``fps`` as a float if it is a frame rate a GIF can hold (:data:`MIN_FPS` to
    :data:`MAX_FPS`; numpy numbers too), else ValueError."""
    if isinstance(fps, (bool, np.bool_)) or not isinstance(fps, numbers.Real) \
            or not MIN_FPS <= fps <= MAX_FPS:
        raise ValueError(f"fps must be a number from {MIN_FPS:g} to {MAX_FPS:g}, got {fps!r}")
    return float(fps)


def save_gif(path: str | os.PathLike, frames: Sequence[np.ndarray], fps: float = 2.0) -> Path:
    """Write frames of one table (from :func:`draw`) as a looping animated GIF, the last
    frame shown three times as long; returns the path. A bad ``fps`` or a ``path`` that
    cannot be written or ends in another suffix than ``.gif`` raises ValueError before the
    frames are read."""
    check_fps(fps)
    check_output(path, ".gif")
    arrays = [_frame(frame, None) for frame in frames]
    if not arrays or len({array.shape for array in arrays}) != 1:
        raise ValueError("frames must be one or more arrays of the same size")
    # One palette for the whole game, taken from a sample of its frames: quantizing each
    # frame to its own palette is slower by about 5x and flickers.
    sample = np.concatenate(arrays[::max(1, len(arrays) // 8)] + arrays[-1:])
    palette = Image.fromarray(sample).quantize(255, Image.Quantize.FASTOCTREE,
                                               dither=Image.Dither.NONE)
    # Equal frames in a row are one frame shown as long as they all were (PIL merges
    # them too, but its sum of delays may overflow the GIF's 16 bits): capped here.
    shown: list[tuple[np.ndarray, float]] = []
    for k, array in enumerate(arrays):
        delay = (3000 if k == len(arrays) - 1 else 1000) / fps
        if shown and np.array_equal(shown[-1][0], array):
            delay += shown.pop()[1]
        shown.append((array, delay))
    images = [Image.fromarray(array).quantize(palette=palette, dither=Image.Dither.NONE)
              for array, _ in shown]
    duration = [min(round(delay), MAX_DELAY_MS) for _, delay in shown]
    atomic_write(path, lambda file: images[0].save(
        file, format="GIF", save_all=True, append_images=images[1:], duration=duration,
        loop=0))
    return Path(path)
