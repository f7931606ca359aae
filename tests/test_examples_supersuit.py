"""examples/supersuit_sb3.py: MaskablePPO trains a little on SuperSuit's vector env of
both games (the env raises on an illegal action, so masks were honoured) and is
evaluated against random. Skipped where supersuit or sb3-contrib is not installed."""

import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("supersuit")
pytest.importorskip("sb3_contrib")

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "supersuit_sb3.py"
example = runpy.run_path(str(SCRIPT))


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_a_tiny_run_trains_on_every_seat_and_is_evaluated(game, capsys):
    row = example["main"](["--game", game, "--total-timesteps", "256", "--tables", "2",
                           "--n-steps", "32", "--games", "4", "--seed", "3"])
    out = capsys.readouterr().out
    assert f"the {game} game, 256 seat decisions (seed 3); 4 games against random" in out
    assert row["agent"] == "supersuit-maskable-ppo" and 0.0 <= row["win_rate"] <= 1.0


def test_the_masks_relayed_are_the_observations_and_seeded_tables_differ():
    venv = example["make_vec_env"]("cards", 2)
    venv.seed(5)
    obs = venv.reset()
    assert (venv.env_method("action_masks") == (obs["action_mask"] > 0)).all()
    assert venv.has_attr("action_masks")
    # table 1 was seeded 6, not dealt table 0's cards (seats 0,1 vs 2,3)
    assert not np.array_equal(obs["observation"][:2], obs["observation"][2:])
    obs, _, _, _ = venv.step(np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]]))
    assert (np.stack(venv.env_method("action_masks")) == (obs["action_mask"] > 0)).all()
    venv.close()


def test_bad_numbers_are_argparse_errors(capsys):
    with pytest.raises(SystemExit):
        example["main"](["--tables", "0"])
    assert "must be positive" in capsys.readouterr().err
