"""The single-agent Gymnasium env (Qwinto-v0): checkers, skipping, rewards, seeding,
opponents, masks for sb3-contrib, bad input."""

import copy
import pickle
import warnings

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import qwinto_env
from agents import Agent, AgentSpecError
from qwinto_env.game import IllegalActionError
from qwinto_env.spec.base import terminal_rewards
from qwinto_env.single import OpponentSpecError, QwintoSingleEnv, RenderModeError

TABLES = [("dice", 1), ("dice", 2), ("dice", 3), ("dice", 6), ("cards", 1), ("cards", 2),
          ("cards", 3), ("cards", 4)]


def make(game="dice", players=2, **kwargs):
    return gymnasium.make("Qwinto-v0", game=game, num_players=players, **kwargs)


def episode(env, seed, policy_seed=0, options=None):
    """A masked-random learner episode: list of (obs, reward, terminated, info)."""
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed, options=options)
    steps = [(obs, 0.0, False, info)]
    for _ in range(1000):
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        assert not truncated
        steps.append((obs, reward, terminated, info))
        if terminated:
            return steps
    raise AssertionError("episode did not end")


class LoopRandom(Agent):
    """A test-local random agent: uniform over the mask, from its own generator."""

    name = "loop-random"

    def act(self, observation, action_mask):
        return int(self.rng.choice(np.flatnonzero(action_mask)))


# -- the checkers ---------------------------------------------------------------------------

@pytest.mark.parametrize("game,players", TABLES)
def test_gymnasium_and_sb3_checkers(game, players):
    # Both checkers sample unmasked actions: forgive them (documented in the module).
    # Made through gymnasium.make so the checker can also try the other render modes.
    env = make(game, players, learner_seat="random", illegal_action="pass").unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_check_env(env)
        sb3_check_env(env, warn=True)
    assert [str(w.message) for w in caught] == []


def test_registered_and_exported():
    env = gymnasium.make("Qwinto-v0", game="cards", num_players=3, opponents=["expert"])
    assert isinstance(env.unwrapped, qwinto_env.QwintoSingleEnv)
    assert env.observation_space == qwinto_env.parallel_env(
        game="cards", num_players=3).observation_space("player_0")
    assert env.action_space.n == 88


# -- stepping, skipping and rewards ---------------------------------------------------------

@pytest.mark.parametrize("game,players", TABLES)
def test_every_step_is_a_decision_and_rewards_add_up(game, players):
    reward = "score" if players == 1 else "win"
    env = make(game, players, learner_seat="random", reward=reward)
    seats = set()
    for seed in range(8):
        steps = episode(env, seed)
        for obs, _, terminated, info in steps[:-1]:
            assert obs["action_mask"].sum() >= 2, "the learner was asked without a choice"
            assert not terminated
        final = steps[-1][3]
        seat = final["learner_seat"]
        seats.add(seat)
        total = sum(r for _, r, _, _ in steps)
        if reward == "score":
            assert total == final["scores"][seat] == final["score"]
        else:
            assert total == terminal_rewards(final["scores"], "win")[seat]
        assert np.array_equal(final["sheet"], env.unwrapped.table.game.sheet(seat))
    if players > 1:
        assert len(seats) > 1, "learner_seat='random' never moved"


@settings(max_examples=60, deadline=None)
@given(table=st.sampled_from(TABLES), seed=st.integers(0, 2**32 - 1),
       reward=st.sampled_from(["win", "margin", "score"]),
       opponents=st.sampled_from(["random", "greedy", "expert"]))
def test_episode_invariants_on_random_games(table, seed, reward, opponents):
    game, players = table
    if players == 1:
        reward, opponents = ("margin" if reward == "win" else reward), None
    env = make(game, players, learner_seat="random", reward=reward, opponents=opponents)
    steps = episode(env, seed, policy_seed=seed)
    final = steps[-1][3]
    seat, scores = final["learner_seat"], final["scores"]
    for obs, _, terminated, info in steps:
        own = np.rint(obs["observation"][:27] * 18).astype(int).reshape(3, 9)
        assert np.array_equal(own, info["sheet"])  # ego-centric: own sheet first
        assert info["learner_seat"] == seat and info["score"] == info["scores"][seat]
        assert all(a["seat"] != seat for a in info["opponent_actions"])
        if not terminated:
            assert obs["action_mask"].sum() >= 2
    total = sum(r for _, r, _, _ in steps)
    if reward == "score":
        assert total == scores[seat]
    else:
        assert total == terminal_rewards(scores, reward)[seat]
    assert env.unwrapped.table.game.done


def test_margin_reward_and_dense_score_with_opponents():
    env = make("dice", 3, opponents="greedy", reward="margin", learner_seat=2)
    steps = episode(env, 5)
    scores = steps[-1][3]["scores"]
    assert sum(r for _, r, _, _ in steps) == scores[2] - max(scores[:2])
    env = make("cards", 2, opponents="expert", reward="score")
    steps = episode(env, 5)
    assert sum(r for _, r, _, _ in steps) == steps[-1][3]["score"]


def test_action_masks_is_the_observation_mask():
    env = make("cards", 3)
    obs, _ = env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(20):
        mask = env.unwrapped.action_masks()
        assert mask.dtype == bool and np.array_equal(mask, obs["action_mask"] == 1)
        obs, _, terminated, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated:
            break


@pytest.mark.parametrize("players", [2, 3])
def test_card_opponents_plays_are_reported_without_their_hand_slot(players):
    """A play's hand slot tells where the card lay in the opponent's sorted hidden hand:
    the learner is told the stacks and the number of cards, from the first slots."""
    from qwinto_env.spec.cards import PLAYS

    real = []

    class Recording(Agent):
        def act(self, observation, action_mask):
            action = int(self.rng.choice(np.flatnonzero(action_mask)))
            real.append(action)
            return action

    bots = [Recording("cards", players) for _ in range(players - 1)]
    env = make("cards", players, opponents=bots)
    told = [a for seed in range(6) for *_, info in episode(env, seed)
            for a in info["opponent_actions"]]
    real_plays = [a for a in real if a in PLAYS]
    told_plays = [a["action"] for a in told if a["phase"] == "play"]
    assert len(told_plays) == len(real_plays) > 30
    assert any(PLAYS[a][0] not in ((0,), (0, 1)) for a in real_plays)
    for shown, played in zip(told_plays, real_plays):
        slots, stacks = PLAYS[shown]
        assert stacks == PLAYS[played][1] and slots == tuple(range(len(PLAYS[played][0])))


def test_infos_pass_through_and_opponent_actions():
    env = make("dice", 3, opponents="expert", learner_seat=1)
    steps = episode(env, 3)
    table_keys = {"sheet", "misthrows", "score", "phase", "roll", "active_player",
                  "reroll_available"}
    acted = []
    for _, _, _, info in steps:
        assert table_keys <= info.keys()
        assert info["learner_seat"] == 1 and len(info["scores"]) == 3
        acted += info["opponent_actions"]
    assert acted, "the opponents never decided anything"
    assert {a["seat"] for a in acted} == {0, 2}
    assert {a["phase"] for a in acted} <= {"choose", "reroll", "entry"}
    assert any(28 <= a["action"] <= 34 for a in acted)  # they rolled dice
    cards_info = episode(make("cards", 2), 0)[1][3]
    assert "hand" in cards_info and "stacks" in cards_info


def test_learner_sees_its_own_seat_first():
    env = make("dice", 3, learner_seat=2, reward="score")
    steps = episode(env, 11)
    obs, _, _, info = steps[-1]
    own = np.rint(obs["observation"][:27] * 18).astype(int).reshape(3, 9)
    assert np.array_equal(own, info["sheet"])


# -- seeding ----------------------------------------------------------------------------------

@pytest.mark.parametrize("game", ["dice", "cards"])
def test_same_seed_same_episode(game):
    def run():
        env = make(game, 3, opponents=["random", "expert"], learner_seat="random")
        return [episode(env, seed) for seed in (4, None, None)]

    a, b = run(), run()
    for ep_a, ep_b in zip(a, b):
        assert len(ep_a) == len(ep_b)
        for (oa, ra, _, ia), (ob, rb, _, ib) in zip(ep_a, ep_b):
            assert np.array_equal(oa["observation"], ob["observation"]) and ra == rb
            assert ia["opponent_actions"] == ib["opponent_actions"]


def test_seed_changes_the_random_opponents():
    env = make("dice", 2, opponents="random")
    first = [i["opponent_actions"] for *_, i in episode(env, 1)]
    second = [i["opponent_actions"] for *_, i in episode(env, 2)]
    assert first != second


def test_reset_options_fix_seat_and_start_player():
    env = make("dice", 4, learner_seat="random")
    _, info = env.reset(seed=0, options={"learner_seat": 3, "start_player": 3})
    assert info["learner_seat"] == 3 and info["active_player"] == 3
    assert info["phase"] == "choose" and info["skipped_steps"] == 0
    with pytest.raises(OpponentSpecError, match="learner_seat"):
        env.reset(options={"learner_seat": 4})



@pytest.mark.parametrize("clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))])
@pytest.mark.parametrize("game", ["dice", "cards"])
def test_a_clone_taken_mid_game_plays_on_alone(game, clone):
    """Tree search clones the env mid-game (docs/single.md): the clone, its opponents and
    their generators play on as the original does, and apart from it."""
    env = make(game, 3, opponents=["random", "expert"], learner_seat="random")
    obs, _ = env.reset(seed=5)
    for _ in range(3):
        obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    twin = clone(env)

    def play_on(copy_of):
        rng, seen, now = np.random.default_rng(1), [], obs
        for _ in range(200):
            now, reward, terminated, _, info = copy_of.step(
                int(rng.choice(np.flatnonzero(now["action_mask"]))))
            seen.append((now["observation"].tobytes(), reward, info["opponent_actions"]))
            if terminated:
                return seen
        raise AssertionError("no end in 200 decisions")

    ours = play_on(env)
    assert play_on(twin) == ours

# -- illegal actions ---------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [-1, 37, 1.5, None, "3", True])
def test_illegal_action_raises_and_changes_nothing(bad):
    def trajectory(poke):
        env = make("dice", 2, opponents="random")
        obs, _ = env.reset(seed=9)
        rng = np.random.default_rng(0)
        out = []
        for _ in range(12):
            if poke:
                before = env.unwrapped.table.game.features()
                with pytest.raises(IllegalActionError):
                    env.step(bad)
                assert np.array_equal(before, env.unwrapped.table.game.features())
            obs, r, term, _, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            out.append(obs["observation"])
            if term:
                break
        return out

    assert all(np.array_equal(x, y) for x, y in zip(trajectory(False), trajectory(True)))


def test_masked_out_action_and_step_after_end():
    env = make("dice", 2)
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError, match="not legal now"):
        env.step(illegal)
    steps = episode(env, 0)
    assert steps[-1][2]
    with pytest.raises(IllegalActionError, match="game is over"):
        env.step(27)


def test_step_before_the_first_reset_says_so():
    env = QwintoSingleEnv(game="dice", num_players=2)  # gymnasium.make's wrapper would say it
    with pytest.raises(IllegalActionError, match="no game has started; call reset"):
        env.step(27)


def test_illegal_action_pass_mode_penalises():
    env = make("dice", 2, illegal_action="pass", illegal_penalty=-2.0, reward="score")
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs, reward, _, _, info = env.step(illegal)
    assert reward <= -2.0 and info["illegal_action"] is True
    _, _, _, _, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert info["illegal_action"] is False


# -- opponents ---------------------------------------------------------------------------------

@pytest.mark.parametrize("game", ["dice", "cards"])
@pytest.mark.parametrize("spec", ["random", "greedy", "expert"])
def test_episode_with_each_opponent_spec(game, spec):
    env = make(game, 3, opponents=spec, reward="score")
    assert all(o.name == spec for o in env.unwrapped.opponents)
    steps = episode(env, 0)
    assert steps[-1][2]


def test_checkpoint_and_agent_instance_opponents(tmp_path):
    from agents.policy import PolicyNetwork, save_checkpoint
    from qwinto_env.dice import observation_size

    path = tmp_path / "policy.pt"
    save_checkpoint(path, PolicyNetwork(observation_size(3), 37, hidden=(16,)), "dice", 3,
                    observation_size(3), 37)
    mine = LoopRandom(game="dice", num_players=3)
    env = make("dice", 3, opponents=[str(path), mine], learner_seat=1)
    assert env.unwrapped.opponent_at(2).name == "policy.pt"
    assert env.unwrapped.opponent_at(0) is mine
    for seat in (3, -1, "0", 1.0):  # seats the table does not have: not a wrapped-around one
        with pytest.raises(ValueError, match=rf"seat must be a seat in 0\.\.2, got {seat!r}"):
            env.unwrapped.opponent_at(seat)
    with pytest.raises(ValueError, match="learner's seat"):
        env.unwrapped.opponent_at(np.int64(1))
    steps = episode(env, 1)
    assert any(a["seat"] == 0 for _, _, _, i in steps for a in i["opponent_actions"])


@pytest.mark.parametrize("kwargs,error,match", [
    ({"opponents": "nobody"}, AgentSpecError, "unknown agent spec"),
    ({"opponents": ["random", "random"]}, OpponentSpecError, "one per other seat"),
    ({"opponents": 3}, OpponentSpecError, "opponents: 3 is no opponent"),
    ({"opponents": [None]}, OpponentSpecError, "opponents: None is no opponent"),
    ({"opponents": LoopRandom(game="cards")}, OpponentSpecError, "game"),
    ({"opponents": LoopRandom(num_players=3)}, OpponentSpecError, "num_players"),
    ({"learner_seat": 2}, OpponentSpecError, "learner_seat"),
    ({"learner_seat": "first"}, OpponentSpecError, "learner_seat"),
    ({"render_mode": "rgb"}, RenderModeError, "render_mode"),
    ({"reward": "money"}, ValueError, "reward"),
    ({"game": "chess"}, ValueError, "unknown game"),
])
def test_bad_configuration(kwargs, error, match):
    with pytest.raises(error, match=match):
        QwintoSingleEnv(**{"game": "dice", "num_players": 2, **kwargs})



class ResetsWithoutSeed(LoopRandom):
    def reset(self):  # clears its own state, takes no seed
        pass


def test_an_opponent_whose_reset_takes_no_seed_is_refused_when_given():
    """Every seeded reset calls ``opponent.reset(seed=...)``: such an opponent made the
    first reset fail half-way (the env's generator already reseeded). It is refused
    by gymnasium.make, naming the method and the signature to give it."""
    with pytest.raises(OpponentSpecError, match=r"reset\(\) takes no seed.*"
                                                r"define reset\(self, seed=None\)"):
        make("dice", 2, opponents=ResetsWithoutSeed())

def test_comma_separated_opponents_point_to_a_list():
    # The command line's form; as one spec it was an "unknown agent spec".
    with pytest.raises(OpponentSpecError, match=r"'random,greedy' names several agents: give "
                                                r"them as a list, \['random', 'greedy'\]"):
        make("dice", 3, opponents="random,greedy")
    env = make("dice", 3, opponents=["random", "greedy"])
    assert [o.name for o in env.unwrapped.opponents] == ["random", "greedy"]


def test_solo_has_no_opponents():
    env = make("dice", 1)
    assert env.unwrapped.opponents == [] and env.unwrapped.reward_kind == "score"
    with pytest.raises(OpponentSpecError, match="solo"):
        QwintoSingleEnv(num_players=1, opponents="expert")
    # one spec per other seat: none (a script building opponents[:num_players - 1])
    assert make("dice", 1, opponents=[]).unwrapped.opponents == []
    assert QwintoSingleEnv(num_players=1, opponents=()).opponents == []


# -- rendering -----------------------------------------------------------------------------------

def test_render_modes(capsys):
    env = make("cards", 2, render_mode="ansi", learner_seat=1)
    env.reset(seed=0)
    text = env.render()
    assert "Qwinto cards" in text and "(learner: player 1)" in text
    env = make("dice", 2, render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert "Qwinto dice" in capsys.readouterr().out


# -- sb3-contrib ---------------------------------------------------------------------------------

def test_sb3_contrib_finds_the_masks_through_wrappers_and_vec_envs():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from sb3_contrib.common.wrappers import ActionMasker

    env = make("dice", 2)
    env.reset(seed=0)
    assert is_masking_supported(env)
    assert np.array_equal(get_action_masks(env), env.unwrapped.action_masks())
    wrapped = ActionMasker(env, lambda e: e.unwrapped.action_masks())  # the documented form
    assert np.array_equal(get_action_masks(wrapped), env.unwrapped.action_masks())
    for cls in (DummyVecEnv, SubprocVecEnv):
        # "module:id" makes a fresh worker process import qwinto_env (which registers the id).
        venv = make_vec_env("qwinto_env:Qwinto-v0", n_envs=2, vec_env_cls=cls,
                            env_kwargs={"game": "cards", "num_players": 2})
        try:
            obs = venv.reset()
            masks = get_action_masks(venv)
            assert masks.shape == (2, 88) and masks.dtype == bool
            assert np.array_equal(masks, obs["action_mask"] == 1)
        finally:
            venv.close()


def test_maskable_ppo_trains_on_the_env():
    from sb3_contrib import MaskablePPO

    env = make("dice", 2, opponents="greedy")
    model = MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=2,
                        seed=0, policy_kwargs={"net_arch": [32]})
    model.learn(256)  # every action it takes is checked by the env (illegal ones raise)
    assert model.num_timesteps >= 256
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(),
                              deterministic=True)
    assert obs["action_mask"][int(action)] == 1
