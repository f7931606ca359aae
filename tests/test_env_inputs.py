"""Bad input to the env front-ends (parallel, AEC, ``Qwinto-v0``): refused resets change
nothing, numpy seeds equal Python seeds, unknown options name themselves, and the
illegal-action error tells about ``illegal_action="pass"``."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import qwinto_env
from qwinto_env.dice import DiceGame
from qwinto_env.game import IllegalActionError

GAMES = ["dice", "cards"]
BAD_SEEDS = [-1, np.int64(-3), 1.5, np.float64(2.0), "3", b"3", True, np.bool_(False), [3],
             (3,), 3 + 0j]
BAD_OPTIONS = {  # options refused by both games, then by the card game only
    "both": [{"start_player": 7}, {"start_player": -1}, {"start_player": "0"},
             {"start_player": True}, {"start_player": 1.0}, {"start_player": np.float32(1)},
             "start_player", [("start_player", 1)], 3],
    "cards": [{"deck": [1, 2, 3]}, {"deck": list(range(31)) + [0]}, {"deck": "abc"},
              {"deck": [float(c) for c in range(32)]}, {"deck": 5},
              {"deck": list(range(32)), "start_player": 9}],
}


def bad_resets(game: str) -> list[dict]:
    """``reset`` keyword arguments that must be refused, with a good seed or none."""
    options = BAD_OPTIONS["both"] + (BAD_OPTIONS["cards"] if game == "cards" else [])
    return ([{"seed": s} for s in BAD_SEEDS] + [{"seed": 11, "options": o} for o in options]
            + [{"options": o} for o in options])


# -- three front-ends behind one small interface: reset, then one masked-random step --------

class Parallel:
    def __init__(self, game, **kw):
        self.env = qwinto_env.parallel_env(game=game, num_players=3, **kw)

    def reset(self, **kw):
        self.obs, _ = self.env.reset(**kw)
        return self.view()

    def step(self, rng):
        actions = {a: int(rng.choice(np.flatnonzero(o["action_mask"])))
                   for a, o in self.obs.items()}
        self.obs, rewards, *_ = self.env.step(actions)
        return self.view() + repr(rewards) if self.env.agents else None

    def view(self):
        return b"".join(o["observation"].tobytes() for o in self.obs.values()).hex()


class AEC:
    def __init__(self, game, **kw):
        self.env = qwinto_env.env(game=game, num_players=3, **kw)

    def reset(self, **kw):
        self.env.reset(**kw)
        return self.view()

    def step(self, rng):
        obs, _, term, trunc, _ = self.env.last()
        self.env.step(None if term or trunc else
                      int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        return self.view() if self.env.agents else None

    def view(self):
        obs, reward, *_ = self.env.last()
        return f"{self.env.agent_selection} {reward} {obs['observation'].tobytes().hex()}"


class Single:
    def __init__(self, game, **kw):
        self.env = gymnasium.make("Qwinto-v0", game=game, num_players=3, **kw)

    def reset(self, **kw):
        self.obs, _ = self.env.reset(**kw)
        return self.obs["observation"].tobytes().hex()

    def step(self, rng):
        self.obs, reward, term, *_ = self.env.step(
            int(rng.choice(np.flatnonzero(self.obs["action_mask"]))))
        return None if term else f"{reward} {self.obs['observation'].tobytes().hex()}"


FRONT_ENDS = [Parallel, AEC, Single]


def trajectory(env, reset: dict, refused: list[dict] = (), at: int = 0) -> list[str]:
    """Reset with ``reset``, play a masked-random game (and the start of the next, reset
    without a seed, which continues the generators); after ``at`` steps try each of
    ``refused``, which must raise ValueError."""
    rng = np.random.default_rng(0)
    out = [env.reset(**reset)]
    for episode in range(2):
        for step in range(10_000):
            if episode == 0 and step == at:
                for bad in refused:
                    with pytest.raises(ValueError):
                        env.reset(**bad)
                out.append(f"{len(refused)} resets refused")
            view = env.step(rng)
            if view is None:
                break
            out.append(view)
        out.append(env.reset())
    return out


@pytest.mark.parametrize("front_end", FRONT_ENDS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("random_start", [False, True])
def test_a_refused_reset_changes_nothing(front_end, game, random_start):
    refused = bad_resets(game)
    if front_end is Single:
        refused += [{"options": {"learner_seat": 3}}, {"seed": 2, "options": {"learner_seat": -1}},
                    {"seed": 2, "options": {"learner_set": 1}}, {"options": {"seat": 1}}]
    for at in (0, 7):  # right after the reset, and within the game
        reference = trajectory(front_end(game, random_start=random_start), {"seed": 5}, [], at)
        poked = trajectory(front_end(game, random_start=random_start), {"seed": 5}, refused, at)
        assert f"{len(refused)} resets refused" in poked
        assert poked == [f"{len(refused)} resets refused" if v == "0 resets refused" else v
                         for v in reference]


def test_unknown_reset_options_of_the_gymnasium_env_are_named():
    # A misspelt learner_seat would train from seat 0 without a word.
    env = gymnasium.make("Qwinto-v0", num_players=3)
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) 'learner_set' for the "
                                         r"dice game; accepted: learner_seat, start_player$"):
        env.reset(seed=0, options={"learner_set": 1})
    with pytest.raises(ValueError, match="'deck'"):  # a card-game option
        env.reset(options={"deck": list(range(32))})
    cards = gymnasium.make("Qwinto-v0", game="cards", num_players=3)
    _, info = cards.reset(seed=0, options={"deck": list(range(32)), "learner_seat": 2})
    assert info["learner_seat"] == 2
    # The PettingZoo envs ignore other keys: PettingZoo's api_test resets with them.
    qwinto_env.parallel_env().reset(seed=0, options={"options": 1})


@pytest.mark.parametrize("front_end", FRONT_ENDS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("game", GAMES)
def test_numpy_integer_seeds_are_python_seeds(front_end, game):
    reference = trajectory(front_end(game), {"seed": 3})
    for seed in (np.int64(3), np.uint32(3), np.int8(3), np.uint64(3)):
        assert trajectory(front_end(game), {"seed": seed}) == reference
    assert trajectory(front_end(game), {"seed": 4}) != reference
    big = trajectory(front_end(game), {"seed": 2**70})  # as large as Gymnasium allows
    assert big == trajectory(front_end(game), {"seed": 2**70})


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
def test_bad_seeds_get_a_clear_error(seed):
    for env in (qwinto_env.parallel_env(), qwinto_env.env(), gymnasium.make("Qwinto-v0"),
                DiceGame()):
        with pytest.raises(ValueError, match=r"seed must be None or a non-negative integer"):
            env.reset(seed=seed)


def test_a_bad_deck_leaves_the_card_game_and_its_generator_as_they_were():
    env = qwinto_env.parallel_env(game="cards")
    env.reset(seed=1)
    state = (env.game.rng.getstate(), repr(env.game.hands), env.game.features().tobytes())
    with pytest.raises(ValueError, match="deck must be a permutation"):
        env.reset(seed=5, options={"deck": [1, 2, 3]})
    assert (env.game.rng.getstate(), repr(env.game.hands),
            env.game.features().tobytes()) == state


# -- constructor options --------------------------------------------------------------------

@pytest.mark.parametrize("make,name", [
    (qwinto_env.parallel_env, r"qwinto_env\.parallel_env\(\)"),
    (qwinto_env.env, r"qwinto_env\.env\(\)"),
    (lambda **kw: gymnasium.make("Qwinto-v0", **kw), r'gymnasium\.make\("Qwinto-v0"\)')])
def test_unknown_options_are_named_with_the_accepted_ones(make, name):
    with pytest.raises(TypeError, match=rf"{name} got unknown option\(s\) 'max_cycle'") as err:
        make(max_cycle=100)
    assert "DiceGame" not in str(err.value)
    assert "accepted: game, illegal_action, illegal_penalty" in str(err.value)
    with pytest.raises(TypeError, match="'empty_pile'"):  # a card-game option
        make(game="dice", empty_pile="end")
    with pytest.raises(TypeError, match="'bar', 'foo'"):
        make(foo=1, bar=2)
    with pytest.raises(TypeError, match="'seed'"):  # reset(seed=...) seeds
        make(seed=3)
    assert "empty_pile" in str(pytest.raises(TypeError, make, game="cards", foo=1).value)
    make(game="cards", empty_pile="end")  # accepted where it applies


def test_max_cycles_in_the_gymnasium_env_points_to_max_episode_steps():
    with pytest.raises(TypeError, match=r"'max_cycles'.*max_episode_steps=k"):
        gymnasium.make("Qwinto-v0", max_cycles=10)
    env = gymnasium.make("Qwinto-v0", max_episode_steps=3, opponents="random")
    env.reset(seed=0)
    truncated = [env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))[3]
                 for _ in range(3)]
    assert truncated == [False, False, True]


@pytest.mark.parametrize("kwargs,match", [
    ({"random_start": "no"}, "random_start must be True or False"),
    ({"random_start": 1}, "random_start must be True or False"),
    ({"illegal_penalty": "a lot"}, "illegal_penalty must be a finite number"),
    ({"illegal_penalty": float("nan")}, "illegal_penalty must be a finite number"),
    ({"illegal_penalty": True}, "illegal_penalty must be a finite number"),
])
def test_settings_that_would_be_silently_misread_are_refused(kwargs, match):
    for make in (qwinto_env.parallel_env, lambda **kw: gymnasium.make("Qwinto-v0", **kw)):
        with pytest.raises(ValueError, match=match):
            make(**kwargs)
    assert qwinto_env.parallel_env(illegal_penalty=np.float32(-2), random_start=np.bool_(True))


@pytest.mark.parametrize("chance", [(1.9, 2.2, 3), "123", 5, (1, 2), (True, 1, 1), (1, 2, 7),
                                    np.array([1.0, 2.0, 3.0])], ids=repr)
def test_dice_chance_must_be_three_integer_faces(chance):
    game = DiceGame()
    with pytest.raises(ValueError, match="3 faces in 1..6, integers"):
        game.step([34, 27], chance=chance)
    assert game.phase == 0 and game.dice == (0, 0, 0)
    game.step([34, 27], chance=np.array([1, 2, 3]))
    assert game.dice == (1, 2, 3)


# -- the error users of unmasked algorithms meet ---------------------------------------------

def test_the_illegal_action_error_names_the_pass_option_of_each_env():
    par = qwinto_env.parallel_env()
    par.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r'qwinto_env.parallel_env\(\.\.\., '
                                                 r'illegal_action="pass"\)'):
        par.step({"player_0": 27, "player_1": 27})
    aec = qwinto_env.env()
    aec.reset(seed=0)
    with pytest.raises(IllegalActionError,
                       match=r'qwinto_env.env\(\.\.\., illegal_action="pass"\)'):
        aec.step(27)
    single = gymnasium.make("Qwinto-v0")
    single.reset(seed=0)
    with pytest.raises(IllegalActionError,
                       match=r'gymnasium.make\("Qwinto-v0", \.\.\., illegal_action="pass"\)'):
        single.step(27)


@pytest.mark.parametrize("game", GAMES)
def test_checkers_and_plain_ppo_meet_the_hint(game):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    hint = r'gymnasium.make\("Qwinto-v0", \.\.\., illegal_action="pass"\)'
    with pytest.raises(IllegalActionError, match=hint):
        check_env(gymnasium.make("Qwinto-v0", game=game).unwrapped)
    with pytest.raises(IllegalActionError, match=hint):
        sb3_check_env(gymnasium.make("Qwinto-v0", game=game))
    model = PPO("MultiInputPolicy", gymnasium.make("Qwinto-v0", game=game), n_steps=32,
                batch_size=32, seed=0, device="cpu")
    with pytest.raises(IllegalActionError, match=hint):
        model.learn(64)
    # and with the option the same algorithm runs
    PPO("MultiInputPolicy", gymnasium.make("Qwinto-v0", game=game, illegal_action="pass"),
        n_steps=32, batch_size=32, seed=0, device="cpu").learn(64)


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("bad", [None, "3", 1.5, np.array([3]), True])
def test_pass_mode_still_refuses_what_is_no_integer(game, bad):
    """``illegal_action="pass"`` forgives moves, not types: a caller sending ``None`` or a
    string would otherwise train on the penalty every step without a word. The refusal
    changes nothing: a legal step then plays as on an env that never saw it."""
    hint = "replaces only integer actions"

    def parallel():
        env = qwinto_env.parallel_env(game=game, illegal_action="pass")
        return env, env.reset(seed=3)[0]

    par, obs = parallel()
    with pytest.raises(IllegalActionError, match=hint):
        par.step({"player_0": bad, "player_1": 0})
    legal = {a: int(np.flatnonzero(o["action_mask"])[0]) for a, o in obs.items()}
    after = par.step(legal)[0]
    fresh = parallel()[0].step(legal)[0]
    assert all((after[a]["observation"] == fresh[a]["observation"]).all() for a in legal)
    aec = qwinto_env.env(game=game, illegal_action="pass")
    aec.reset(seed=3)
    with pytest.raises(IllegalActionError, match=hint):
        aec.step(bad)
    assert aec.agent_selection == "player_0"
    single = gymnasium.make("Qwinto-v0", game=game, illegal_action="pass")
    single.reset(seed=3)
    with pytest.raises(IllegalActionError, match=hint):
        single.step(bad)
    assert single.step(0)[4]["illegal_action"]       # an integer is still forgiven



@pytest.mark.parametrize("bad, says", [(np.array([3]), r"shape \(1,\) and dtype int64"),
                                       (np.array(3.0), r"shape \(\) and dtype float64"),
                                       (np.array(True), r"shape \(\) and dtype bool")])
def test_an_array_action_is_refused_with_its_shape_and_dtype(bad, says):
    """0-d integer arrays are actions (a policy's ``predict`` gives them), so "got ndarray"
    alone misled: the refusal names the array's shape and dtype. Numpy integers and 0-d
    integer arrays of any width play as the Python int."""
    def play(action):
        env = gymnasium.make("Qwinto-v0")
        obs, _ = env.reset(seed=3)
        return env.step(action)[0]["observation"]

    env = gymnasium.make("Qwinto-v0")
    env.reset(seed=3)
    with pytest.raises(IllegalActionError, match=r"0-d integer arrays, got an array of " + says):
        env.step(bad)
    legal = int(np.flatnonzero(env.reset(seed=3)[0]["action_mask"])[-1])
    for same in (np.int32(legal), np.uint8(legal), np.array(legal), np.array(legal, np.int16)):
        assert np.array_equal(play(same), play(legal))

# -- the agent lists a user holds, agents that are none, steps before a game ----------------

def masked_game(env, seed: int) -> list[int]:
    """A masked-random parallel game from ``reset(seed=seed)``; the final scores."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    while env.agents:  # both games end by their rules
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"])))
                            for a in env.agents})
    return env.game.scores()


@pytest.mark.parametrize("game", GAMES)
def test_editing_the_parallel_agent_lists_does_not_change_who_acts(game):
    """``agents`` and ``possible_agents`` are the user's lists: a user who drops an agent
    from them must not make the env take a short joint action (a 3-seat game stepped
    with two actions, the third seat's action given to the second)."""
    env = qwinto_env.parallel_env(game=game, num_players=3)
    obs, _ = env.reset(seed=5)
    env.agents.remove("player_1")
    env.possible_agents.append("player_9")
    actions = {a: int(np.flatnonzero(obs[a]["action_mask"])[0]) for a in ("player_0", "player_2")}
    with pytest.raises(IllegalActionError, match="player_1.*missing"):
        env.step(actions)
    twin = qwinto_env.parallel_env(game=game, num_players=3)
    assert masked_game(env, seed=5) == masked_game(twin, seed=5)


@pytest.mark.parametrize("game", GAMES)
def test_editing_the_aec_agents_does_not_stop_the_cycle(game):
    """The AEC env's turn order is its own: removing an agent from ``env.agents`` in the
    first cycle used to end the cycle early and step the table without that agent."""
    def play(edit: bool) -> list[int]:
        env, rng = qwinto_env.env(game=game, num_players=3), np.random.default_rng(1)
        env.reset(seed=1)
        if edit:
            env.agents.remove("player_2")
        for agent in env.agent_iter(10_000):
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else
                     int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        return env.unwrapped.game.scores()
    assert play(edit=True) == play(edit=False)


@pytest.mark.parametrize("game", GAMES)
def test_an_unknown_agent_is_named_with_the_agents(game):
    parallel, aec = qwinto_env.parallel_env(game=game), qwinto_env.env(game=game)
    aec.reset(seed=0)
    for ask in (parallel.observation_space, parallel.action_space, aec.observation_space,
                aec.action_space, aec.observe):
        with pytest.raises(KeyError, match="unknown agent 'bob'; the agents are player_0, "):
            ask("bob")


def test_a_parallel_step_before_reset_says_to_reset():
    env = qwinto_env.parallel_env()
    with pytest.raises(IllegalActionError, match=r"no game in progress \(reset\(\) was not"):
        env.step({"player_0": 28, "player_1": 27})
