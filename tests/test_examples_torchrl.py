"""examples/torchrl_ppo.py: TorchRL's multi-agent PPO trains a little on the ParallelEnv
of both games (the env raises on an illegal action, so the MaskedCategorical honoured
the masks; the wrapper takes the numeric infos) and is evaluated against random;
Qwinto-v0 steps through GymWrapper with the ActionMask transform. Skipped where torchrl
is not installed."""

import runpy
from pathlib import Path

import pytest

pytest.importorskip("torchrl")

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "torchrl_ppo.py"
example = runpy.run_path(str(SCRIPT))
TINY = ["--frames", "200", "--frames-per-batch", "100", "--minibatch", "50", "--epochs", "1",
        "--hidden", "16", "--games", "4", "--seed", "3"]


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_a_tiny_run_trains_both_seats_and_is_evaluated(game, capsys):
    row = example["main"](["--game", game, *TINY])
    out = capsys.readouterr().out
    assert f"on the {game} game, 200 table steps (seed 3); 4 games against random" in out
    assert row["agent"] == "torchrl-ppo" and 0.0 <= row["win_rate"] <= 1.0


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_random_rollouts_honour_the_masks_in_both_wrappers(game):
    from torchrl.envs.utils import check_env_specs

    for env in (example["make_env"](game, 0), example["make_single_env"](game)):
        check_env_specs(env)
        steps = env.rollout(300, break_when_any_done=False)  # across episode ends
        assert steps["next", "done"].any()


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_the_table_hands_its_numeric_infos_to_torchrl(game):
    steps = example["make_env"](game, 0).rollout(5)
    assert steps["next", "player", "info", "score"].shape == (5, 2)
    assert steps["next", "player", "info", "sheet"].shape == (5, 2, 3, 9)


def test_bad_numbers_are_argparse_errors(capsys):
    with pytest.raises(SystemExit):
        example["main"](["--frames", "0", "--hidden", "0"])
    assert "--frames, --hidden must be positive" in capsys.readouterr().err
