"""Pictures of positions: ``render_mode="rgb_array"``, PNGs and GIFs (qwinto_env.image)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from PIL import Image
from pettingzoo.test import render_test

import qwinto_env
from qwinto_env import parallel_env, rules
from qwinto_env.image import (TABLE_H, draw, field_box, frame_size, hand_box, misthrow_box, save_gif,
                              save_png)
from qwinto_env.video import play_frames, record_gif


def box(frame: np.ndarray, corners: tuple[int, int, int, int]) -> np.ndarray:
    left, top, right, bottom = corners
    return frame[top:bottom, left:right]


def random_positions(game: str, num_players: int, seed: int, every: int = 7):
    """Positions of one masked-random game, every ``every``-th step and the last."""
    env = parallel_env(game=game, num_players=num_players)
    observations, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    step = 0
    while env.agents:
        actions = {a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"])))
                   for a in env.agents}
        observations, *_ = env.step(actions)
        step += 1
        if step % every == 0 or not env.agents:
            yield env.game


@pytest.mark.parametrize("game, num_players", [("dice", 1), ("dice", 2), ("dice", 6),
                                               ("cards", 2), ("cards", 4)])
def test_every_field_and_misthrow_box_shows_the_state(game, num_players):
    # A field differs from the empty sheet exactly when something is written in it, and
    # a misthrow box exactly when that misthrow happened: the picture follows the state.
    empty = parallel_env(game=game, num_players=num_players)
    empty.reset(seed=0)
    blank = draw(empty.game)
    for seed in range(3):
        for position in random_positions(game, num_players, seed):
            frame = draw(position)
            assert frame.shape == (*frame_size(num_players), 3) and frame.dtype == np.uint8
            for seat in range(num_players):
                for cell in range(rules.NUM_CELLS):
                    changed = not np.array_equal(box(frame, field_box(seat, cell)),
                                                 box(blank, field_box(seat, cell)))
                    assert changed == bool(position.cells[seat][cell]), (seat, cell)
                for i in range(rules.MAX_MISTHROWS):
                    changed = not np.array_equal(box(frame, misthrow_box(seat, i)),
                                                 box(blank, misthrow_box(seat, i)))
                    assert changed == (i < position.misthrows[seat]), (seat, i)


def test_the_hand_is_drawn_for_the_viewer_only():
    env = parallel_env(game="cards", num_players=2)
    env.reset(seed=3)
    game = env.game
    assert game.hands[0] != game.hands[1]
    nobody, mine, theirs = draw(game), draw(game, viewer=0), draw(game, viewer=1)
    hand = hand_box()
    assert not np.array_equal(box(mine, hand), box(nobody, hand))
    assert not np.array_equal(box(mine, hand), box(theirs, hand))
    outside = mine.copy()
    outside[hand[1]:hand[3], hand[0] - 90:hand[2]] = 0   # the hand and its caption
    other = theirs.copy()
    other[hand[1]:hand[3], hand[0] - 90:hand[2]] = 0
    assert np.array_equal(outside, other)


def test_a_frame_is_deterministic_and_the_roll_is_drawn():
    env = parallel_env(game="dice", num_players=2)
    observations, _ = env.reset(seed=1)
    before = draw(env.game)
    assert np.array_equal(before, draw(env.game))
    env.step({"player_0": 34, "player_1": 27})   # roll all three dice
    after = draw(env.game)
    assert not np.array_equal(before[:TABLE_H], after[:TABLE_H])     # the dice, above the sheets
    assert np.array_equal(before[TABLE_H:], after[TABLE_H:])         # nothing written yet


def test_long_names_and_a_tie_of_them_stay_inside_the_frame():
    """A title's name is cut (the score kept) and a tie the names do not fit is worded by
    seat: the text ran off the frame's right edge."""
    from qwinto_env.image import BACKGROUND, WIDTH

    *_, over = random_positions("dice", 2, seed=84)
    assert over.done and over.scores()[0] == over.scores()[1]   # a tie
    for names in (["player 0 (pretrained:dice-2p)", "player 1 (pretrained:dice-2p)"],
                  ["player 0 (" + "x" * 80 + ")", "player 1"]):
        frame = draw(over, names=names)
        assert (frame[:, WIDTH - 12:] == BACKGROUND).all(), names


@pytest.mark.parametrize("viewer", [-1, 2, True, 0.5, "0"])
def test_a_bad_viewer_is_refused(viewer):
    env = parallel_env(game="cards", num_players=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="viewer"):
        draw(env.game, viewer=viewer)


def test_a_numpy_seat_is_a_viewer_and_frames_are_writable():
    env = parallel_env(game="cards", num_players=2, render_mode="rgb_array")
    env.reset(seed=0)
    frame = draw(env.game, viewer=np.int64(1))
    assert np.array_equal(frame, draw(env.game, viewer=1))
    rendered = env.render()
    rendered[:8] = 0   # users draw overlays on frames in place
    assert not np.array_equal(rendered, env.render())


def test_without_freetype_the_bitmap_font_is_used(monkeypatch):
    from PIL import ImageFont

    from qwinto_env import image

    real = ImageFont.load_default

    def no_freetype(size=None):
        if size is not None:
            raise ImportError("The _imagingft C module is not installed")
        return real()

    monkeypatch.setattr(ImageFont, "load_default", no_freetype)
    image._font.cache_clear()
    try:
        env = parallel_env(game="dice", num_players=2)
        env.reset(seed=0)
        assert draw(env.game).shape == image.frame_size(2) + (3,)
    finally:
        image._font.cache_clear()


def test_png_round_trips_and_is_written_atomically(tmp_path):
    env = parallel_env(game="cards", num_players=3)
    env.reset(seed=5)
    path = save_png(tmp_path / "table.png", env.game, viewer=1)
    assert np.array_equal(np.asarray(Image.open(path).convert("RGB")), draw(env.game, viewer=1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.png"]
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        save_png(tmp_path / "bad.png", np.zeros((4, 4), dtype=np.uint8))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.png"]


@pytest.mark.parametrize("path, match", [
    ("{tmp}/missing/x", "path '.*missing/x' is in '.*missing', which is not an existing "),
    ("{tmp}/old", "path '.*old' is a directory"), ("", "path '' is no file name")])
@pytest.mark.parametrize("save", ["png", "gif"])
def test_a_path_that_cannot_be_written_is_named(tmp_path, save, path, match):
    """The error named the hidden temporary file (.x.a1b2c3.tmp); '' raised 'Device or
    resource busy'. Nothing is written, the older file is kept."""
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "x").write_bytes(b"older")
    env = parallel_env(game="dice", num_players=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        path = path.replace("{tmp}", str(tmp_path))
        if save == "png":
            save_png(path, env.game)
        else:
            save_gif(path, [draw(env.game)])
    assert [p.name for p in tmp_path.rglob("*")] == ["old", "x"]
    assert (tmp_path / "old" / "x").read_bytes() == b"older"


@pytest.mark.parametrize("save, name", [("png", "x.jpg"), ("png", "x.gif"),
                                         ("gif", "x.png"), ("gif", "x.mp4")])
def test_a_path_of_another_format_is_refused(tmp_path, save, name):
    """save_png("x.jpg") wrote PNG data under the .jpg name, which viewers that go by the
    name fail to open. The right suffix in any case, or none, is taken."""
    env = parallel_env(game="dice", num_players=2)
    env.reset(seed=0)
    write = {"png": lambda path: save_png(path, env.game),
             "gif": lambda path: save_gif(path, [draw(env.game)])}[save]
    with pytest.raises(ValueError, match=rf"path '.*{name}' ends in '\.{name[2:]}', but the "
                                         rf"file written is a {save.upper()}: name it with "
                                         rf"'\.{save}'"):
        write(tmp_path / name)
    assert not list(tmp_path.iterdir())
    for ok in (f"a.{save.upper()}", f"b.{save}", "c"):
        write(tmp_path / ok)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"a.{save.upper()}", f"b.{save}", "c"]


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_record_gif_writes_one_frame_per_step(tmp_path, game):
    frames = play_frames(game, 2, seed=4)
    count = record_gif(tmp_path / "game.gif", game=game, seed=4, fps=4)
    assert count == len(frames) > 10
    with Image.open(tmp_path / "game.gif") as gif:
        assert gif.n_frames <= count          # GIF merges identical consecutive frames
        assert gif.size == frames[0].shape[1::-1]
        gif.seek(gif.n_frames - 1)
        last = np.asarray(gif.convert("RGB"), dtype=float)
    # A GIF holds 256 colours: the last frame is the final position up to the palette.
    assert np.abs(last - frames[-1]).mean() < 1 < np.abs(last - frames[0]).mean()
    assert [p.name for p in tmp_path.iterdir()] == ["game.gif"]


def test_record_gif_plays_the_given_agents():
    calls = []

    class Passer:
        def act(self, observation, mask):
            calls.append(int(np.flatnonzero(mask)[-1]))
            return calls[-1]

    frames = play_frames("dice", 2, agents=[Passer(), Passer()], seed=0)
    assert calls and len(frames) > 1


def test_record_gif_takes_agent_specs_as_the_environments_do():
    from agents import load

    by_name = play_frames("dice", 2, agents=["pretrained:dice-2p", "expert"], seed=3)
    by_object = play_frames("dice", 2, agents=[load("pretrained:dice-2p"), load("expert")],
                            seed=3)
    assert len(by_name) == len(by_object) > 1
    assert all(np.array_equal(a, b) for a, b in zip(by_name, by_object))
    with pytest.raises(ValueError, match="game='cards'"):
        play_frames("dice", 2, agents=[load("expert", game="cards"), "expert"])


@pytest.mark.parametrize("kwargs, match", [
    ({"fps": 0}, "fps"), ({"fps": True}, "fps"), ({"fps": float("nan")}, "fps"),
    ({"fps": 51}, "fps must be a number from 0.005 to 50, got 51"),
    ({"fps": 0.004}, "fps must be a number from 0.005"),  # PIL's OverflowError, after the game
    ({"agents": [None]}, "one agent per seat"),
    ({"agents": "expert"}, r"agents must be a list of one agent per seat \(2\), got 'expert'"),
    ({"path": "{tmp}/no/x.gif"}, "path '.*no/x.gif' is in '.*no', which is not an existing"),
    ({"path": "{tmp}"}, "path '.*' is a directory"),
    ({"path": "{tmp}/x.png"}, "path '.*x.png' ends in '.png', but the file written is a GIF"),
])
def test_record_gif_refuses_bad_arguments(tmp_path, kwargs, match):
    """Before the game is played (a bad path or fps failed only when the GIF was saved)."""
    path = kwargs.pop("path", str(tmp_path / "x.gif")).replace("{tmp}", str(tmp_path))
    with pytest.raises(ValueError, match=match):
        record_gif(path, **kwargs)
    assert not list(tmp_path.iterdir())


def test_numpy_frame_rates_are_taken(tmp_path):
    frames = [np.zeros((4, 4, 3), np.uint8)] * 2
    for fps in (np.int64(2), np.float32(0.5), 0.005):
        save_gif(tmp_path / "x.gif", frames, fps=fps)


def test_save_gif_refuses_frames_of_different_sizes(tmp_path):
    with pytest.raises(ValueError, match="same size"):
        save_gif(tmp_path / "x.gif", [np.zeros((4, 4, 3), np.uint8),
                                      np.zeros((5, 4, 3), np.uint8)])


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_pettingzoo_render_test_passes_with_rgb_array(game):
    render_test(lambda render_mode=None: qwinto_env.env(game=game, render_mode=render_mode))
    env = qwinto_env.env(game=game, render_mode="rgb_array")
    env.reset(seed=0)
    assert env.render().shape == (*frame_size(2), 3)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_gymnasium_checker_passes_with_rgb_array(game):
    env = gymnasium.make("Qwinto-v0", game=game, render_mode="rgb_array",
                         illegal_action="pass")
    check_env(env.unwrapped, skip_render_check=False)
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (*frame_size(2), 3)
    assert env.metadata["render_fps"] > 0


def test_the_gymnasium_env_shows_the_learners_hand():
    env = gymnasium.make("Qwinto-v0", game="cards", render_mode="rgb_array", learner_seat=1)
    env.reset(seed=2)
    table = env.unwrapped.table.game
    assert np.array_equal(env.render(), draw(table, viewer=1))
