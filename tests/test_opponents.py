"""Opponents by name without an upward import: the registry of qwinto_env/opponents.py."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import gymnasium
import pytest

import qwinto_env  # noqa: F401  (registers Qwinto-v0)
from qwinto_env import opponents
from qwinto_env.opponents import OpponentSpecError


@pytest.fixture
def no_registration():
    """The registry as a fresh process has it, restored afterwards."""
    opponents.register_loader(None)
    yield
    opponents.register_loader(None)


def test_a_registered_loader_builds_the_opponents_named(no_registration):
    calls = []

    class Bot:
        def __init__(self, game, num_players):
            self.game, self.num_players = game, num_players

        def act(self, observation, action_mask):
            return int(action_mask.nonzero()[0][-1])

    def loader(spec, game, num_players):
        calls.append((spec, game, num_players))
        return Bot(game, num_players)

    opponents.register_loader(loader)
    env = gymnasium.make("Qwinto-v0", game="cards", num_players=3, opponents=["mine", "yours"])
    env.reset(seed=0)
    assert calls == [("mine", "cards", 3), ("yours", "cards", 3)]


def test_the_agents_loader_registered_by_hand_plays_as_before(no_registration):
    from agents import load
    opponents.register_loader(load)
    env = gymnasium.make("Qwinto-v0", opponents="expert")
    assert env.unwrapped.opponents[0].name == "expert"


def test_without_loader_a_name_is_refused_and_objects_still_play(no_registration, monkeypatch):
    monkeypatch.setattr(opponents, "entry_points", lambda group: [])
    with pytest.raises(OpponentSpecError, match="need a loader"):
        gymnasium.make("Qwinto-v0", opponents="expert")
    from agents import load
    env = gymnasium.make("Qwinto-v0", opponents=load("greedy"))
    env.reset(seed=0)


def test_importing_qwinto_env_imports_no_agent():
    code = "import sys, qwinto_env; print(sorted(m for m in sys.modules if m.startswith('agents')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(not list(entry_points(group=opponents.ENTRY_POINT_GROUP)),
                    reason="the installed package metadata has no qwinto_env.opponents entry "
                           "point (installed before it was declared: reinstall with pip -e)")
def test_the_entry_point_finds_agents_after_only_import_qwinto_env():
    code = ("import gymnasium, qwinto_env; env = gymnasium.make('Qwinto-v0', "
            "opponents='expert'); print(env.unwrapped.opponents[0].name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "expert"
