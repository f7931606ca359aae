"""The dice game's ParallelEnv: PettingZoo conformance, phases, rewards, bad input."""

import random

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

import qwinto_env
from qwinto_env import dice, rules
from qwinto_env.dice import CHOOSE, ENTRY, KEEP, PASS, REROLL, REROLL_DECISION, DiceGame
from qwinto_env.game import IllegalActionError
from tests.random_play import play, random_actions


# -- PettingZoo's own checkers -----------------------------------------------------

@pytest.mark.parametrize("players", [1, 2, 4, 6])
def test_parallel_api(players):
    parallel_api_test(qwinto_env.parallel_env(num_players=players), num_cycles=1000)


@pytest.mark.parametrize("players", [2, 3])
def test_aec_api(players):
    api_test(qwinto_env.env(num_players=players), num_cycles=1000)


def test_render():
    render_test(lambda render_mode=None: qwinto_env.env(render_mode=render_mode))


def test_aec_seed():
    seed_test(qwinto_env.env, num_cycles=300)


def test_parallel_seed_with_unmasked_sampling():
    # PettingZoo's parallel seed test samples without masks: forgive illegal actions.
    parallel_seed_test(lambda: qwinto_env.parallel_env(illegal_action="pass"))


# -- seeding ------------------------------------------------------------------------

def flatten(history):
    out = []
    for obs, rewards, terms, infos in history:
        for agent in sorted(obs):
            out.append(obs[agent]["observation"].tobytes() + obs[agent]["action_mask"].tobytes())
            out.append(repr((rewards or {}).get(agent)) + repr((terms or {}).get(agent))
                       + repr(infos[agent]["score"]) + repr(infos[agent]["roll"]))
    return out


def test_same_seed_same_trajectory_over_whole_games():
    for seed in range(5):
        a = flatten(play(qwinto_env.parallel_env(num_players=3), seed=seed, rng_seed=seed))
        b = flatten(play(qwinto_env.parallel_env(num_players=3), seed=seed, rng_seed=seed))
        assert a == b


def test_different_seeds_give_different_dice():
    rolls = set()
    for seed in range(5):
        env = qwinto_env.parallel_env()
        env.reset(seed=seed)
        env.step({"player_0": 34, "player_1": PASS})
        rolls.add(env.game.dice)
    assert len(rolls) > 1


def test_reset_without_seed_continues_the_stream():
    env = qwinto_env.parallel_env()
    env.reset(seed=3)
    first = [env.game.rng.random() for _ in range(3)]
    env.reset()
    assert [env.game.rng.random() for _ in range(3)] != first


def test_start_player_option_and_random_start():
    env = qwinto_env.parallel_env(num_players=4)
    obs, infos = env.reset(seed=0, options={"start_player": 2})
    assert infos["player_0"]["active_player"] == 2
    assert obs["player_2"]["action_mask"][28:35].all()
    with pytest.raises(ValueError, match="start_player"):
        env.reset(options={"start_player": 4})
    env = qwinto_env.parallel_env(num_players=4, random_start=True)
    starts = {env.reset(seed=s)[1]["player_0"]["active_player"] for s in range(30)}
    assert len(starts) > 1


# -- phases and masks ----------------------------------------------------------------

def mask_actions(obs, agent):
    return list(np.flatnonzero(obs[agent]["action_mask"]))


def test_turn_phases_and_masks():
    env = qwinto_env.parallel_env(num_players=3)
    obs, infos = env.reset(seed=1)
    assert infos["player_0"]["phase"] == "choose"
    assert infos["player_0"]["roll"] == {"colours": (), "dice": (0, 0, 0), "value": 0}
    assert mask_actions(obs, "player_0") == list(range(28, 35))
    assert mask_actions(obs, "player_1") == [PASS] == mask_actions(obs, "player_2")
    obs, _, _, _, infos = env.step({"player_0": 27 + 0b110, "player_1": PASS, "player_2": PASS})
    assert infos["player_1"]["phase"] == "reroll"
    assert infos["player_1"]["roll"]["colours"] == ("yellow", "purple")
    assert infos["player_0"]["reroll_available"]
    assert mask_actions(obs, "player_0") == [KEEP, REROLL]
    assert mask_actions(obs, "player_2") == [PASS]
    obs, _, _, _, infos = env.step({"player_0": KEEP, "player_1": PASS, "player_2": PASS})
    assert infos["player_0"]["phase"] == "entry" and not infos["player_0"]["reroll_available"]
    value = infos["player_0"]["roll"]["value"]
    for agent in env.agents:  # on empty sheets: every yellow and purple field, plus pass
        assert mask_actions(obs, agent) == list(range(9, 27)) + [PASS]
    assert 2 <= value <= 12


def test_masks_are_never_all_zero_and_match_the_rules():
    env = qwinto_env.parallel_env(num_players=4)
    for obs, _, _, infos in play(env, seed=7):
        for agent, o in obs.items():
            assert o["action_mask"].dtype == np.int8 and o["action_mask"].any()
            if infos[agent]["phase"] == "entry":
                roll = infos[agent]["roll"]
                rows = [rules.ROW_NAMES.index(c) for c in roll["colours"]]
                expected = rules.legal_cells(infos[agent]["sheet"], roll["value"], rows)
                assert (o["action_mask"][:27].astype(bool) == expected.reshape(-1)).all()


def test_reroll_uses_the_same_dice_and_the_second_roll_binds():
    game = DiceGame(num_players=2)
    game.step([27 + 0b101, PASS], chance=(6, 1, 6))   # orange + purple
    assert game.value == 12 and game.dice == (6, 0, 6)
    game.step([REROLL, PASS], chance=(1, 6, 2))
    assert game.subset == 5 and game.dice == (1, 0, 2) and game.value == 3
    assert game.phase == ENTRY and game.legal_actions(0)[-1] == PASS
    assert REROLL not in game.legal_actions(0)


def test_keep_skips_the_second_roll():
    game = DiceGame(num_players=2)
    game.step([34, PASS], chance=(1, 2, 3))
    game.step([KEEP, PASS], chance=(6, 6, 6))
    assert game.value == 6 and game.phase == ENTRY


def entry_turn(game, writes, chance=(1, 1, 1), subset=1):
    """One full turn: the active player rolls ``subset`` with ``chance`` and keeps it,
    then every seat plays its entry from ``writes``."""
    active = game.active
    game.step([27 + subset if s == active else PASS for s in range(game.num_players)],
              chance=chance)
    game.step([KEEP if s == active else PASS for s in range(game.num_players)])
    game.step(writes)


def test_active_seat_rotates_after_entry():
    game = DiceGame(num_players=3)
    for turn, expected in enumerate([0, 1, 2, 0]):
        assert game.active == expected and game.phase == CHOOSE
        entry_turn(game, [turn] * 3, chance=(turn + 1, 1, 1))  # everybody writes in orange
    assert all(c[:4] == [1, 2, 3, 4] for c in game.cells)
    assert game.misthrows == [0, 0, 0]


# -- misthrows and game end ------------------------------------------------------------

def test_misthrow_only_for_the_active_player():
    game = DiceGame(num_players=3)
    entry_turn(game, [PASS, PASS, PASS])
    assert game.misthrows == [1, 0, 0]
    entry_turn(game, [PASS, PASS, PASS])
    assert game.misthrows == [1, 1, 0]


def test_fourth_misthrow_ends_the_game_after_the_roll_resolves():
    game = DiceGame(num_players=2)
    for _ in range(3):
        game._misthrow(0)
    entry_turn(game, [PASS, 0])   # player 1 still writes in the final roll
    assert game.done and game.phase == dice.OVER
    assert game.misthrows == [4, 0] and game.cells[1][0] == 1
    assert game.scores() == [-20, 1] or game.scores()[0] == rules.cells_score(game.cells[0], 4)


def test_two_full_rows_end_the_game_after_the_roll_resolves():
    game = DiceGame(num_players=2)
    for cell, value in zip(range(0, 17), list(range(1, 10)) + list(range(10, 18))):
        game._write(0, cell, value)   # orange full, yellow full but its last field
    assert rules.cells_full_rows(game.cells[0]) == 1 and not game.game_over()
    entry_turn(game, [17, 0], chance=(6, 6, 6), subset=7)  # 18 in yellow field 8; player 1 writes too
    assert game.done and rules.cells_full_rows(game.cells[0]) == 2
    assert game.cells[1][0] == 18


def test_one_full_row_does_not_end_the_game():
    game = DiceGame(num_players=2)
    for cell, value in zip(range(0, 8), range(1, 9)):
        game._write(0, cell, value)
    entry_turn(game, [8, PASS], chance=(6, 6, 6), subset=7)
    assert rules.cells_full_rows(game.cells[0]) == 1 and not game.done


# -- rewards -----------------------------------------------------------------------------

def test_score_rewards_sum_to_final_score():
    env = qwinto_env.parallel_env(num_players=3, reward="score")
    history = play(env, seed=11)
    totals = {a: sum(h[1][a] for h in history[1:]) for a in env.possible_agents}
    final = history[-1][3]
    for agent in env.possible_agents:
        assert totals[agent] == final[agent]["score"]
        assert final[agent]["score"] == rules.score(final[agent]["sheet"], final[agent]["misthrows"])


@pytest.mark.parametrize("reward", ["win", "margin"])
def test_terminal_rewards(reward):
    env = qwinto_env.parallel_env(num_players=3, reward=reward)
    history = play(env, seed=5)
    for _, rewards, terms, _ in history[1:-1]:
        assert set(rewards.values()) == {0.0} and not any(terms.values())
    _, rewards, terms, infos = history[-1]
    assert all(terms.values())
    scores = {a: infos[a]["score"] for a in env.possible_agents}
    best = max(scores.values())
    for agent, s in scores.items():
        if reward == "margin":
            assert rewards[agent] == s - max(v for b, v in scores.items() if b != agent)
        elif s == best:
            assert rewards[agent] > 0 or len(set(scores.values())) == 1
        else:
            assert rewards[agent] == -1.0


def test_win_rewards_share_ties():
    from qwinto_env.spec.base import terminal_rewards
    assert terminal_rewards([10, 10, 3], "win") == [0.5, 0.5, -1.0]
    assert terminal_rewards([7, 7], "win") == [0.0, 0.0]
    assert terminal_rewards([9, 2], "win") == [1.0, -1.0]
    assert terminal_rewards([9, 2, 5], "margin") == [4.0, -7.0, -4.0]


def test_solo_defaults_to_score_and_rejects_win():
    env = qwinto_env.parallel_env(num_players=1)
    assert env.reward_kind == "score"
    play(env, seed=0)
    with pytest.raises(ValueError, match="needs 2\\+ players"):
        qwinto_env.parallel_env(num_players=1, reward="win")


# -- observations and infos --------------------------------------------------------------

def test_observation_is_ego_centric():
    env = qwinto_env.parallel_env(num_players=3)
    env.reset(seed=0)
    game = env.game
    game._write(1, 4, 9)   # player 1 writes 9 in orange field 4
    obs = {a: game.features()[game.observation_index(i)] for i, a in enumerate(env.possible_agents)}
    block = dice.SEAT.size
    assert obs["player_1"][4] == pytest.approx(9 / 18)           # own sheet first
    assert obs["player_0"][block + 4] == pytest.approx(9 / 18)   # next seat after player 0
    assert obs["player_2"][2 * block + 4] == pytest.approx(9 / 18)
    # active player one-hot, relative to the observer: player 0 is active
    base = 3 * block
    assert list(obs["player_0"][base:base + 3]) == [1, 0, 0]
    assert list(obs["player_1"][base:base + 3]) == [0, 0, 1]


def test_observation_space_and_state():
    env = qwinto_env.parallel_env(num_players=4)
    obs, infos = env.reset(seed=0)
    space = env.observation_space("player_0")
    assert space["observation"].shape == (dice.observation_size(4),) == (32 * 4 + 25,)
    for agent in env.agents:
        assert space.contains(obs[agent])
    assert env.state().shape == env.state_space.shape
    assert set(infos["player_0"]) >= {"sheet", "misthrows", "score", "roll", "phase"}
    assert infos["player_0"]["sheet"].shape == (3, 9)


# -- bad input ---------------------------------------------------------------------------

def snapshot(env):
    g = env.game
    return (repr(g.cells), repr(g.misthrows), g.active, g.phase, g.subset, g.value,
            g.features().tobytes(), g.rng.getstate(), list(env.agents))


@pytest.mark.parametrize("actions, message", [
    ({"player_0": 37, "player_1": PASS}, "out of range"),
    ({"player_0": -1, "player_1": PASS}, "out of range"),
    ({"player_0": PASS, "player_1": PASS}, "not legal now"),       # active must roll
    ({"player_0": 28, "player_1": 28}, "not legal now"),           # only the active rolls
    ({"player_0": 28}, "missing"),
    ({"player_0": "28", "player_1": PASS}, "integers"),
    ({"player_0": 28.0, "player_1": PASS}, "integers"),
    ({"player_0": None, "player_1": PASS}, "integers"),
    ({"player_0": 28, "player_1": PASS, "player_9": 27}, "not a live agent"),
])
def test_illegal_actions_raise_and_change_nothing(actions, message):
    env = qwinto_env.parallel_env()
    env.reset(seed=0)
    before = snapshot(env)
    with pytest.raises(IllegalActionError, match=message) as err:
        env.step(actions)
    assert isinstance(err.value, ValueError)
    assert snapshot(env) == before


def test_illegal_entry_names_agent_and_action():
    env = qwinto_env.parallel_env()
    env.reset(seed=0)
    env.step({"player_0": 28, "player_1": PASS})
    env.step({"player_0": KEEP, "player_1": PASS})
    before = snapshot(env)
    with pytest.raises(IllegalActionError, match=r"illegal action 9 for player_1"):
        env.step({"player_0": 0, "player_1": 9})   # yellow was not rolled
    assert snapshot(env) == before


def test_numpy_integer_actions_are_accepted():
    env = qwinto_env.parallel_env()
    env.reset(seed=0)
    env.step({"player_0": np.int64(28), "player_1": np.array(PASS)})
    assert env.game.phase == REROLL_DECISION


def test_step_after_game_over_raises():
    env = qwinto_env.parallel_env()
    play(env, seed=2)
    with pytest.raises(IllegalActionError, match="game is over"):
        env.step({})


def test_illegal_action_pass_mode_penalises_and_plays_the_default():
    env = qwinto_env.parallel_env(illegal_action="pass", illegal_penalty=-2.0, reward="score")
    env.reset(seed=0)
    _, rewards, _, _, infos = env.step({"player_0": 5, "player_1": 99})
    assert env.game.subset == 7            # the active player's default: roll all dice
    assert rewards == {"player_0": -2.0, "player_1": -2.0}
    assert infos["player_0"]["illegal_action"] and infos["player_1"]["illegal_action"]


@pytest.mark.parametrize("kwargs, message", [
    ({"num_players": 7}, "num_players"), ({"num_players": 0}, "num_players"),
    ({"reward": "points"}, "unknown reward"), ({"game": "chess"}, "unknown game"),
    ({"render_mode": "rgb"}, "render_mode"), ({"illegal_action": "ignore"}, "illegal_action"),
    ({"infos": "tensors"}, r"unknown infos 'tensors'; choose one of \('full', 'numeric'\)"),
])
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        qwinto_env.parallel_env(**kwargs)


def test_bad_chance_raises_and_changes_nothing():
    game = DiceGame(num_players=2)
    with pytest.raises(ValueError, match="3 faces in 1..6"):
        game.step([34, PASS], chance=(7, 1, 1))
    assert game.phase == CHOOSE and game.subset == 0


def test_render_ansi_shows_sheets():
    env = qwinto_env.parallel_env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "player 0" in text and "orange" in text and "XX" in text and "<__>" in text


def test_python_random_module_untouched():
    state = random.getstate()
    play(qwinto_env.parallel_env(), seed=1)
    assert random.getstate() == state
