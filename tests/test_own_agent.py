"""A user's own Agent subclass with only ``act`` (as docs/agents.md describes it), played
where agents are taken: the evaluator on both engines, ``Qwinto-v0``'s opponents.

Its answer is checked where it is asked (:func:`qwinto_env.opponents.bot_action`): any
integer plays; anything else, or an action its mask forbids, is an error naming the bot
and its answer."""

import re

import gymnasium as gym
import numpy as np
import pytest
import torch

import qwinto_env  # noqa: F401 - registers Qwinto-v0
from agents import AgentSpecError, load
from agents.base import Agent
from agents.evaluate import EvaluationError, play
from qwinto_env.opponents import BotActionError

INTEGERS = {"int": int, "numpy int": np.int64, "0-d array": np.array,
            "integer tensor": torch.tensor}
BAD = {"None": (lambda a: None, "None: actions must be integers, got NoneType"),
       "float": (lambda a: float(a) + 0.7, ".7: actions must be integers, got float"),
       "bool": (lambda a: True, "True: actions must be integers, got bool"),
       "float tensor": (lambda a: torch.tensor(a + 0.5), "actions must be integers or 0-d "
                        "integer arrays, got an array of shape () and dtype float32"),
       "one-element tensor": (lambda a: torch.tensor([a]), "got an array of shape (1,)"),
       "out of range": (lambda a: 999, "999: not legal (legal: ["),
       "masked out": ("first forbidden", "not legal (legal: [")}


class Last(Agent):
    """Plays its mask's last legal action, in the form ``answer`` gives it."""

    name = "mine"

    def __init__(self, answer=int, game="dice", num_players=2):
        super().__init__(game, num_players)
        self.answer = answer

    def act(self, observation, action_mask):
        if self.answer == "first forbidden":
            return int(np.flatnonzero(np.asarray(action_mask) == 0)[0])
        return self.answer(int(np.flatnonzero(action_mask)[-1]))


@pytest.mark.parametrize("engine", ["single", "batched"])
@pytest.mark.parametrize("kind", INTEGERS)
def test_any_integer_answer_plays_on_both_engines(kind, engine):
    res = play([Last(INTEGERS[kind]), "random"], games=1, seed=0, engine=engine,
               progress=False)
    assert res.games == 1


@pytest.mark.parametrize("engine", ["single", "batched"])
@pytest.mark.parametrize("kind", BAD)
def test_a_bad_answer_names_the_bot_and_the_answer_on_both_engines(kind, engine):
    """The batched engine truncated a float and took True for action 1, the single one
    refused a tensor; None ended in int()'s TypeError on the batched engine."""
    answer, message = BAD[kind]
    with pytest.raises(EvaluationError, match=re.escape("bot Last 'mine' answered act() "
                                                        "with ") + ".*" + re.escape(message)):
        play([Last(answer), "random"], games=1, seed=0, engine=engine, progress=False)


@pytest.mark.parametrize("kind", BAD)
def test_a_bad_answer_of_an_opponent_of_the_single_agent_env_names_it(kind):
    """Qwinto-v0 truncated a float, and blamed an illegal action on the opponent's seat
    with a hint to make the learner's env forgiving."""
    answer, message = BAD[kind]
    env = gym.make("Qwinto-v0", opponents=Last(answer))
    with pytest.raises(BotActionError, match=re.escape(message)):
        obs, _ = env.reset(seed=0)
        for _ in range(50):
            obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_an_integer_tensor_opponent_plays_in_the_single_agent_env():
    env = gym.make("Qwinto-v0", opponents=Last(torch.tensor))
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        obs, _, done, _, _ = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))


class Stateful(Agent):
    """Counts its decisions from ``reset`` on, which each game (and each worker process)
    calls before its first ``act`` (a user's module:Class bot)."""

    def reset(self, seed=None):
        super().reset(seed)
        self.decisions = 0

    def act(self, observation, action_mask):
        self.decisions += 1
        return int(self.rng.choice(np.flatnonzero(action_mask)))


def test_module_class_is_a_spec_wherever_specs_are_taken(capsys):
    """``--agents module:Class`` was an unknown spec to the evaluator (rate took it):
    a spec also lets ``--workers 2`` load the user's bot in each process."""
    from agents.evaluate import main

    spec = "tests.test_own_agent:Stateful"
    agent = load(spec)
    assert (type(agent).__name__, agent.name) == ("Stateful", spec)
    res = main(["--agents", f"random,{spec}", "--games", "4", "--workers", "2", "--quiet"])
    assert res.entrants == ["random", spec] and res.games == 4
    assert spec in capsys.readouterr().out
    env = gym.make("Qwinto-v0", opponents=spec)
    env.reset(seed=0)
    assert env.unwrapped.opponents[0].name == spec


@pytest.mark.parametrize("spec, message", [
    ("tests.test_own_agent:Nothing", "cannot import Nothing from tests.test_own_agent"),
    ("no_such_module:Bot", "cannot import Bot from no_such_module"),
    ("os:getcwd", "os.getcwd is not a subclass of agents.base.Agent"),
    ("agents.base:Agent", "Agent(game='dice', num_players=2) failed: TypeError"),
])
def test_a_bad_module_class_spec_is_named(spec, message):
    with pytest.raises(AgentSpecError, match=re.escape(f"agent {spec!r}: {message}")):
        load(spec)


def test_a_module_class_takes_no_setting_its_class_does_not():
    with pytest.raises(AgentSpecError, match="takes no setting \\['tau'\\]"):
        load("tests.test_own_agent:Stateful", tau=1)


class Counting(Stateful):
    resets = 0

    def reset(self, seed=None):
        super().reset(seed)
        Counting.resets += 1


@pytest.mark.parametrize("engine, resets", [("single", 3), ("batched", 1)])
def test_reset_comes_before_each_game_on_the_single_engine_each_batch_on_the_batched(
        engine, resets):
    """What the evaluator's docstring and docs/agents.md say of a stateful agent."""
    Counting.resets = 0
    play([Counting(), "random"], games=3, seed=0, engine=engine, progress=False)
    assert Counting.resets == resets
