"""PettingZoo's classic-env conventions: a versioned module per game with ``env()``,
``raw_env()`` and ``parallel_env()``, ``render_fps`` in the metadata, and ``max_cycles``."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, seed_test
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

import qwinto_env
from qwinto_env.parallel import QwintoAECEnv, QwintoParallelEnv

GAMES = ["dice", "cards"]


def versioned(game: str):
    return importlib.import_module(f"qwinto_env.qwinto_{game}_v0")


@pytest.mark.parametrize("game", GAMES)
def test_each_versioned_module_passes_the_api_tests(game):
    module = versioned(game)
    for num_players in (1, 2, 3):
        api_test(module.env(num_players=num_players), num_cycles=300)
        api_test(module.raw_env(num_players=num_players), num_cycles=300)
        parallel_api_test(module.parallel_env(num_players=num_players), num_cycles=300)
    seed_test(module.env)


@pytest.mark.parametrize("game", GAMES)
def test_the_versioned_module_fixes_its_game_and_wraps_as_pettingzoo_does(game):
    module = versioned(game)
    env, raw, par = module.env(), module.raw_env(), module.parallel_env()
    assert isinstance(env, OrderEnforcingWrapper) and isinstance(env.unwrapped, QwintoAECEnv)
    assert isinstance(raw, QwintoAECEnv) and isinstance(par, QwintoParallelEnv)
    for made in (env, raw, par):
        assert made.metadata["name"] == module.__name__.rpartition(".")[2]
        assert made.unwrapped.game.name == game
    with pytest.raises(TypeError, match=rf"qwinto_{game}_v0.env\(\) got unknown option.*'game'"):
        module.env(game="dice")


@pytest.mark.parametrize("game", GAMES)
def test_the_versioned_module_plays_the_same_games_as_the_package_makers(game):
    def trajectory(env):
        env.reset(seed=11)
        rng = np.random.default_rng(0)
        seen = []
        for agent in env.agent_iter():
            obs, reward, termination, truncation, _ = env.last()
            seen.append((agent, reward, obs["observation"].tobytes()))
            done = termination or truncation
            env.step(None if done else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        return seen

    assert trajectory(versioned(game).env(num_players=3)) == \
        trajectory(qwinto_env.env(game=game, num_players=3))


@pytest.mark.parametrize("maker", [qwinto_env.env, qwinto_env.parallel_env,
                                   qwinto_env.qwinto_dice_v0.env,
                                   qwinto_env.qwinto_cards_v0.parallel_env])
def test_render_fps_is_in_the_metadata(maker):
    assert maker().metadata["render_fps"] > 0


def play_out(env, seed=0):
    """Masked random play to the end; the number of steps and the last step's dicts."""
    observations, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps, last = 0, None
    while env.agents:
        actions = {a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"])))
                   for a in env.agents}
        observations, rewards, terminations, truncations, _ = env.step(actions)
        steps, last = steps + 1, (rewards, terminations, truncations)
    return steps, last


@pytest.mark.parametrize("game", GAMES)
def test_max_cycles_truncates_the_game_at_that_step(game):
    full, _ = play_out(qwinto_env.parallel_env(game=game))
    for cycles in (1, 7, full - 1):
        steps, (rewards, terminations, truncations) = play_out(
            qwinto_env.parallel_env(game=game, max_cycles=cycles))
        assert steps == cycles
        assert all(truncations.values()) and not any(terminations.values())
        assert set(rewards.values()) == {0.0}       # "win": no result for an unfinished game
    steps, (_, terminations, truncations) = play_out(
        qwinto_env.parallel_env(game=game, max_cycles=full + 5))
    assert steps == full and all(terminations.values()) and not any(truncations.values())


def test_max_cycles_passes_the_api_tests_and_resets():
    api_test(qwinto_env.qwinto_dice_v0.env(max_cycles=10), num_cycles=100)
    parallel_api_test(qwinto_env.qwinto_cards_v0.parallel_env(max_cycles=10), num_cycles=100)
    env = qwinto_env.parallel_env(max_cycles=3)
    assert play_out(env)[0] == play_out(env, seed=1)[0] == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
@pytest.mark.parametrize("maker", [qwinto_env.env, qwinto_env.parallel_env,
                                   qwinto_env.qwinto_dice_v0.raw_env])
def test_a_bad_max_cycles_names_the_option(maker, bad):
    with pytest.raises(ValueError, match=r"max_cycles must be a positive integer .* got"):
        maker(max_cycles=bad)


def test_an_unknown_option_names_itself_and_the_public_maker():
    for maker, name in ((qwinto_env.env, "qwinto_env.env"),
                        (qwinto_env.parallel_env, "qwinto_env.parallel_env"),
                        (qwinto_env.qwinto_cards_v0.raw_env, "qwinto_cards_v0.raw_env")):
        with pytest.raises(TypeError, match=rf"{name}\(\) got unknown option\(s\) 'max_cycle';"
                                            r" accepted: .*max_cycles"):
            maker(max_cycle=5)
