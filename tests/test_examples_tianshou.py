"""examples/tianshou_dqn.py: Tianshou's multi-agent DQN trains a little against the
masked-random seat on both games (the env raises on an illegal action, so masks were
honoured; its replay buffer keeps the numeric infos) and is evaluated against random.
Skipped where tianshou is not installed."""

import runpy
from pathlib import Path

import pytest

from qwinto_env.spec import SPECS

pytest.importorskip("tianshou")

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "tianshou_dqn.py"
example = runpy.run_path(str(SCRIPT))
TINY = ["--epochs", "1", "--epoch-steps", "200", "--envs", "2", "--batch-size", "16",
        "--hidden", "16", "--games", "4", "--seed", "3"]


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_a_tiny_run_trains_and_is_evaluated(game, capsys):
    row = example["main"](["--game", game, *TINY])
    out = capsys.readouterr().out
    assert f"Tianshou DQN on the {game} game, 1 x 200 env steps (seed 3); 4 games" in out
    assert "tianshou-dqn" in out and "random" in out
    assert row["agent"] == "tianshou-dqn" and 0.0 <= row["win_rate"] <= 1.0


def test_the_wrapped_env_gives_tianshou_the_mask_and_the_numeric_infos():
    env = example["make_env"]("cards")
    obs, info = env.reset(seed=0)
    assert set(info) == set(SPECS["cards"].numeric_infos(2)) and obs["agent_id"] == "player_0"
    assert len(obs["mask"]) == 88 and any(obs["mask"])


def test_bad_numbers_are_argparse_errors(capsys):
    with pytest.raises(SystemExit):
        example["main"](["--epochs", "0"])
    assert "must be positive" in capsys.readouterr().err
