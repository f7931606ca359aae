"""examples/sb3.py: each algorithm trains a little on both games and is evaluated against
random, through the script's main() as `python examples/sb3.py ...` runs it."""

import runpy
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "sb3.py"
main = runpy.run_path(str(SCRIPT))["main"]


@pytest.mark.parametrize("game", ["dice", "cards"])
@pytest.mark.parametrize("algo", ["ppo", "a2c", "dqn", "maskable-ppo"])
def test_each_algorithm_trains_and_is_evaluated(capsys, algo, game):
    summary = main(["--algo", algo, "--game", game, "--total-timesteps", "200",
                    "--games", "4", "--seed", "3"])
    out = capsys.readouterr().out
    assert f"{algo} on the {game} game, 200 steps (seed 3), then 4 games against random" in out
    assert summary["games"] == 4 and summary["agents"][1]["agent"] == "random"
    if algo == "maskable-ppo":  # masks honoured: never an illegal choice
        assert summary["illegal_choices"] == 0
    assert "illegal choices replaced by the default action" in out


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--algo", "sac"])
    assert "invalid choice: 'sac'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--total-timesteps", "0"])
    assert "--total-timesteps and --games must be positive" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # numpy's seeding refused it after the env was made
        main(["--seed", str(2**32)])
    assert "--seed must be in 0..4294967295, got 4294967296" in capsys.readouterr().err
