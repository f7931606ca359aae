"""The OpenSpiel games (qwinto_env.openspiel): OpenSpiel's own checks, and a differential
test against the ParallelEnv with the same chance outcomes and actions."""

from __future__ import annotations

import math
import os
import random
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.observation import make_observation  # noqa: E402

from qwinto_env import openspiel, parallel_env  # noqa: E402
from qwinto_env.cards import CardGame  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GAMES = ["dice", "cards"]


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("players,reward", [(1, "score"), (2, "default"), (3, "margin"),
                                            (4, "score")])
def test_random_sim_test(game, players, reward):
    loaded = openspiel.load(game, num_players=players, reward=reward, random_start=True)
    pyspiel.random_sim_test(loaded, num_sims=2, serialize=True, verbose=False)


def test_registered_by_import_with_the_documented_properties():
    dice = pyspiel.load_game("python_qwinto_dice", {"num_players": 3})
    cards = pyspiel.load_game("python_qwinto_cards")
    assert dice.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
    assert dice.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION
    assert cards.get_type().information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert dice.num_distinct_actions() == 37 and cards.num_distinct_actions() == 88
    assert dice.observation_tensor_size() == 32 * 3 + 25
    assert cards.observation_tensor_size() == 33 * 2 + 149
    assert dice.get_type().reward_model == pyspiel.GameType.RewardModel.TERMINAL
    score = openspiel.load("dice", reward="score")
    assert score.get_type().reward_model == pyspiel.GameType.RewardModel.REWARDS


@pytest.mark.parametrize("params,message", [
    ({"num_players": 7}, "num_players"),
    ({"reward": "fame"}, r"unknown reward 'fame'; choose one of \('default', 'win', "),
    ({"num_players": 1, "reward": "win"}, "needs 2\\+ players")])
def test_bad_parameters_are_named(params, message):
    with pytest.raises(ValueError, match=message):
        openspiel.load("dice", **params)
    with pytest.raises(ValueError, match="unknown game"):
        openspiel.load("chess")


def test_dice_sums_have_exact_probabilities():
    two = dict(openspiel.dice_sum_outcomes(2))
    assert two[7] == pytest.approx(6 / 36) and two[2] == pytest.approx(1 / 36)
    assert sorted(two) == list(range(2, 13))
    three = dict(openspiel.dice_sum_outcomes(3))
    assert sum(three.values()) == pytest.approx(1.0) and three[18] == pytest.approx(1 / 216)


def test_stack_pile_puts_cards_on_top_and_changes_no_observation():
    game = CardGame(num_players=2, seed=3)
    pile, feats = game.draw_pile(), game.features()
    game.stack_pile([pile[5], pile[2]])
    assert game.draw_pile()[:2] == [pile[5], pile[2]]
    assert sorted(game.draw_pile()) == sorted(pile)
    np.testing.assert_array_equal(game.features(), feats)
    with pytest.raises(ValueError, match="draw pile"):
        game.stack_pile([game.hands[0][0]])


# -- the differential test ---------------------------------------------------------------
def hidden_before(game: str, env) -> dict:
    """What the card game's refill changes: the active player's hand and the draw pile."""
    engine = env.game
    if game == "dice":
        return {}
    return {"active": engine.active, "hand": list(engine.hands[engine.active]),
            "pile": engine.draw_pile()}


def chance_from_env(game: str, env, before: dict) -> list[int]:
    """The chance outcomes the env's last step drew, as the OpenSpiel game numbers them
    (dice: the rolled sum; cards: the cards drawn, those from the pile first)."""
    engine = env.game
    if game == "dice":
        return [engine.value]
    drawn = sorted(set(engine.hands[before["active"]]) - set(before["hand"]))
    from_pile = [c for c in drawn if c in before["pile"]]
    return from_pile + [c for c in drawn if c not in before["pile"]]


def check_views(state, obs: dict, agents: list[str]) -> None:
    for p, agent in enumerate(agents):
        np.testing.assert_array_equal(np.asarray(state.observation_tensor(p), np.float32),
                                      obs[agent]["observation"])
        assert state.legal_actions(p) == list(np.flatnonzero(obs[agent]["action_mask"]))


def pick(rng: random.Random, mask: np.ndarray, writer: bool) -> int:
    """A random legal action; a ``writer`` passes only when it must (longer games, which
    run the card game's pile out)."""
    legal = [int(a) for a in np.flatnonzero(mask)]
    if writer and len(legal) > 1:
        legal = [a for a in legal if a != 27]
    return rng.choice(legal)


def play_both(game: str, players: int, seed: int, reward: str, **options) -> dict:
    """Play the env with random legal actions (writers on odd seeds) and the OpenSpiel
    game with the same actions and chance outcomes; check every observation, mask and
    reward. Returns counters."""
    rng = random.Random(seed)
    env = parallel_env(game, players, reward=reward, **options)
    state = openspiel.load(game, num_players=players, reward=reward, **options).new_initial_state()
    if game == "cards":
        deck = rng.sample(range(32), 32)
        obs, _ = env.reset(seed=seed, options={"deck": deck})
        for card in deck[:4 + 3 * players]:
            state.apply_action(card)
    else:
        obs, _ = env.reset(seed=seed)
    agents, returns, chance_nodes = env.possible_agents, np.zeros(players), 0
    while env.agents:
        check_views(state, obs, agents)
        actions = {a: pick(rng, obs[a]["action_mask"], seed % 2 == 1) for a in agents}
        before = hidden_before(game, env)
        obs, rewards, terms, _, _ = env.step(actions)
        state.apply_actions([actions[a] for a in agents])
        outcomes = chance_from_env(game, env, before) if state.is_chance_node() else []
        for outcome in outcomes:
            assert state.is_chance_node()
            assert dict(state.chance_outcomes())[outcome] > 0
            state.apply_action(outcome)
        chance_nodes += len(outcomes)
        assert not state.is_chance_node()
        np.testing.assert_allclose(state.rewards(), [rewards[a] for a in agents])
        returns += [rewards[a] for a in agents]
        assert state.is_terminal() == all(terms.values())
    np.testing.assert_allclose(state.returns(), returns)
    return {"chance": chance_nodes, "reshuffles": getattr(env.game, "reshuffles", 0)}


@pytest.mark.parametrize("game,players,reward", [
    ("dice", 2, "win"), ("dice", 3, "score"), ("dice", 1, "score"), ("dice", 5, "margin"),
    ("cards", 2, "score"), ("cards", 3, "win"), ("cards", 1, "margin"), ("cards", 4, "score")])
def test_same_as_the_parallel_env(game, players, reward):
    counts = [play_both(game, players, seed, reward) for seed in range(6)]
    assert sum(c["chance"] for c in counts) > 0
    if game == "cards" and players > 1:
        assert sum(c["reshuffles"] for c in counts) > 0  # the reshuffle path was played


@pytest.mark.parametrize("empty_pile", ["end", "no_draw"])
def test_same_as_the_parallel_env_with_other_empty_pile_rules(empty_pile):
    for seed in range(4):
        play_both("cards", 2, seed, "score", empty_pile=empty_pile)


def test_cards_observations_hide_hands_and_pile_order():
    """Two deals that differ only in player 1's hand and the pile order look the same to
    player 0 (the differential test checks the rest against the env)."""
    game = openspiel.load("cards", num_players=2)
    deck = list(range(32))
    other = deck[:7] + deck[10:] + deck[7:10]  # player 1's hand swapped with pile cards
    views = []
    for order in (deck, other):
        state = game.new_initial_state()
        for card in order[:10]:
            state.apply_action(card)
        views.append((state.observation_tensor(0), state.observation_string(0)))
    assert views[0] == views[1]


def observation_type(private, public=True, recall=False):
    return pyspiel.IIGObservationType(perfect_recall=recall, public_info=public,
                                      private_info=getattr(pyspiel.PrivateInfoType, private))


def test_observers_are_made_only_of_the_observation_there_is():
    """A public-only or all-hands observer of the card game is refused (it was given the
    player's observation, own hand included, without a word), as is perfect recall;
    the dice game has no private information, so its public view is the observation.
    ``game.make_observer(params)`` with no type gives the default observer (it raised
    AttributeError)."""
    cards, dice = openspiel.load("cards"), openspiel.load("dice")
    for private in ("NONE", "ALL_PLAYERS"):
        with pytest.raises(ValueError, match=rf"python_qwinto_cards observes the public "
                                             rf"information and the observer's own .* "
                                             rf"private_info=PrivateInfoType.{private}"):
            make_observation(cards, observation_type(private))
        assert make_observation(dice, observation_type(private)).tensor.size == 89
    with pytest.raises(ValueError, match="got public_info=False"):
        make_observation(dice, observation_type("SINGLE_PLAYER", public=False))
    with pytest.raises(ValueError, match="no perfect-recall observation"):
        make_observation(cards, observation_type("SINGLE_PLAYER", recall=True))
    state = cards.new_initial_state()
    for card in range(10):
        state.apply_action(card)
    observation = make_observation(cards, observation_type("SINGLE_PLAYER"))
    observation.set_from(state, 1)
    assert list(observation.tensor) == state.observation_tensor(1)
    assert cards.make_observer({}) is not None
    with pytest.raises(ValueError, match="observation parameters are not supported"):
        cards.make_observer({"hands": True})


def test_clone_and_serialize_keep_the_state():
    game = openspiel.load("cards", num_players=2)
    state = game.new_initial_state()
    rng = random.Random(0)
    for _ in range(40):
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
        else:
            state.apply_actions([rng.choice(state.legal_actions(p)) for p in range(2)])
    clone = state.clone()
    text = pyspiel.serialize_game_and_state(game, state)
    _, restored = pyspiel.deserialize_game_and_state(text)
    for copy in (clone, restored):
        assert str(copy) == str(state)
        assert copy.observation_tensor(1) == state.observation_tensor(1)
    clone.apply_actions([clone.legal_actions(p)[0] for p in range(2)]) \
        if not clone.is_chance_node() else clone.apply_action(clone.legal_actions()[0])
    assert str(clone) != str(state)


@pytest.mark.parametrize("game", GAMES)
def test_flat_joint_actions_as_openspiel_games_give_them(game):
    """At a simultaneous node legal_actions() with no player gives the flat joint actions
    (player 0's choice varying fastest, as in OpenSpiel's C++ games), and apply_action of
    one plays the same as apply_actions of its joint action; a random game played by flat
    actions ends where the joint one does."""
    loaded = openspiel.load(game, num_players=3)
    rng = random.Random(4)
    flat_state, joint_state = loaded.new_initial_state(), loaded.new_initial_state()
    while not flat_state.is_terminal():
        if flat_state.is_chance_node():
            outcome = rng.choice([a for a, _ in flat_state.chance_outcomes()])
            flat_state.apply_action(outcome)
            joint_state.apply_action(outcome)
            continue
        each = [flat_state.legal_actions(p) for p in range(3)]
        flat = rng.choice(flat_state.legal_actions())
        assert flat_state.legal_actions() == list(range(int(np.prod(list(map(len, each))))))
        joint = [each[0][flat % len(each[0])],
                 each[1][flat // len(each[0]) % len(each[1])],
                 each[2][flat // (len(each[0]) * len(each[1]))]]
        assert flat_state.action_to_string(-2, flat) == ", ".join(
            flat_state.action_to_string(p, a) for p, a in enumerate(joint))
        flat_state.apply_action(flat)
        joint_state.apply_actions(joint)
        assert str(flat_state) == str(joint_state)
    assert flat_state.returns() == joint_state.returns()


def test_actions_a_node_does_not_offer_are_refused_and_change_nothing():
    """A chance outcome not among chance_outcomes() (it was taken: the history said 10
    where the engine rolled 6), a flat joint action out of range, a seat that is not one."""
    state = openspiel.load("dice", num_players=3).new_initial_state()
    with pytest.raises(ValueError, match=r"player must be a seat in 0..2, got 5"):
        state.legal_actions(5)
    with pytest.raises(ValueError, match=r"flat joint action 7 is not one of this "
                                         r"simultaneous node's \(0..6\)"):
        state.apply_action(7)
    state.apply_actions([28, 27, 27])  # roll one die: outcomes 1..6
    before = str(state), state.history()
    for outcome in (0, 7, 10, 100):
        with pytest.raises(ValueError, match=rf"chance outcome {outcome} is none of this "
                                             r"chance node's: \[1, 2, 3, 4, 5, 6\]"):
            state.apply_action(outcome)
        assert (str(state), state.history()) == before
    cards = openspiel.load("cards", num_players=2).new_initial_state()
    cards.apply_action(0)  # the first card dealt
    with pytest.raises(ValueError, match="chance outcome 0 is none of"):
        cards.apply_action(0)  # dealt twice
    with pytest.raises(ValueError, match="chance outcome 40 is none of"):
        cards.apply_action(40)
    random_start = openspiel.load("dice", num_players=2, random_start=True).new_initial_state()
    with pytest.raises(ValueError, match=r"chance outcome 5 is none of this chance node's: "
                                         r"\[0, 1\]"):
        random_start.apply_action(5)


@pytest.mark.parametrize("game", GAMES)
def test_chance_outcomes_only_at_chance_nodes(game):
    """At a decision node or the end the game has no chance outcomes: asking is refused
    (the card game answered with a draw, the dice game failed in a lookup), and every
    chance node's outcomes add up to one."""
    state = openspiel.load(game, num_players=2).new_initial_state()
    rng = random.Random(2)
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            assert sum(p for _, p in outcomes) == pytest.approx(1.0)
            state.apply_action(rng.choice([a for a, _ in outcomes]))
            continue
        with pytest.raises(ValueError, match=r"chance_outcomes\(\) is for chance nodes; "
                                             r"this is a simultaneous decision node"):
            state.chance_outcomes()
        state.apply_actions([rng.choice(state.legal_actions(p)) for p in range(2)])
    with pytest.raises(ValueError, match="this is a terminal node"):
        state.chance_outcomes()


# -- OpenSpiel's MCTS ----------------------------------------------------------------------
@pytest.mark.parametrize("game", GAMES)
def test_mcts_example_runs(game):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openspiel_mcts.py"), "--game", game,
         "--players", "2", "--games", "1", "--simulations", "2", "--seed", "1"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert "MCTS" in out.stdout and "win rate" in out.stdout


@pytest.mark.parametrize("args,message", [
    (["--games", "0"], "--games and --simulations must be positive"),
    (["--simulations", "-3"], "--games and --simulations must be positive"),
    (["--game", "cards", "--players", "5"], "--players: num_players must be an integer in "
                                             "1..4 for the card game")])
def test_mcts_example_refuses_bad_arguments(capsys, args, message):
    """--games 0 printed a win rate of nan, --simulations 0 failed inside MCTS (max() of
    an empty sequence), too many players with a traceback."""
    main = runpy.run_path(str(ROOT / "examples" / "openspiel_mcts.py"))["main"]
    with pytest.raises(SystemExit):
        main(args)
    assert message in capsys.readouterr().err


def test_too_many_flat_joint_actions_are_refused_not_listed():
    """A six-player entry can have hundreds of millions of flat joint actions, whose list
    takes tens of gigabytes: legal_actions() with no player refuses past the limit, and
    each player's legal actions and the flat joint action itself still serve."""
    state = openspiel.load("dice", num_players=6).new_initial_state()
    rng = random.Random(0)
    while True:
        if state.is_chance_node():
            state.apply_action(rng.choice(state.legal_actions()))
            continue
        each = [state.legal_actions(p) for p in range(6)]
        count = math.prod(map(len, each))
        if count > openspiel.MAX_FLAT_JOINT_ACTIONS:
            break
        state.apply_actions([rng.choice(legal) for legal in each])
    with pytest.raises(ValueError, match=rf"this simultaneous node has {count:,} flat joint "
                                         r"actions .* ask legal_actions\(player\) of each"):
        state.legal_actions()
    joint = state.clone()
    state.apply_action(count - 1)  # every player's last legal action
    joint.apply_actions([legal[-1] for legal in each])
    assert str(state) == str(joint)
