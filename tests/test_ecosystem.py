"""The paths users take from other libraries: Gymnasium's vector envs (``make_vec`` sync
and async, a CleanRL-style ``SyncVectorEnv``), PettingZoo's AEC wrappers and RLlib's
single-agent env runner, each playing masked-random episodes of both games; and the
one info structure on every step that the vector envs need.

Masked random: every action is drawn uniformly from the action mask. The default
``illegal_action="raise"`` stays on, so an illegal action would fail the test. The
1,000-episode versions are ``slow``; the default suite plays ~20 episodes each.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from pettingzoo.utils.wrappers import (AssertOutOfBoundsWrapper, OrderEnforcingWrapper,
                                       TerminateIllegalWrapper)

import qwinto_env

GAMES = ["dice", "cards"]
FAST, SLOW = 20, 1000  # episodes per test (and game)
NUM_ENVS = 4


def masked(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


EPISODES = [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="1000", marks=pytest.mark.slow)]


# -- one info structure ------------------------------------------------------------------------

def structure(value):
    """Keys, types and nested keys of an info (array shapes and dtypes; not values)."""
    if isinstance(value, dict):
        return {key: structure(v) for key, v in value.items()}
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape)
    return type(value).__name__


def parallel_infos(game, players, seed, forgive):
    """Every agent's infos on every step of a random game; with ``forgive`` some actions
    are illegal (replaced and flagged by ``illegal_action="pass"``)."""
    env = qwinto_env.parallel_env(game=game, num_players=players,
                                  illegal_action="pass" if forgive else "raise")
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    yield from infos.values()
    while env.agents:
        actions = {a: masked(rng, o["action_mask"]) for a, o in obs.items()}
        if forgive and rng.random() < 0.3:
            actions[env.agents[0]] = 99
        obs, _, _, _, infos = env.step(actions)
        yield from infos.values()


def aec_infos(game, players, seed, forgive):
    env = qwinto_env.env(game=game, num_players=players,
                         illegal_action="pass" if forgive else "raise")
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for _ in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        yield info
        action = None if term or trunc else masked(rng, obs["action_mask"])
        env.step(99 if action is not None and forgive and rng.random() < 0.3 else action)


def single_infos(game, players, seed, forgive):
    env = gymnasium.make("Qwinto-v0", game=game, num_players=players,
                         illegal_action="pass" if forgive else "raise")
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    yield info
    done = False
    while not done:
        action = 99 if forgive and rng.random() < 0.3 else masked(rng, obs["action_mask"])
        obs, _, done, _, info = env.step(action)
        yield info


@settings(max_examples=25, deadline=None)
@given(front_end=st.sampled_from([parallel_infos, aec_infos, single_infos]),
       game=st.sampled_from(GAMES), players=st.integers(1, 4), seed=st.integers(0, 2**32 - 1),
       forgive=st.booleans())
def test_infos_keep_one_structure_on_every_step(front_end, game, players, seed, forgive):
    infos = list(front_end(game, players, seed, forgive))
    first = structure(infos[0])
    assert isinstance(first["roll"], dict) and first["illegal_action"] == "bool"
    for info in infos:
        assert structure(info) == first
    assert forgive or not any(info["illegal_action"] for info in infos)


# -- Gymnasium's vector envs ---------------------------------------------------------------

def vector_episodes(venv, seed: int, per_env: int) -> list[list[tuple[float, int]]]:
    """Masked-random episodes in a vector env (next-step autoreset): per sub-env, the
    (return, length) of its first ``per_env`` episodes. Env ``i`` draws its actions
    from its own generator, so its episodes do not depend on the other envs."""
    n = venv.num_envs
    rngs = [np.random.default_rng([seed, i]) for i in range(n)]
    obs, _ = venv.reset(seed=seed)
    episodes: list[list[tuple[float, int]]] = [[] for _ in range(n)]
    ret, length = np.zeros(n), np.zeros(n, dtype=int)
    starting = np.zeros(n, dtype=bool)  # this step resets the sub-env (action ignored)
    while min(map(len, episodes)) < per_env:
        actions = np.array([0 if starting[i] else masked(rngs[i], obs["action_mask"][i])
                            for i in range(n)])
        obs, rewards, terms, truncs, infos = venv.step(actions)
        for i in np.flatnonzero(~starting):
            ret[i] += rewards[i]
            length[i] += 1
            if terms[i] or truncs[i]:
                assert terms[i] and not truncs[i]
                assert ret[i] == infos["score"][i]  # "score": the return is the final score
                if "episode" in infos:  # RecordEpisodeStatistics agrees
                    assert infos["_episode"][i] and infos["episode"]["r"][i] == ret[i]
                    assert infos["episode"]["l"][i] == length[i]
                episodes[i].append((float(ret[i]), int(length[i])))
                ret[i], length[i] = 0.0, 0
        starting = terms | truncs
    return [e[:per_env] for e in episodes]


def reference_episodes(game: str, seed: int, per_env: int) -> list[list[tuple[float, int]]]:
    """What :func:`vector_episodes` must give: each sub-env played alone, seeded
    ``seed + i`` as Gymnasium's vector envs seed them, reset without a seed after."""
    out = []
    for i in range(NUM_ENVS):
        env = gymnasium.make("Qwinto-v0", game=game, reward="score")
        rng = np.random.default_rng([seed, i])
        obs, _ = env.reset(seed=seed + i)
        episodes = []
        while len(episodes) < per_env:
            ret, length, done = 0.0, 0, False
            while not done:
                obs, reward, done, _, _ = env.step(masked(rng, obs["action_mask"]))
                ret, length = ret + reward, length + 1
            episodes.append((ret, length))
            obs, _ = env.reset()
        out.append(episodes)
    return out


def check_against_reference(venv, game: str, episodes: int, seed: int = 7) -> None:
    per_env = -(-episodes // NUM_ENVS)
    try:
        played = vector_episodes(venv, seed, per_env)
    except BaseException:
        # after a failed step async workers may still owe a reply, and a plain close()
        # would wait for it forever: terminate them
        venv.close(terminate=True)
        raise
    venv.close()
    assert played == reference_episodes(game, seed, per_env)
    lengths = [length for env_episodes in played for _, length in env_episodes]
    assert len(lengths) >= episodes and min(lengths) >= 1


@pytest.mark.parametrize("episodes", EPISODES)
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("game", GAMES)
def test_make_vec(game, mode, episodes):
    venv = gymnasium.make_vec("Qwinto-v0", num_envs=NUM_ENVS, vectorization_mode=mode,
                              game=game, reward="score")
    check_against_reference(venv, game, episodes)



def test_make_vec_autoreset_modes():
    """Gymnasium 1.x's three autoreset modes through ``make_vec(vector_kwargs=...)``:
    SAME_STEP hands the final observation and infos of the single env's last step, and
    DISABLED plays on after ``reset(options={"reset_mask": ...})`` (docs/single.md)."""
    from gymnasium.vector import AutoresetMode

    def last_legal(masks):
        return np.array([np.flatnonzero(m)[-1] for m in masks])

    single = gymnasium.make("Qwinto-v0")
    obs, _ = single.reset(seed=4)
    venv = gymnasium.make_vec("Qwinto-v0", num_envs=1,
                              vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    vobs, _ = venv.reset(seed=4)
    terminated = False
    while not terminated:
        action = last_legal([obs["action_mask"]])
        obs, reward, terminated, _, info = single.step(int(action[0]))
        vobs, vreward, vterminated, _, vinfo = venv.step(action)
        assert vterminated[0] == terminated and vreward[0] == reward
    assert np.array_equal(vinfo["final_obs"][0]["observation"], obs["observation"])
    assert vinfo["final_info"]["scores"][0] == info["scores"]
    assert vobs["action_mask"][0].sum() > 1  # already the next game's first decision
    venv = gymnasium.make_vec("Qwinto-v0", num_envs=2,
                              vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED})
    vobs, _ = venv.reset(seed=0)
    ended = 0
    while ended < 4:
        vobs, _, vterminated, vtruncated, _ = venv.step(last_legal(vobs["action_mask"]))
        if (vterminated | vtruncated).any():
            ended += int((vterminated | vtruncated).sum())
            vobs, _ = venv.reset(options={"reset_mask": vterminated | vtruncated})
    venv.close()

ASYNC_WITH_NETWORKS = """
import numpy as np, torch, gymnasium, qwinto_env
torch.ones(2 ** 22).add_(1)  # this process has run a parallel op before it forks
for spec in ("pretrained:dice-2p", "search[samples=2]:pretrained:dice-2p"):
    venv = gymnasium.make_vec("Qwinto-v0", num_envs=2, vectorization_mode="async",
                              opponents=spec)
    obs, _ = venv.reset(seed=0)
    for _ in range(30):
        obs, *_ = venv.step(np.array([np.flatnonzero(m)[-1] for m in obs["action_mask"]]))
    venv.close()
print("played")
"""


def test_async_make_vec_with_network_opponents():
    """Gymnasium forks its async workers after it built one env here: a network opponent's
    torch threads must not hang the children (they did, for good, in load_state_dict).
    A fresh interpreter, so a hang fails the test instead of stopping the suite."""
    done = subprocess.run([sys.executable, "-c", ASYNC_WITH_NETWORKS], capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0 and done.stdout == "played\n", done.stderr


@pytest.mark.parametrize("spec", ["random", "greedy", "expert", "pretrained:dice-2p",
                                  "lookahead:pretrained:dice-2p",
                                  "search[samples=2]:pretrained:dice-2p"])
def test_agents_pickle_and_play_the_same(spec):
    """Process-based vector envs (SubprocVecEnv, async make_vec) and Ray send the opponents
    they are given to their workers by pickle."""
    from agents import load

    agent = load(spec, game="dice", num_players=2)
    twin = pickle.loads(pickle.dumps(agent))
    for bot in (agent, twin):
        bot.reset(seed=3)
    env = qwinto_env.parallel_env(game="dice", num_players=2)
    obs, _ = env.reset(seed=3)
    while env.agents:
        first = {a: agent.act(o["observation"], o["action_mask"]) for a, o in obs.items()}
        assert {a: twin.act(o["observation"], o["action_mask"]) for a, o in obs.items()} == first
        obs, *_ = env.step(first)


def test_subproc_vec_env_with_an_expert_object():
    """docs/single.md: an agent object as the opponent, in SB3's SubprocVecEnv."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from agents import load

    venv = make_vec_env("qwinto_env:Qwinto-v0", n_envs=2, vec_env_cls=SubprocVecEnv,
                        env_kwargs={"opponents": load("expert", game="dice", num_players=2)})
    try:
        obs = venv.reset()
        assert obs["action_mask"].shape == (2, 37)
    finally:
        venv.close()


@pytest.mark.parametrize("episodes", EPISODES)
@pytest.mark.parametrize("game", GAMES)
def test_cleanrl_style_sync_vector_env(game, episodes):
    def make_env():  # CleanRL's thunk: make, then record the episode statistics
        env = gymnasium.make("Qwinto-v0", game=game, reward="score")
        return gymnasium.wrappers.RecordEpisodeStatistics(env)

    check_against_reference(gymnasium.vector.SyncVectorEnv([make_env] * NUM_ENVS), game,
                            episodes)


# -- PettingZoo's AEC wrappers ------------------------------------------------------------------

AEC_STACKS = {
    "bare": lambda env: env,
    "terminate_illegal": lambda env: TerminateIllegalWrapper(env, illegal_reward=-1),
    "assert_out_of_bounds": AssertOutOfBoundsWrapper,
    # the stack PettingZoo's classic games build around their raw env
    "classic": lambda env: OrderEnforcingWrapper(AssertOutOfBoundsWrapper(
        TerminateIllegalWrapper(env, illegal_reward=-1))),
}


def aec_episodes(env, seed: int, episodes: int) -> list[tuple[tuple[float, ...], int]]:
    """Masked-random AEC games: per game, every agent's summed rewards and the number of
    live steps. Rewards are ``"score"``: each agent's sum must be its final score."""
    rng = np.random.default_rng(seed)
    out = []
    for game_index in range(episodes):
        env.reset(seed=seed + game_index)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        steps = 0
        for agent in env.agent_iter():
            obs, reward, term, trunc, _ = env.last()
            totals[agent] += reward
            action = None if term or trunc else masked(rng, obs["action_mask"])
            steps += action is not None
            env.step(action)
        assert not env.agents and env.unwrapped.game.done
        assert list(totals.values()) == [float(s) for s in env.unwrapped.game.scores()]
        out.append((tuple(totals.values()), steps))
    return out


@pytest.mark.parametrize("episodes", EPISODES)
@pytest.mark.parametrize("stack", [s for s in AEC_STACKS if s != "bare"])
@pytest.mark.parametrize("game,players", [("dice", 3), ("cards", 2)])
def test_aec_wrappers(game, players, stack, episodes):
    def make():
        return AEC_STACKS[stack](qwinto_env.env(game=game, num_players=players,
                                                reward="score"))
    played = aec_episodes(make(), seed=3, episodes=episodes)
    assert played == aec_episodes(qwinto_env.env(game=game, num_players=players,
                                                 reward="score"), seed=3, episodes=episodes)
    assert len(played) == episodes and all(steps > 0 for _, steps in played)


# -- RLlib's single-agent env runner -------------------------------------------------------------

def rllib_runner(game: str):
    """A SingleAgentEnvRunner (new API stack, local, no Ray cluster) on a flattened
    ``Qwinto-v0`` whose module plays masked random: equal logits on the legal actions,
    read from the mask's place in the flat observation."""
    pytest.importorskip("ray.rllib", reason="the rllib extra is not installed")
    import torch
    from gymnasium.wrappers import FlattenObservation
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.core.rl_module.torch import TorchRLModule
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    class MaskedRandomModule(TorchRLModule):
        def setup(self):
            self.mask_start, self.mask_stop = self.model_config["mask"]

        def _forward(self, batch, **kwargs):
            mask = batch[Columns.OBS][:, self.mask_start:self.mask_stop]
            return {Columns.ACTION_DIST_INPUTS: torch.where(mask > 0, 0.0, FLOAT_MIN)}

    def make_flat(env_config):
        return FlattenObservation(gymnasium.make("Qwinto-v0", **dict(env_config)))

    space = make_flat({"game": game}).env.observation_space
    flat_mask = gymnasium.spaces.flatten(space, {
        "observation": np.zeros(space["observation"].shape, np.float32),
        "action_mask": np.ones(space["action_mask"].shape, np.int8)})
    where = np.flatnonzero(flat_mask)
    mask = (int(where[0]), int(where[-1]) + 1)
    assert mask[1] - mask[0] == space["action_mask"].shape[0] == len(where)
    config = (PPOConfig()
              .environment(env=make_flat, env_config={"game": game, "reward": "score"})
              .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
              .rl_module(rl_module_spec=RLModuleSpec(module_class=MaskedRandomModule,
                                                     model_config={"mask": mask}))
              .debugging(seed=0))
    return SingleAgentEnvRunner(config=config), slice(*mask)


@pytest.mark.parametrize("episodes", [pytest.param(10, id="fast"),
                                      pytest.param(SLOW, id="1000", marks=pytest.mark.slow)])
@pytest.mark.parametrize("game", GAMES)
def test_rllib_single_agent_env_runner(game, episodes):
    runner, mask = rllib_runner(game)
    try:
        played = runner.sample(num_episodes=episodes, random_actions=False)
    finally:
        runner.stop()
    assert len(played) >= episodes
    for episode in played:
        obs, actions = np.asarray(episode.get_observations()), np.asarray(episode.get_actions())
        assert episode.is_terminated and not episode.is_truncated
        assert len(obs) == len(actions) + 1 and len(actions) > 0
        assert obs[np.arange(len(actions)), mask.start + actions].all()  # legal actions only
        assert episode.get_return() == episode.get_infos()[-1]["score"]  # the final score
