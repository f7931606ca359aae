"""examples/cleanrl_ppo.py runs end to end, tiny, on both games, and its masked actor
plays legal moves in the evaluator (which raises on an illegal one)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cleanrl_ppo.py"
TINY = ["--total-timesteps", "128", "--num-envs", "2", "--num-steps", "32",
        "--num-minibatches", "2", "--update-epochs", "2", "--hidden", "16",
        "--eval-games", "10"]


def load_example():
    spec = importlib.util.spec_from_file_location("cleanrl_ppo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_a_tiny_run_trains_and_evaluates_against_the_opponent(game, capsys):
    result = load_example().main(["--game", game, "--seed", "3", *TINY])
    out = capsys.readouterr().out
    assert "global_step=" in out and "episodic_return=" in out
    assert "10 games against random: win rate" in out
    assert result["agent"] == "cleanrl-ppo" and 0.0 <= result["win_rate"] <= 1.0
    assert result["steps_per_second"] > 0


def test_same_step_autoreset_returns_the_next_episodes_first_decision_with_the_done():
    example = load_example()
    envs = example.make_envs(example.parse_args(["--num-envs", "2"]))
    assert envs.metadata["autoreset_mode"].name == "SAME_STEP"
    obs, _ = envs.reset(seed=0)
    episodes = 0
    for _ in range(200):
        obs, _, terminated, _, infos = envs.step(obs["action_mask"].argmax(1))
        assert (obs["action_mask"].sum(1) >= 1).all()
        for i in range(2):
            if terminated[i]:  # the last observation is set aside, a fresh one returned
                assert infos["_final_obs"][i]
                assert not (infos["final_obs"][i]["observation"] == obs["observation"][i]).all()
                episodes += 1
    envs.close()
    assert episodes >= 2


@pytest.mark.parametrize("players", [1, 3])
def test_its_envs_seat_one_opponent_per_other_seat(players):
    example = load_example()
    envs = example.make_envs(example.parse_args(["--num-envs", "1", "--num-players",
                                                 str(players), "--opponent", "greedy"]))
    assert [o.name for o in envs.envs[0].unwrapped.opponents] == ["greedy"] * (players - 1)
    envs.close()


def test_a_bad_game_is_an_argparse_error_naming_it(capsys):
    with pytest.raises(SystemExit) as exit_info:
        load_example().parse_args(["--game", "chess"])
    assert exit_info.value.code == 2 and "--game" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--num-envs", "0"], "--num-envs must be positive"),  # was a ZeroDivisionError
    (["--num-minibatches", "0", "--hidden", "0"], "--num-minibatches, --hidden must be positive"),
    (["--num-envs", "2", "--num-steps", "4", "--num-minibatches", "9"],  # was a range() error
     r"--num-minibatches \(9\) must not exceed the batch, --num-envs x --num-steps = 8"),
    (["--seed", "-1"], r"--seed must be in 0\.\.4294967295, got -1"),  # was numpy's error
])
def test_bad_numbers_are_argparse_errors_naming_them(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load_example().main(argv)
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)
