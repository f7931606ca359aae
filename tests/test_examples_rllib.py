"""examples/rllib_ppo.py: stock RLlib PPO by self-play on the PettingZoo env, run as a user
runs it (a subprocess, a tiny budget), on both games."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray.rllib", reason="the rllib extra is not installed")

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, timeout: int = 600) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "rllib_ppo.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# two PPO iterations of 64 env steps: by --iterations (dice), by --timesteps (cards)
@pytest.mark.parametrize("game,stop", [("dice", ["--iterations", "2"]),
                                       ("cards", ["--iterations", "50", "--timesteps", "100"])])
def test_example_trains_and_evaluates(game, stop):
    out = _run("--game", game, *stop, "--batch-size", "64", "--eval-games", "8")
    steps = [int(s.replace(",", "")) for s in re.findall(r"iteration \d+: ([\d,]+) env steps", out)]
    assert len(steps) == 2 and steps[0] >= 64 and steps[1] > steps[0]
    # the evaluation table: the trained policy and random, over the 8 games asked
    assert re.search(r"^\| rllib-ppo \|", out, re.M) and re.search(r"^\| random \|", out, re.M)
    assert f"8 games ({game}, 2 players" in out


@pytest.mark.parametrize("argv,message", [
    (["--players", "9"], "--players: num_players must be an integer in 1..6"),
    (["--batch-size", "0"], "--batch-size and --eval-games must be positive"),
    (["--iterations", "1", "--batch-size", "32", "--eval-games", "0"], "must be positive"),
    (["--timesteps", "0"], "must be positive"),
    (["--seed", "-1"], "--seed must be in 0..4294967295, got -1"),
])
def test_bad_arguments_are_usage_errors_before_ray_starts(monkeypatch, capsys, argv, message):
    """--players 9 failed inside RLlib's env runner with an unrelated TypeError,
    --eval-games 0 after training, and --batch-size 0 trained on nothing."""
    import ray
    monkeypatch.setattr(sys, "argv", ["rllib_ppo.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(ROOT / "examples" / "rllib_ppo.py"))["main"]()
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not ray.is_initialized()


@pytest.mark.slow
def test_example_learns_to_beat_random_on_dice():
    """Two PPO iterations of 1,000 env steps (2,000 agent steps; RLlib's other defaults):
    the greedy policy wins most games against random. Minutes on a loaded 2-core machine:
    every iteration runs 30 epochs of minibatches of 128."""
    out = _run("--iterations", "2", "--batch-size", "1000", "--eval-games", "200",
               timeout=1800)
    win_rate = float(re.search(r"^\| rllib-ppo \| [^|]+ \| ([\d.]+)%", out, re.M).group(1))
    assert win_rate > 60
