"""The AEC view (``qwinto_env.env``): a bad action raises at the step that gives it and
changes nothing; PettingZoo's AEC wrappers work on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from pettingzoo.utils.wrappers import (AssertOutOfBoundsWrapper, OrderEnforcingWrapper,
                                       TerminateIllegalWrapper)

import qwinto_env
from qwinto_env.game import IllegalActionError, type_problem

#: Every phase name of each game, "over" included (the dead steps at the end).
PHASES = {"dice": {"choose", "reroll", "entry", "over"}, "cards": {"play", "entry", "over"}}
TABLES = [("dice", 1), ("dice", 2), ("dice", 5), ("cards", 1), ("cards", 2), ("cards", 4)]


def bad_actions(mask: np.ndarray, rng: np.random.Generator) -> list:
    """One bad action of every kind for an agent with action ``mask``: out of range,
    masked out (as Python and numpy integers), wrong types (also holding a legal value)."""
    n = len(mask)
    legal = int(rng.choice(np.flatnonzero(mask)))
    masked = np.flatnonzero(mask == 0)
    out = [-1, n, n + int(rng.integers(1000)), 2**63, -(2**40), np.int64(-1), np.uint64(n),
           np.int16(n + 5), None, str(legal), float(legal), np.float64(legal),
           np.float32(legal), True, False, [legal], (legal,), np.array([legal]),
           np.array(float(legal)), complex(legal), object(), b"\x01"]
    if len(masked):
        m = int(rng.choice(masked))
        out += [m, np.int64(m), np.int32(m), np.uint8(m), np.array(m)]
    return out


def snapshot(env) -> tuple:
    """What a step may change: the current agent's view, the engine, its generator."""
    obs, reward, term, trunc, info = env.last()
    game = env.unwrapped.game
    return (env.agent_selection, list(env.agents), obs["observation"].tobytes(),
            obs["action_mask"].tobytes(), reward, term, trunc, repr(info),
            dict(env._cumulative_rewards), dict(env.rewards), dict(env.terminations),
            game.features().tobytes(), game.rng.getstate(), repr(game.scores()))


def check_refused(env, action, agent: str) -> None:
    before = snapshot(env)
    with pytest.raises(IllegalActionError) as err:
        env.step(action)
    assert err.value.agent == agent and err.value.action is action
    assert f"for {agent}" in str(err.value)
    if not (env.terminations[agent] or env.truncations[agent]):
        assert 'illegal_action="pass"' in str(err.value)  # the hint names the option
    assert snapshot(env) == before


def play_poked(game: str, players: int, seed: int, poke_rate: float) -> set[str]:
    """Play a masked-random AEC game; before a share ``poke_rate`` of the steps, give
    bad actions (each must raise and change nothing). A twin env that only sees the
    good actions must stay equal all along. Returns the phases poked."""
    poked, twin = (qwinto_env.env(game=game, num_players=players) for _ in range(2))
    poked.reset(seed=seed)
    twin.reset(seed=seed)
    rng = np.random.default_rng(seed)
    phases = set()
    for agent in poked.agent_iter():
        assert snapshot(poked) == snapshot(twin)
        obs, _, term, trunc, info = poked.last()
        if rng.random() < poke_rate:
            phases.add(info["phase"])
            dead = term or trunc
            kinds = bad_actions(obs["action_mask"], rng)
            if dead:  # a done agent's only action is None; anything else is refused
                kinds = [k for k in kinds if k is not None] + [27, np.int64(0)]
            for k in rng.permutation(len(kinds))[:6]:
                check_refused(poked, kinds[k], agent)
        if term or trunc:
            action = None
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        # the poked env gets a numpy integer: the same action as the twin's Python int
        poked.step(None if action is None else np.int64(action))
        twin.step(action)
    assert not twin.agents and twin.unwrapped.game.done
    return phases


@settings(max_examples=12, deadline=None)
@given(table=st.sampled_from(TABLES), seed=st.integers(0, 2**32 - 1),
       poke_rate=st.floats(0.0, 1.0))
def test_bad_actions_raise_at_their_step_and_change_nothing(table, seed, poke_rate):
    play_poked(*table, seed, poke_rate)


@pytest.mark.parametrize("game,players", [("dice", 2), ("cards", 3)])
def test_every_phase_refuses_every_kind_of_bad_action(game, players):
    assert play_poked(game, players, seed=4, poke_rate=1.0) == PHASES[game]


def test_the_reported_jam_is_gone():
    env = qwinto_env.env(num_players=2)
    env.reset(seed=1)
    with pytest.raises(IllegalActionError, match=r"999 for player_0: out of range"):
        env.step(999)
    env.step(28)  # the active player rolls orange; the bad action was not kept
    env.step(27)
    assert env.unwrapped.game.phase == 1  # the re-roll decision


def test_step_after_the_end_on_the_unwrapped_env():
    env = qwinto_env.env(num_players=2)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    with pytest.raises(IllegalActionError, match="game is over"):
        env.unwrapped.step(27)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_pass_mode_still_forgives(game):
    """With illegal_action="pass" a bad integer action is stored, replaced by the default
    and penalised, exactly like the twin that played the default action itself (a value
    of another type is refused: test_env_inputs.py)."""
    forgiving = qwinto_env.env(game=game, num_players=2, reward="score",
                               illegal_action="pass", illegal_penalty=-3.0)
    twin = qwinto_env.env(game=game, num_players=2, reward="score")
    forgiving.reset(seed=5)
    twin.reset(seed=5)
    rng = np.random.default_rng(5)
    penalties = 0
    for agent in forgiving.agent_iter():
        obs, reward, term, trunc, info = forgiving.last()
        twin_reward = twin.last()[1]
        assert reward == twin_reward - 3.0 * info["illegal_action"]
        if term or trunc:
            forgiving.step(None)
            twin.step(None)
            continue
        seat = forgiving.possible_agents.index(agent)
        if rng.random() < 0.2:
            kinds = [k for k in bad_actions(obs["action_mask"], rng) if type_problem(k) is None]
            forgiving.step(kinds[int(rng.integers(len(kinds)))])
            twin.step(twin.unwrapped.game.default_action(seat))
            penalties += 1
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            forgiving.step(action)
            twin.step(action)
    assert penalties > 0 and not twin.agents
    assert forgiving.unwrapped.game.scores() == twin.unwrapped.game.scores()


# -- PettingZoo's AEC wrappers -----------------------------------------------------------------

def test_terminate_illegal_wrapper_ends_the_game_on_an_illegal_action():
    env = TerminateIllegalWrapper(qwinto_env.env(num_players=3), illegal_reward=-1)
    for seed in range(3):
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _ in range(int(rng.integers(1, 40))):  # some legal steps first
            obs, *_ = env.last()
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        cheat = env.agent_selection
        obs, *_ = env.last()
        env.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
        assert all(env.terminations.values()) and len(env.terminations) == 3
        finals = {}
        for agent in env.agent_iter():
            _, finals[agent], term, _, _ = env.last()
            assert term
            env.step(None)
        assert finals[cheat] == -1 and not env.agents


def test_wrapped_aec_envs_refuse_what_their_wrappers_refuse():
    env = AssertOutOfBoundsWrapper(qwinto_env.env())
    env.reset(seed=0)
    with pytest.raises(AssertionError):
        env.step(37)
    with pytest.raises(IllegalActionError, match="not legal now"):
        env.step(27)  # in range but masked out: our env refuses it
    env.step(28)  # and goes on
    assert env.agent_selection == "player_1"


def test_order_enforcing_wrapper_still_guards_the_order():
    env = OrderEnforcingWrapper(qwinto_env.env().unwrapped)
    with pytest.raises(AssertionError, match="reset"):
        env.step(28)
    env.reset(seed=0)
    assert env.unwrapped.game is env.unwrapped.env.game  # the documented attributes
