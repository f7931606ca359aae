"""The MaskablePPO baseline (agents.benchmark.algorithms.maskable_ppo): tiny runs end to end
through the algorithm contract."""

import tempfile

import numpy as np
import pytest
import torch

from agents.benchmark.algorithms import Progress, get_algorithm
from agents.benchmark.tasks import get_task
from agents.evaluate import play, summarise

ROLLOUT = 2048  # 4 envs x 512 steps: the tiny runs train on one rollout


class Recording(Progress):
    """Remembers the agents handed over at the curve's points."""

    def __init__(self, points):
        super().__init__(points)
        self.agents = {}

    def on_point(self, steps_done, agent):
        self.agents[steps_done] = agent


def train(task_id, seed, workdir, steps=ROLLOUT, points=()):
    progress = Recording(points)
    workdir.mkdir(exist_ok=True)  # the contract hands over an existing fresh folder
    agent = get_algorithm("maskable-ppo").train(get_task(task_id), seed, steps, workdir,
                                                progress)
    return agent, progress


def observations(task_id, count=64):
    """A fixed batch of the task env's observations and masks, from random legal play."""
    env = get_task(task_id).make_env()
    obs, _ = env.reset(seed=123)
    rng = np.random.default_rng(0)
    rows, masks = [], []
    while len(rows) < count:
        rows.append(obs["observation"])
        masks.append(obs["action_mask"])
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if done:
            obs, _ = env.reset()
    return np.stack(rows), np.stack(masks)


@pytest.mark.parametrize("task_id", ["dice-2p-v0", "cards-2p-v0"])
def test_a_tiny_run_reports_progress_and_plays_legal_moves(tmp_path, monkeypatch, task_id):
    temp = tmp_path / "temp"  # the system temp folder, as the run sees it
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    agent, progress = train(task_id, 0, tmp_path / "cell", steps=ROLLOUT + 400, points=[1000])
    assert not list(temp.glob("SB3-*"))  # no log folder left behind per cell
    # stopped at the budget; the cut rollout was collected, not trained on
    assert progress.steps == ROLLOUT + 400
    assert list(progress.agents) == [1000] and progress.agents[1000] is not agent
    assert (tmp_path / "cell" / "maskable_ppo.zip").is_file()
    task = get_task(task_id)
    # play() raises EvaluationError on an illegal action
    res = summarise(play([agent, "random"], game=task.game, num_players=task.num_players,
                         games=20, seed=0, progress=False))
    assert res["games"] == 20
    obs, masks = observations(task_id)
    actions = agent.act_batch(obs, masks)
    assert masks[np.arange(len(actions)), actions].all()


def test_the_same_seed_gives_the_same_agent(tmp_path):
    obs, masks = observations("dice-2p-v0")
    first, _ = train("dice-2p-v0", 7, tmp_path / "a")
    again, _ = train("dice-2p-v0", 7, tmp_path / "b")
    other, _ = train("dice-2p-v0", 8, tmp_path / "c")
    batch = torch.as_tensor(obs)
    assert torch.equal(first.scores(batch), again.scores(batch))
    assert np.array_equal(first.act_batch(obs, masks), again.act_batch(obs, masks))
    assert not torch.equal(first.scores(batch), other.scores(batch))


def test_a_budget_that_is_not_a_positive_integer_is_refused(tmp_path):
    for steps in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="steps must be a positive integer"):
            train("dice-2p-v0", 0, tmp_path, steps=steps)
