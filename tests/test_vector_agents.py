"""The vector envs take opponents as ``Qwinto-v0`` does: names, checkpoint paths,
``pretrained:`` specs, agent objects, one spec reused for every other seat."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents import load
from agents.base import Agent
from qwinto_env.batched import get_backend
from qwinto_env.vector import AgentOpponent, QwintoVecEnv, RandomOpponent, TorchVectorEnv
from tests.syncs import SyncCounter


def masked_random(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    keys = np.where(masks, rng.random(masks.shape), -1.0)
    return keys.argmax(1)


def test_maskable_ppo_learns_against_greedy_given_by_name():
    """The README's SB3 env with the opponents ``gymnasium.make("Qwinto-v0", ...)`` takes:
    it refused ``["greedy"]`` (only batched callables)."""
    venv = QwintoVecEnv(16, num_players=2, opponents=["greedy"], seed=0)
    assert venv.num_envs == 16
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=256, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [32]}, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    obs = venv.reset()
    actions, _ = model.predict(obs, action_masks=venv.action_masks())
    assert venv.action_masks()[np.arange(16), actions].all()


def test_torch_env_steps_against_the_expert_by_name_in_every_other_seat():
    """One name builds one agent per other seat; the expert decides tensors."""
    env = TorchVectorEnv(8, num_players=3, opponents="expert", device="cpu", seed=0)
    (_, first), (_, second) = env._seats.opponents
    assert first.agent is not second.agent and first.agent.name == "expert"
    obs, masks = env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        keys = torch.rand(masks.shape, generator=gen).masked_fill(~masks, -1.0)
        obs, masks, rewards, dones, _ = env.step(keys.argmax(1))
    assert obs.shape == (8, 3 * 32 + 25) and rewards.dtype == torch.float32


class NumpyOnly(Agent):
    """A bot of one's own: ``act`` only, on numpy arrays (the base ``act_batch`` loops)."""

    name = "numpy-only"

    def act(self, observation, action_mask):
        assert isinstance(action_mask, np.ndarray), type(action_mask)
        return int(np.flatnonzero(action_mask)[-1])


def test_an_agent_that_takes_numpy_plays_on_the_torch_backend():
    """It is handed host copies (int8 masks) and its numpy answer goes back to the device;
    an agent with ``accepts_tensors`` decides the tensors themselves, without a sync."""
    env = TorchVectorEnv(4, num_players=2, game="cards", opponents=[NumpyOnly("cards")],
                         device="cpu", seed=1)
    obs, masks = env.reset()
    for _ in range(20):
        obs, masks, *_ = env.step(masks.int().argmax(1))
    greedy = AgentOpponent(load("greedy", game="cards"), get_backend("torch"))
    assert not greedy.on_host
    with SyncCounter() as syncs:
        greedy(obs, masks.to(torch.int8))
    assert not syncs.calls


def learner_trace(env, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and rewards of ``steps`` masked-random learner steps (one seed)."""
    rng = np.random.default_rng(0)
    obs, masks = env.reset(seed=7)
    seen, rewards = [obs.numpy()], []
    for _ in range(steps):
        obs, masks, reward, *_ = env.step(torch.as_tensor(masked_random(masks.numpy(), rng)))
        seen.append(obs.numpy())
        rewards.append(reward.numpy())
    return np.stack(seen), np.stack(rewards)


@pytest.mark.parametrize("opponents", [
    lambda: ["expert"], lambda: "pretrained:dice-2p", lambda: "random",
    lambda: load("pretrained:dice-2p", deterministic=False)], ids=[
    "expert", "pretrained", "random", "sampling-network"])
def test_a_seed_replays_the_games_against_loaded_agents(opponents):
    """Two envs, one seed, the same learner actions: the same games, also against agents
    that draw, whatever they drew before (the seeded reset reseeds them)."""
    first, twin = (TorchVectorEnv(8, num_players=2, opponents=opponents(), device="cpu")
                   for _ in range(2))
    ours = learner_trace(first, 200)
    learner_trace(twin, 30)
    theirs = learner_trace(twin, 200)
    assert np.array_equal(ours[0], theirs[0]) and np.array_equal(ours[1], theirs[1])
    assert ours[1].any()  # games ended within the trace


class ActOnly:
    """A bot for ``Qwinto-v0`` (one game at a time), no batched one."""

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


@pytest.mark.parametrize("front", [QwintoVecEnv, TorchVectorEnv])
@pytest.mark.parametrize("opponents, error", [
    ("nosuch", r"unknown agent spec 'nosuch'"),
    ("pretrained:cards-2p", r"'pretrained:cards-2p' is for the cards game .* not the dice"),
    (["greedy", "random"], r"opponents: expected one spec or 1 .* got 2"),
    (ActOnly(), r"opponent <.*ActOnly.*> has no act_batch\(observations, masks\)"),
])
def test_bad_opponent_specs_are_refused_naming_them(front, opponents, error):
    with pytest.raises(ValueError, match=error):
        front(2, num_players=2, opponents=opponents, seed=0)


def test_an_agent_object_for_another_table_is_refused():
    with pytest.raises(ValueError, match=r"has num_players=3, but the table plays "
                                         r"num_players=2"):
        QwintoVecEnv(2, num_players=2, opponents=load("random", num_players=3))


def test_one_item_is_reused_for_every_other_seat():
    """As ``make_opponents``: a one-item list was refused for three other seats; an object
    given for several seats stays one opponent (one generator to reseed)."""
    shared = RandomOpponent(seed=0)
    env = QwintoVecEnv(2, num_players=4, opponents=[shared], seed=0)
    assert [o for _, o in env._seats.opponents] == [shared] * 3
    greedy = load("greedy", num_players=4)
    first, *rest = (o for _, o in QwintoVecEnv(2, num_players=4, opponents=[greedy])
                    ._seats.opponents)
    assert first.agent is greedy and all(o is first for o in rest)
