"""The SB3 VecEnv and the torch-native vector env over the batched dice engine."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

from qwinto_env.batched import BatchedDiceGame
from qwinto_env.game import IllegalActionError
from qwinto_env.vector import QwintoVecEnv, RandomOpponent, TorchVectorEnv



def random_masked(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def test_self_play_entries_are_game_seat_pairs():
    venv = QwintoVecEnv(8, num_players=3, seed=4)
    assert venv.num_envs == 24
    obs = venv.reset()
    ref = BatchedDiceGame(8, 3, seed=4)
    assert obs.shape == (24, 3 * 32 + 25) and obs.dtype == np.float32
    assert np.array_equal(obs, ref.observations().reshape(24, -1))
    assert np.array_equal(venv.action_masks(), ref.action_masks().reshape(24, -1).astype(bool))
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(300):
        actions = random_masked(venv.action_masks(), rng)
        obs, rewards, dones, infos = venv.step(actions)
        ref_out = ref.step(actions.reshape(8, 3))
        assert np.array_equal(obs, ref.observations().reshape(24, -1))
        assert np.array_equal(rewards, ref_out.rewards.reshape(-1))
        assert rewards.dtype == np.float32 and dones.dtype == bool
        for i in np.flatnonzero(dones):
            info = infos[i]
            assert info["terminal_observation"].shape == (121,)
            assert info["episode"]["l"] % 3 == 0
            assert info["episode"]["r"] == rewards[i]  # "win": the return is the final reward
            episodes += 1
        assert all(not infos[i] for i in np.flatnonzero(~dones))
        # A game ends for all its seats at once.
        assert np.all(dones.reshape(8, 3).all(1) == dones.reshape(8, 3).any(1))
    assert episodes > 0


def test_masks_reach_maskable_ppo_the_way_sb3_contrib_reads_them():
    venv = QwintoVecEnv(4, num_players=2, seed=0)
    venv.reset()
    assert is_masking_supported(venv)
    masks = get_action_masks(venv)
    assert masks.shape == (8, 37) and np.array_equal(masks, venv.action_masks())
    assert venv.env_method("action_masks", indices=[3])[0].tolist() == masks[3].tolist()
    with pytest.raises(AttributeError):
        venv.env_method("render")
    assert venv.env_is_wrapped(object) == [False] * 8


def test_learner_seat_against_opponents():
    calls = []

    def passer(obs, masks):
        calls.append(obs.shape)
        assert obs.shape == (16, 89) and masks.shape == (16, 37)
        # pass where legal, else the last legal action (the env's default action)
        return np.where(masks[:, 27] == 1, 27, 36 - np.argmax(masks[:, ::-1], axis=1))

    venv = QwintoVecEnv(16, num_players=2, opponents=passer, learner_seat=1, seed=2,
                        reward="margin")
    assert venv.num_envs == 16
    obs = venv.reset()
    ref = BatchedDiceGame(16, 2, seed=2)
    assert np.array_equal(obs, ref.observations()[:, 1])
    rng = np.random.default_rng(1)
    finals = []
    for _ in range(400):
        obs, rewards, dones, infos = venv.step(random_masked(venv.action_masks(), rng))
        finals += [infos[i]["final_score"] for i in np.flatnonzero(dones)]
    assert calls and finals


def test_random_opponents_and_bad_config():
    venv = QwintoVecEnv(8, num_players=3, opponents=[RandomOpponent(seed=0)] * 2, seed=0)
    venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        venv.step(random_masked(venv.action_masks(), rng))
    with pytest.raises(ValueError, match=r"opponents: expected one spec or 2 .* got 3"):
        QwintoVecEnv(8, num_players=3, opponents=[RandomOpponent()] * 3)
    with pytest.raises(ValueError, match="learner_seat"):
        QwintoVecEnv(8, num_players=3, opponents=RandomOpponent(), learner_seat=3)
    with pytest.raises(ValueError, match=r"opponents\[0\] draws numpy arrays on cpu, the env "
                                         r"steps torch on cpu: build it with backend='torch'"):
        TorchVectorEnv(4, opponents=RandomOpponent(seed=0), learner_seat=0)  # the README's
    with pytest.raises(ValueError, match=r"opponents\[1\] draws torch arrays"):
        QwintoVecEnv(8, num_players=3, opponents=[RandomOpponent(),
                                                  RandomOpponent(backend="torch")])
    venv.reset()
    bad = np.full(8, 35)  # keep is not legal in the choose phase
    with pytest.raises(IllegalActionError):
        venv.step(bad)


def test_maskable_ppo_trains_on_the_vec_env():
    venv = QwintoVecEnv(32, num_players=2, seed=0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=1024, n_epochs=2, seed=0,
                        policy_kwargs={"net_arch": [64, 64]}, device="cpu")
    model.learn(total_timesteps=8192)
    assert model.num_timesteps >= 8192
    assert len(model.ep_info_buffer) > 0  # episode stats came through infos["episode"]
    # The trained policy only picks legal actions when given the masks.
    obs = venv.reset()
    actions, _ = model.predict(obs, action_masks=venv.action_masks())
    assert venv.action_masks()[np.arange(64), actions].all()


def test_torch_vector_env_self_play():
    env = TorchVectorEnv(64, num_players=2, device="cpu", seed=0, final_observations=True)
    obs, masks = env.reset()
    assert obs.shape == (128, 89) and obs.dtype == torch.float32 and masks.dtype == torch.bool
    gen = torch.Generator().manual_seed(0)
    ended = 0
    for _ in range(200):
        logits = torch.zeros(masks.shape).masked_fill(~masks, float("-inf"))
        probs = torch.softmax(logits, -1)
        actions = torch.multinomial(probs, 1, generator=gen).squeeze(1)
        obs, masks, rewards, dones, info = env.step(actions)
        assert rewards.shape == (128,) and dones.dtype == torch.bool
        ended += int(info.done_index.shape[0])
        if dones.any():
            # "win" rewards of a finished 2-player game sum to 0 (+1/-1, or a 0/0 draw).
            games = info.done_index
            assert torch.all(info.final_returns.sum(1) == 0)
            assert info.final_observation.shape == (len(games), 2, 89)
    assert ended > 0


@pytest.mark.parametrize("game, opponents", [("dice", None), ("cards", "random")])
def test_torch_vector_env_names_its_spaces_as_a_cleanrl_script_reads_them(game, opponents):
    """It had no single_observation_space / single_action_space and no close(), which a
    CleanRL-style script sizes its network and buffers from and ends with."""
    envs = TorchVectorEnv(8, num_players=3, game=game, seed=0,
                          opponents=opponents and RandomOpponent("torch", seed=0))
    assert isinstance(envs.single_action_space, gym.spaces.Discrete)
    obs_size = int(np.array(envs.single_observation_space.shape).prod())
    agent = torch.nn.Linear(obs_size, int(envs.single_action_space.n))
    steps = 40
    obs_buf = torch.zeros((steps, envs.num_envs) + envs.single_observation_space.shape)
    act_buf = torch.zeros((steps, envs.num_envs) + envs.single_action_space.shape)
    next_obs, masks = envs.reset(seed=0)
    for step in range(steps):
        assert envs.observation_space.contains(next_obs.numpy())
        obs_buf[step] = next_obs
        with torch.no_grad():
            logits = agent(next_obs).masked_fill(~masks, float("-inf"))
        action = torch.distributions.Categorical(logits=logits).sample()
        assert envs.action_space.contains(action.numpy())
        act_buf[step] = action
        next_obs, masks, rewards, dones, _ = envs.step(action)
    assert envs.observation_space.shape == (envs.num_envs, obs_size)
    envs.close()
    envs.close()


def test_torch_vector_env_with_opponent():
    env = TorchVectorEnv(32, num_players=4, opponents=RandomOpponent("torch", seed=1),
                         learner_seat=2, seed=1, reward="score")
    obs, masks = env.reset()
    assert obs.shape == (32, 4 * 32 + 25)
    opp = RandomOpponent("torch", seed=2)
    total = torch.zeros(32)
    for _ in range(150):
        obs, masks, rewards, dones, info = env.step(opp(obs, masks))
        total += rewards
    assert torch.isfinite(total).all()


def test_card_game_vec_envs():
    venv = QwintoVecEnv(8, num_players=3, game="cards", seed=0, empty_pile="end")
    obs = venv.reset()
    assert obs.shape == (24, 3 * 33 + 149) and venv.action_masks().shape == (24, 88)
    assert venv.action_space.n == 88
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(200):
        obs, rewards, dones, infos = venv.step(random_masked(venv.action_masks(), rng))
        ended += int(dones.sum())
        for i in np.flatnonzero(dones):  # a card turn is two steps: play, entry
            assert infos[i]["episode"]["l"] % 2 == 0 and infos[i]["episode"]["l"] > 0
    assert ended > 0
    env = TorchVectorEnv(16, num_players=2, game="cards", opponents=RandomOpponent("torch"),
                         seed=0)
    obs, masks = env.reset()
    assert obs.shape == (16, 2 * 33 + 149) and masks.shape == (16, 88)
    opp = RandomOpponent("torch", seed=3)
    for _ in range(100):
        obs, masks, rewards, dones, info = env.step(opp(obs, masks))
    with pytest.raises(ValueError, match="unknown game"):
        QwintoVecEnv(2, game="chess")


def test_maskable_ppo_trains_on_the_card_game():
    venv = QwintoVecEnv(16, num_players=2, game="cards", seed=0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=1024, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [64]}, device="cpu")
    model.learn(total_timesteps=4096)
    assert model.num_timesteps >= 4096


def test_sb3_set_options_reach_the_next_reset_only():
    """SB3's ``set_options`` then ``reset()``: the engine's reset options for that reset
    (they were dropped); an option it does not take or per-entry dicts are refused."""
    venv = QwintoVecEnv(3, num_players=2, seed=0)
    venv.set_options({"start_player": 1})
    first = venv.reset()
    assert venv.engine.active.tolist() == [1, 1, 1]
    assert np.array_equal(first, BatchedDiceGame(3, 2, seed=0, start_player=1)
                          .observations().reshape(6, -1))
    venv.reset()
    assert venv.engine.active.tolist() == [0, 0, 0]  # for one reset only
    venv.set_options({"start_player": np.array([0, 1, 1])})
    venv.reset()
    assert venv.engine.active.tolist() == [0, 1, 1]
    with pytest.raises(TypeError, match="'start'; accepted: start_player"):
        venv.set_options({"start": 1})
    with pytest.raises(ValueError, match="one dict for every entry"):
        venv.set_options([{"start_player": 1}] * 6)
    venv.set_options({"start_player": 2})
    with pytest.raises(ValueError, match="start_player"):
        venv.reset()
    cards = QwintoVecEnv(2, num_players=2, game="cards", seed=0)
    cards.set_options({"deck": np.tile(np.arange(32), (2, 1))})
    cards.reset()
    assert cards.engine.hands[0].tolist() == cards.engine.hands[1].tolist()  # one deal



def play_against_opponents(env, seed=None, steps=40) -> np.ndarray:
    """The learner's observations over ``steps`` masked-random steps after a reset
    (seeded with ``seed``, SB3's way for a QwintoVecEnv)."""
    rng = np.random.default_rng(0)
    if isinstance(env, QwintoVecEnv):
        if seed is not None:
            env.seed(seed)
        seen = [env.reset()]
        for _ in range(steps):
            seen.append(env.step(random_masked(env.action_masks(), rng))[0])
        return np.stack(seen)
    obs, masks = env.reset(seed=seed)
    seen = [obs.numpy()]
    for _ in range(steps):
        obs, masks, *_ = env.step(torch.as_tensor(random_masked(masks.numpy(), rng)))
        seen.append(obs.numpy())
    return np.stack(seen)


@pytest.mark.parametrize("front", [QwintoVecEnv, TorchVectorEnv])
def test_a_seed_replays_the_games_against_random_opponents(front):
    """A seeded reset (SB3: ``seed(s)`` then ``reset()``) replays the same games against
    the same opponent draws, whatever the opponents drew before and were built with, and
    so does the constructor's ``seed=``: the opponents drew on, so the games differed.
    A refused seed leaves the opponents' draws alone."""
    backend = "numpy" if front is QwintoVecEnv else "torch"

    def make(opponent_seed, seed):
        shared = RandomOpponent(backend, seed=opponent_seed)  # one object in two seats
        return front(4, num_players=4, opponents=[shared, RandomOpponent(backend), shared],
                     learner_seat=1, seed=seed), shared

    def draws(opponent):
        gen = opponent.gen
        return gen.get_state().numpy().tobytes() if backend == "torch" \
            else repr(gen.bit_generator.state)

    (env, shared), (twin, _) = make(1, 3), make(2, 3)
    assert np.array_equal(play_against_opponents(env), play_against_opponents(twin))
    first = play_against_opponents(env, seed=5)
    assert np.array_equal(play_against_opponents(env, seed=5), first)
    assert np.array_equal(play_against_opponents(make(None, 0)[0], seed=5), first)
    before = draws(shared)
    with pytest.raises(ValueError, match="seed"):
        play_against_opponents(env, seed=-1, steps=0)
    assert draws(shared) == before


def masked_random_steps(env, masks, rng, steps):
    """``steps`` masked-random steps from ``masks``; the observations seen and the last
    masks (a QwintoVecEnv's are its ``action_masks()``, a TorchVectorEnv's are returned)."""
    seen = []
    for _ in range(steps):
        actions = random_masked(np.asarray(masks, dtype=bool), rng)
        out = env.step(actions)
        seen.append(np.asarray(out[0]))
        masks = env.action_masks() if isinstance(env, QwintoVecEnv) else out[1]
    return np.stack(seen), masks


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))])
@pytest.mark.parametrize("front, backend", [(QwintoVecEnv, "numpy"), (QwintoVecEnv, "torch"),
                                            (TorchVectorEnv, "torch")])
def test_a_clone_taken_mid_game_plays_on_alone(front, backend, clone):
    """Tree search clones the vector env mid-game: the clone (its engine, its random
    opponent's generator) plays on as the original does, and apart from it. The torch
    backend held the torch module, which neither pickles nor deep-copies."""
    kwargs = {"backend": backend} if front is QwintoVecEnv else {}
    env = front(3, game="cards", opponents=RandomOpponent(backend, seed=0), seed=1, **kwargs)
    if front is QwintoVecEnv:
        env.reset()
        masks = env.action_masks()
    else:
        masks = env.reset()[1]
    _, masks = masked_random_steps(env, masks, np.random.default_rng(2), 3)
    twin = clone(env)
    ours, _ = masked_random_steps(env, masks, np.random.default_rng(5), 40)
    assert np.array_equal(masked_random_steps(twin, masks, np.random.default_rng(5), 40)[0],
                          ours)


@pytest.mark.parametrize("front", [QwintoVecEnv, TorchVectorEnv])
def test_unknown_options_name_the_vector_env_and_what_it_accepts(front):
    """The engine's "BatchedDiceGame.__init__() got an unexpected keyword argument" named
    neither the class the user called nor the options it takes; an option the env sets
    itself (final_observations, backend) came as "got multiple values"."""
    name = front.__name__
    with pytest.raises(TypeError, match=rf"{name}\(\) got unknown option\(s\) 'foo'; "
                                        r"accepted: .*learner_seat.*start_player"):
        front(2, foo=1)
    with pytest.raises(TypeError, match=rf"{name}\(\) got unknown option\(s\) 'empty_pile'"):
        front(2, empty_pile="end")  # a card-game option
    itself = "final_observations" if front is QwintoVecEnv else "backend"
    with pytest.raises(TypeError, match=rf"{name}\(\) got unknown option\(s\) '{itself}'"):
        front(2, **{itself: "numpy" if itself == "backend" else True})
    assert front(2, game="cards", empty_pile="end", start_player=1).num_envs == 4



@pytest.mark.parametrize("front", [QwintoVecEnv, TorchVectorEnv])
def test_an_opponent_whose_reset_takes_no_seed_is_refused_when_given(front):
    """The env's seed reseeds its opponents with ``reset(seed=...)``: an opponent whose
    ``reset`` takes no seed failed in the constructor with the call's own TypeError."""
    class FirstLegal:
        def __call__(self, obs, masks):
            return masks.argmax(-1)

        def reset(self):
            pass

    with pytest.raises(ValueError, match=r"opponents\[0\] .*reset\(\) takes no seed"):
        front(2, opponents=FirstLegal(), seed=1)
