"""``infos="numeric"``: only ints and int64 arrays of the shapes the spec declares, the
same keys at every step and for every agent, telling what the full infos tell; the
PettingZoo API tests pass with it, and TorchRL's ``PettingZooWrapper`` and Tianshou's
``PettingZooEnv`` and replay buffer take it as it is (and refuse the full infos, which
is why the option exists). Library tests skip where the library is not installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from pettingzoo.test import api_test, parallel_api_test

import qwinto_env
from qwinto_env.spec import SPECS
from qwinto_env.spec.cards import COLOUR_NAMES, EMPTY_PILE_RULES
from tests.numeric_infos import check_tianshou_takes_only_numeric, shapes, tianshou_buffer

GAMES = ["dice", "cards"]


def masked(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def parallel_steps(game, players, seed, forgive=False, **options):
    """Every step's infos of a masked-random game in the ParallelEnv, reset first; with
    ``forgive`` some actions are illegal (replaced and flagged)."""
    env = qwinto_env.parallel_env(game=game, num_players=players,
                                  illegal_action="pass" if forgive else "raise", **options)
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    yield infos
    while env.agents:
        actions = {a: masked(rng, o["action_mask"]) for a, o in obs.items()}
        if forgive and rng.random() < 0.3:
            actions[env.agents[0]] = 99
        obs, _, _, _, infos = env.step(actions)
        yield infos


def aec_infos(game, players, seed, **options):
    """What ``last()`` gives every agent in turn along a masked-random game."""
    env = qwinto_env.env(game=game, num_players=players, **options)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for _ in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        yield info
        env.step(None if term or trunc else masked(rng, obs["action_mask"]))


def options(game: str, seed: int) -> dict:
    """The card game's ``empty_pile`` rules in turn (hands shrink under two of them)."""
    return {"empty_pile": EMPTY_PILE_RULES[seed % 3]} if game == "cards" else {}


@settings(max_examples=60, deadline=None)
@given(game=st.sampled_from(GAMES), players=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1), forgive=st.booleans(), aec=st.booleans())
def test_every_step_has_the_declared_keys_and_shapes(game, players, seed, forgive, aec):
    declared = SPECS[game].numeric_infos(players)
    kwargs = {"infos": "numeric", **options(game, seed)}
    if aec:
        infos = list(aec_infos(game, players, seed, **kwargs))
    else:
        infos = [info for step in parallel_steps(game, players, seed, forgive, **kwargs)
                 for info in step.values()]
    assert all(shapes(info) == declared for info in infos)
    assert any(info["illegal_action"] for info in infos) <= forgive


def as_lists(info: dict) -> dict:
    return {key: np.asarray(value).tolist() for key, value in info.items()}


def card(colour_name: str, value: int) -> tuple[int, int]:
    return COLOUR_NAMES.index(colour_name), value


def padded(rows: list, size: int, width: int) -> list:
    return [list(row) for row in rows] + [[-1] * width] * (size - len(rows))


def numeric_of(full: dict, game: str) -> dict:
    """What the numeric infos must say, read from the full infos."""
    roll = full["roll"]
    out = {"sheet": full["sheet"].tolist(), "misthrows": full["misthrows"],
           "score": full["score"], "phase": SPECS[game].phases.index(full["phase"]),
           "active_player": full["active_player"],
           "reroll_available": int(full["reroll_available"]),
           "roll_colours": [int(c in roll["colours"]) for c in ("orange", "yellow", "purple")],
           "roll_value": roll["value"], "illegal_action": int(full["illegal_action"])}
    if game == "dice":
        return {**out, "roll_dice": list(roll["dice"])}
    return {**out, "played": padded([(*card(*c), s) for c, s in full["played"]], 2, 3),
            "stacks": padded([card(*c) for c in full["stacks"]], 4, 2),
            "pile_size": full["pile_size"], "hand_sizes": list(full["hand_sizes"]),
            "hand": padded([card(*c) for c in full["hand"]], 3, 2)}


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("players", [1, 2, 4])
def test_the_numbers_tell_what_the_full_infos_tell(game, players):
    for seed in range(3):
        full = parallel_steps(game, players, seed, True, **options(game, seed))
        numeric = parallel_steps(game, players, seed, True, infos="numeric",
                                 **options(game, seed))
        for full_step, numeric_step in zip(full, numeric, strict=True):
            for agent, info in numeric_step.items():
                assert as_lists(info) == numeric_of(full_step[agent], game)


@pytest.mark.parametrize("game", GAMES)
def test_the_aec_view_gives_the_parallel_infos(game):
    steps = [{agent: as_lists(info) for agent, info in step.items()}
             for step in parallel_steps(game, 3, 5, infos="numeric")]
    env = qwinto_env.env(game=game, num_players=3, infos="numeric")
    env.reset(seed=5)
    rng = np.random.default_rng(5)  # draws as parallel_steps does: agents in seat order
    cycles = [{agent: as_lists(info) for agent, info in env.infos.items()}]
    while not any(env.terminations.values()):  # a cycle of it is a step of the ParallelEnv
        for agent in list(env.agents):
            env.step(masked(rng, env.observe(agent)["action_mask"]))
        cycles.append({agent: as_lists(env.infos[agent]) for agent in env.possible_agents})
    assert cycles == steps


@pytest.mark.parametrize("game", GAMES)
def test_the_pettingzoo_api_tests_pass_with_numeric_infos(game):
    for players in (1, 3):
        api_test(qwinto_env.env(game=game, num_players=players, infos="numeric"),
                 num_cycles=200)
        parallel_api_test(qwinto_env.parallel_env(game=game, num_players=players,
                                                  infos="numeric"), num_cycles=200)


@pytest.mark.parametrize("bad", ["tensor", "Numeric", None, 1, ("numeric",)], ids=repr)
@pytest.mark.parametrize("maker", [qwinto_env.parallel_env, qwinto_env.env,
                                   qwinto_env.qwinto_cards_v0.raw_env])
def test_a_bad_infos_value_names_the_option_and_its_values(maker, bad):
    with pytest.raises(ValueError, match=r"unknown infos .*; choose one of \('full', 'numeric'\)"):
        maker(infos=bad)


# -- the libraries --------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested")
@pytest.mark.parametrize("game", GAMES)
def test_torchrl_wraps_both_views_with_numeric_infos_and_not_the_full_ones(game):
    pytest.importorskip("torchrl")
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    for players in (2, 3):
        declared = SPECS[game].numeric_infos(players)
        seats = {"player": [f"player_{i}" for i in range(players)]}  # the AEC's default: one each
        for env, kwargs in ((qwinto_env.parallel_env, {}), (qwinto_env.env, {"use_mask": True})):
            wrapped = PettingZooWrapper(env(game=game, num_players=players, infos="numeric"),
                                        categorical_actions=True, seed=players, group_map=seats,
                                        **kwargs)
            check_env_specs(wrapped)
            steps = wrapped.rollout(400, break_when_any_done=False)  # across game ends
            assert steps["next", "player", "done"].any()
            infos = steps["next", "player", "info"]
            assert {key: tuple(infos[key].shape[2:]) for key in declared} == declared
    with pytest.raises(TypeError, match="str"):  # the full infos' phase, as examples met
        PettingZooWrapper(qwinto_env.parallel_env(game=game), categorical_actions=True)


@pytest.mark.parametrize("game", GAMES)
def test_tianshou_collects_numeric_infos_into_its_buffer_and_not_the_full_ones(game):
    pytest.importorskip("tianshou")
    from tianshou.algorithm import (MARLRandomDiscreteMaskedOffPolicyAlgorithm,
                                    MultiAgentOffPolicyAlgorithm)
    from tianshou.env.pettingzoo_env import PettingZooEnv

    def collect(infos: str):
        def make():
            return PettingZooEnv(qwinto_env.env(game=game, infos=infos, random_start=True))
        env = make()
        random_seats = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
                        for _ in env.agents]
        return tianshou_buffer(make, MultiAgentOffPolicyAlgorithm(algorithms=random_seats,
                                                                  env=env))

    check_tianshou_takes_only_numeric(collect, SPECS[game].numeric_infos(2))
