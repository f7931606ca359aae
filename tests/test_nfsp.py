"""The NFSP baseline (agents.benchmark.algorithms.nfsp): tiny self-play runs end to end."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspiel")

from agents.benchmark.algorithms import Progress, get_algorithm  # noqa: E402
from agents.benchmark.tasks import get_task  # noqa: E402
from agents.evaluate import play  # noqa: E402
from qwinto_env import parallel_env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: Small buffers and batches, and half the episodes best responses (the average policy's
#: only data), so that a run of a thousand steps trains both networks.
TINY = {"min_buffer_size_to_learn": 64, "batch_size": 32, "learn_every": 8,
        "hidden_layers_sizes": [32], "anticipatory_param": 0.5}


class Recorder(Progress):
    def on_point(self, steps_done, agent):
        self.agents = getattr(self, "agents", []) + [(steps_done, agent)]


def fixed_batch(task, size=64, seed=0):
    """Observations and masks of random play in the task's game."""
    env = parallel_env(task.game, task.num_players)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    rows = []
    while len(rows) < size:
        rows += [obs[a] for a in env.agents]
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, *_ = env.step(actions)
        if not env.agents:
            obs, _ = env.reset(seed=seed + len(rows))
    return (np.stack([r["observation"] for r in rows]), np.stack([r["action_mask"] for r in rows]))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    nfsp = get_algorithm("nfsp")
    saved = dict(nfsp.HYPERPARAMETERS)
    nfsp.HYPERPARAMETERS.update(TINY)
    try:
        out = {}
        for task_id, seed in (("dice-2p-v0", 0), ("dice-2p-v0", 0), ("cards-2p-v0", 1)):
            progress = Recorder([500])
            workdir = tmp_path_factory.mktemp("nfsp")
            agent = nfsp.train(get_task(task_id), seed, 1_500, workdir, progress)
            out.setdefault(task_id, []).append((agent, progress, workdir))
        return out
    finally:
        nfsp.HYPERPARAMETERS.clear()
        nfsp.HYPERPARAMETERS.update(saved)


def test_contract():
    nfsp = get_algorithm("nfsp")
    assert nfsp.FAMILY and nfsp.MASKS and nfsp.LIBRARY.startswith("OpenSpiel")


@pytest.mark.parametrize("task_id", ["dice-2p-v0", "cards-2p-v0"])
def test_trained_agent_plays_legal_moves(runs, task_id):
    agent, progress, workdir = runs[task_id][0]
    task = get_task(task_id)
    result = play([agent, "random"], game=task.game, num_players=2, games=20, seed=0,
                  progress=False)
    assert result.summary["games"] == 20  # play raises on an illegal action
    assert progress.steps >= 1_500 and progress.agents[0][0] >= 500
    assert (workdir / "nfsp_average_policy.pt").is_file()
    observations, masks = fixed_batch(task)
    actions = agent.act_batch(observations, masks)
    assert masks[np.arange(len(actions)), actions].all()


def test_same_seed_same_agent(runs):
    task = get_task("dice-2p-v0")
    (first, *_), (second, *_) = runs["dice-2p-v0"]
    observations, masks = fixed_batch(task, size=256)
    np.testing.assert_array_equal(first.act_batch(observations, masks),
                                  second.act_batch(observations, masks))
    for a, b in zip(first.scores.parameters(), second.scores.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_curve_agent_is_a_snapshot(runs):
    """The agent handed to a curve point does not change as training goes on."""
    agent, progress, _ = runs["dice-2p-v0"][0]
    (_, early), = progress.agents
    assert any(not np.array_equal(a.detach().numpy(), b.detach().numpy())
               for a, b in zip(early.scores.parameters(), agent.scores.parameters()))


def test_example_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openspiel_nfsp.py"), "--steps", "300",
         "--games", "4"], capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert "vs random: win rate" in out.stdout and "vs greedy" in out.stdout


@pytest.mark.parametrize("args", [["--steps", "0", "--games", "2"],
                                  ["--steps", "-5", "--games", "2"],
                                  ["--steps", "10", "--games", "0"]])
def test_example_refuses_a_budget_that_is_not_positive(capsys, args):
    """Before any training: --games 0 failed after it, --steps -5 trained nothing and
    reported -5 steps."""
    main = runpy.run_path(str(ROOT / "examples" / "openspiel_nfsp.py"))["main"]
    with pytest.raises(SystemExit):
        main(args)
    assert "--steps and --games must be positive" in capsys.readouterr().err
