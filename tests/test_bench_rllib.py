"""The rllib-ppo benchmark baseline: tiny stock-RLlib PPO runs end to end (ray started
and shut down by ``train``), legal play, seeding, and ray shut down after an error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("ray.rllib", reason="the rllib extra is not installed")

import ray  # noqa: E402

from agents.benchmark.algorithms import Progress, get_algorithm  # noqa: E402
from agents.benchmark.tasks import get_task  # noqa: E402
from agents.evaluate import play, summarise  # noqa: E402

#: a tiny budget: one PPO iteration of 64 steps (batch = min(4000, steps))
STEPS = 64


class Curve(Progress):
    """Remembers every step count reported and the agents of the curve's points."""

    def __init__(self, points):
        super().__init__(points)
        self.reported, self.agents = [], []

    def update(self, steps_done, make_agent):
        self.reported.append(steps_done)
        super().update(steps_done, make_agent)

    def on_point(self, steps_done, agent):
        self.agents.append(agent)


def _observations(task, seed: int, n: int = 64):
    """Learner observations and masks along random games of ``task``'s training env."""
    env, rng = task.make_env(), np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out, masks = [], []
    while len(out) < n:
        out.append(obs["observation"])
        masks.append(obs["action_mask"])
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if term or trunc:
            obs, _ = env.reset()
    return np.array(out), np.array(masks)


def _play_env(agent, task, seed: int, games: int = 2) -> None:
    """Whole games of the training env with ``agent``: the env raises on an illegal action."""
    env = task.make_env()
    for g in range(games):
        obs, _ = env.reset(seed=seed + g)
        done = False
        while not done:
            obs, _, term, trunc, _ = env.step(agent.act(obs["observation"], obs["action_mask"]))
            done = term or trunc


@pytest.mark.parametrize("task_id", ["dice-2p-v0", "cards-2p-v0"])
def test_tiny_run_plays_legal_moves(task_id, tmp_path):
    assert not ray.is_initialized()
    algorithm, task = get_algorithm("rllib-ppo"), get_task(task_id)
    progress = Curve([STEPS // 2])
    agent = algorithm.train(task, seed=0, steps=STEPS, workdir=tmp_path, progress=progress)
    assert not ray.is_initialized(), "train started ray and must shut it down"
    assert progress.reported and progress.reported[-1] >= STEPS
    assert len(progress.agents) == 1  # the curve point's agent was built
    observations, masks = _observations(task, seed=1)
    actions = agent.act_batch(observations, masks)
    assert masks[np.arange(len(actions)), actions].all()
    _play_env(agent, task, seed=2)
    summary = summarise(play([agent, "random"], game=task.game, num_players=task.num_players,
                             games=10, seed=0, progress=False))
    assert [a["agent"] for a in summary["agents"]] == ["rllib-ppo", "random"]


def test_same_seed_same_agent_and_callers_ray_left_running(tmp_path):
    """On one thread, sampling in the driver (``num_env_runners=0``): bit-identical."""
    task = get_task("dice-2p-v0")
    algorithm = get_algorithm("rllib-ppo")
    observations = torch.as_tensor(_observations(task, seed=3)[0])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        logits = [algorithm.train(task, seed, STEPS, tmp_path / str(i), Progress())
                  .scores(observations) for i, seed in enumerate((5, 5, 6))]
        assert ray.is_initialized(), "train must leave the caller's ray instance running"
    finally:
        ray.shutdown()
    assert torch.equal(logits[0], logits[1])
    assert not torch.equal(logits[0], logits[2])


def test_ray_is_shut_down_after_an_error(tmp_path, monkeypatch):
    algorithm = get_algorithm("rllib-ppo")

    def broken(*args):
        assert ray.is_initialized()
        raise RuntimeError("config failed")

    monkeypatch.setattr(algorithm, "ppo_config", broken)
    with pytest.raises(RuntimeError, match="config failed"):
        algorithm.train(get_task("dice-2p-v0"), 0, STEPS, tmp_path, Progress())
    assert not ray.is_initialized()


def test_refuses_a_budget_below_one_step(tmp_path):
    with pytest.raises(ValueError, match="steps must be at least 1"):
        get_algorithm("rllib-ppo").train(get_task("dice-2p-v0"), 0, 0, tmp_path, Progress())
