"""agents.load's game and player-count arguments: any integer type, clear errors."""

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
