"""Every front end seats every player count of its game and refuses the others with the
game spec's one reason (``GameSpec.player_count_problem``), after its own name for the
setting."""

import re

import gymnasium
import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

import qwinto_env
import train
from agents import evaluate, load
from agents.base import AgentSpecError
from agents.trainers.config import ConfigError, load_config
from qwinto_env import play, qwinto_cards_v0, qwinto_dice_v0
from qwinto_env.batched import BATCHED_GAMES
from qwinto_env.spec import SPECS
from qwinto_env.vector import QwintoVecEnv, RandomOpponent, TorchVectorEnv
from qwinto_env.web import create_app

BAD_COUNTS = [("dice", 0), ("dice", 7), ("cards", 5), ("cards", 6), ("cards", 0)]
MODULES = {"dice": qwinto_dice_v0, "cards": qwinto_cards_v0}


def reason(game, n):
    return re.escape(SPECS[game].player_count_problem(n))


def test_the_reason_names_the_range_the_game_and_the_count():
    assert SPECS["cards"].player_count_problem(5) == \
        "must be an integer in 1..4 for the card game (1 = solo variant), got 5"
    assert SPECS["dice"].player_count_problem(True) is not None
    assert all(SPECS[g].player_count_problem(n) is None
               for g in SPECS for n in SPECS[g].player_counts)


@pytest.mark.parametrize("game, n", BAD_COUNTS)
@pytest.mark.parametrize("make", [
    lambda g, n: qwinto_env.parallel_env(game=g, num_players=n),
    lambda g, n: qwinto_env.env(game=g, num_players=n),
    lambda g, n: MODULES[g].parallel_env(num_players=n),
    lambda g, n: gymnasium.make("Qwinto-v0", game=g, num_players=n),
    lambda g, n: QwintoVecEnv(2, n, game=g),
    lambda g, n: TorchVectorEnv(2, n, game=g),
    lambda g, n: BATCHED_GAMES[g](num_games=2, num_players=n),
    lambda g, n: load("random", game=g, num_players=n),
    lambda g, n: evaluate.play(["random"], game=g, num_players=n, games=1, progress=False),
], ids=["parallel", "aec", "versioned", "gym", "vec", "torchvec", "batched", "load",
        "evaluate"])
def test_the_python_front_ends_refuse_a_bad_count_with_the_reason(make, game, n):
    with pytest.raises(ValueError, match=f"num_players:? {reason(game, n)}"):
        make(game, n)


@pytest.mark.parametrize("game, n", BAD_COUNTS)
def test_the_command_lines_refuse_a_bad_count_with_the_reason(game, n, capsys):
    with pytest.raises(SystemExit):
        evaluate.main(["--game", game, "--players", str(n), "--agents", "random", "--quiet"])
    assert re.search(f"argument --players: {reason(game, n)}", capsys.readouterr().err)
    lines = []
    assert play.main(["--game", game, "--players", str(n)], print_fn=lines.append) == 2
    assert re.search(f"num_players {reason(game, n)}", "\n".join(lines))
    # train.py's fields declare their ranges: 1..6, any game; a count in it the game
    # does not seat gets the game's reason
    expected = reason(game, n) if n in SPECS["dice"].player_counts else "must be an integer in 1..6"
    with pytest.raises(ConfigError, match=f"^env.num_players: {expected}"):
        load_config(None, [f"env.game={game}", f"env.num_players={n}"])
    assert train.main([f"env.game={game}", f"env.num_players={n}"]) == 2
    assert re.search(f"env.num_players: {expected}", capsys.readouterr().err)


@pytest.mark.parametrize("game, n", BAD_COUNTS)
def test_the_web_api_refuses_a_bad_count_with_the_reason(game, n):
    client = TestClient(create_app(bots=["random"]))
    answer = client.post("/api/games", json={"game": game, "num_players": n,
                                             "bots": ["random"]})
    assert answer.status_code == 422
    assert re.search(f"num_players {reason(game, n)}", answer.json()["detail"])


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_every_count_plays_whole_games_through_gym_and_the_evaluator(game):
    for n in SPECS[game].player_counts:
        env = gymnasium.make("Qwinto-v0", game=game, num_players=n,
                             opponents=[] if n == 1 else "random", learner_seat="random")
        obs, info = env.reset(seed=n)
        rng, done = np.random.default_rng(n), False
        while not done:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        assert len(info["scores"]) == n
        res = evaluate.play(["random"], game=game, num_players=n, games=n, progress=False)
        for entrant in range(n):  # n games: every entrant in every seat once
            assert np.bincount(res.seat[:, entrant], minlength=n).tolist() == [1] * n


def play_aec(env, rng):
    """A whole masked-random game through the AEC view; the agents that took a turn."""
    acted = set()
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        done = terminated or truncated
        env.step(None if done else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        acted.add(agent)
    return acted


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_every_count_plays_whole_games_through_pettingzoo_and_the_vector_envs(game):
    rng = np.random.default_rng(0)
    for n in SPECS[game].player_counts:
        aec = MODULES[game].env(num_players=n)
        aec.reset(seed=n)
        assert play_aec(aec, rng) == {f"player_{k}" for k in range(n)}
        venv = QwintoVecEnv(2, n, game=game, seed=n)
        venv.reset()
        finished = set()
        while len(finished) < venv.num_envs:  # every entry (a seat of a game) ends a game
            masks = venv.action_masks()
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            _, _, dones, infos = venv.step(actions)
            finished |= {k for k in np.flatnonzero(dones) if "final_score" in infos[k]}
        assert venv.num_envs == 2 * n
        opponents = RandomOpponent("torch", seed=n) if n > 1 else None
        tenv = TorchVectorEnv(2, n, game=game, seed=n, opponents=opponents, learner_seat=n - 1)
        _, masks = tenv.reset()
        for _ in range(40):
            _, masks, *_ = tenv.step(torch.multinomial(masks.float(), 1).squeeze(1))
        assert tenv.num_envs == 2  # one entry per game: the learner's seat (or the solo seat)


@pytest.mark.parametrize("opponents", ["greedy", ["greedy"]])
def test_one_opponent_spec_seats_a_separate_bot_at_every_other_seat(opponents):
    env = gymnasium.make("Qwinto-v0", num_players=4, opponents=opponents).unwrapped
    assert len(env.opponents) == 3 and len({id(bot) for bot in env.opponents}) == 3
    assert {bot.name for bot in env.opponents} == {"greedy"}
