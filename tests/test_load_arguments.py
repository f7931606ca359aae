"""agents.load's game and player-count arguments: any integer type, clear errors."""

import re

import numpy as np
import pytest

from agents import AgentSpecError, load


@pytest.mark.parametrize("players", [np.int64(3), np.int32(3), np.uint8(3)])
def test_numpy_player_counts(players):
    agent = load("expert", game="dice", num_players=players)
    assert agent.num_players == 3 and type(agent.num_players) is int


@pytest.mark.parametrize("game", [["dice"], {"dice": 1}, None, 3])
def test_game_that_is_not_a_name(game):
    with pytest.raises(AgentSpecError, match="unknown game"):
        load("random", game=game)


@pytest.mark.parametrize("players", [2.0, "2", None, True, np.float64(2)])
def test_player_count_that_is_not_an_integer(players):
    with pytest.raises(AgentSpecError, match="num_players must be an integer in 1..6"):
        load("random", num_players=players)


BAD_SETTINGS = [
    ("expert", {"tau": 0}, "expert parameter tau must be a finite number > 0, got 0"),
    ("expert", {"tau": -1.0}, "expert parameter tau must be a finite number > 0"),
    ("expert", {"tau": float("nan")}, "expert parameter tau must be a finite number"),
    ("expert", {"top_share": float("inf")}, "top_share must be a finite number >= 0 and <= 1"),
    ("expert", {"w_pent": "x"}, "expert parameter w_pent must be a finite number, got 'x'"),
    ("expert", {"tau": True}, "expert parameter tau"),
    ("expert", {"bogus": 1}, r"unknown expert parameter\(s\) \['bogus'\]"),
    ("greedy", {"tolerance": float("nan")}, "greedy setting tolerance must be a finite number >= 0"),
    ("greedy", {"tolerance": -1}, "greedy setting tolerance"),
    ("greedy", {"tolerance": "x"}, "greedy setting tolerance"),
    ("greedy", {"tol": 1}, r"agent 'greedy' takes no setting \['tol'\]; its settings: \['tolerance'\]"),
    ("random", {"seed": 1}, r"agent 'random' takes no setting \['seed'\]; its settings: none"),
    ("pretrained:dice-2p", {"deterministic": "False"},
     "policy setting deterministic must be True or False, got 'False'"),
    ("pretrained:dice-2p", {"temperature": 1}, r"takes no setting \['temperature'\]"),
    ("lookahead:pretrained:dice-2p", {"policy_weight": "x"}, "lookahead setting policy_weight"),
    ("lookahead:pretrained:dice-2p", {"gamma": 1.5}, "lookahead setting gamma must be a finite "
                                                     "number >= 0 and <= 1"),
    ("lookahead:pretrained:dice-2p", {"samples": 8}, r"takes no setting \['samples'\]"),
    ("lookahead:pretrained:dice-2p", {"data": {}}, r"takes no setting \['data'\]"),
    ("search:pretrained:dice-2p", {"data": {}}, r"unknown search settings \['data'\]"),
    *[(spec, {"network": None}, re.escape(f"agent '{spec}' takes its network from the checkpoint"))
      for spec in ("pretrained:dice-2p", "lookahead:pretrained:dice-2p",
                   "search[samples=2]:pretrained:dice-2p")],
]


@pytest.mark.parametrize("spec, settings, message", BAD_SETTINGS)
def test_bad_agent_settings_are_refused_naming_them(spec, settings, message):
    """A setting of the wrong type, out of range or unknown: AgentSpecError naming it, not
    a bot that loses every game (tau=-1, tolerance=nan) or a bare TypeError."""
    with pytest.raises(AgentSpecError, match=message):
        load(spec, game="dice", num_players=2, **settings)


def test_good_agent_settings_are_taken():
    assert load("expert", tau=np.float32(0.2)).params.tau == pytest.approx(0.2)
    assert load("greedy", tolerance=2).tolerance == 2.0
    assert load("pretrained:dice-2p", deterministic=np.bool_(False)).deterministic is False
    assert load("lookahead:pretrained:dice-2p", gamma=1).gamma == 1.0
