"""agents.load: names, checkpoints (round trip) and every kind of bad spec."""

import re

import numpy as np
import pytest
import torch
import yaml

from agents import AgentSpecError, CheckpointNotFoundError, load
from agents.expert import ExpertAgent
from agents.load import PRETRAINED_DIR, pretrained_names
from agents.policy import CheckpointError, PolicyAgent
from agents.scripted import GreedyAgent, RandomAgent
from qwinto_env import parallel_env
from qwinto_env.dice import DiceGame
from tests.checkpoints import small_checkpoint


@pytest.mark.parametrize("spec, cls", [("random", RandomAgent), ("greedy", GreedyAgent),
                                       ("expert", ExpertAgent)])
@pytest.mark.parametrize("game, players", [("dice", 2), ("dice", 4), ("cards", 3)])
def test_builtin_names(spec, cls, game, players):
    agent = load(spec, game=game, num_players=players)
    assert isinstance(agent, cls)
    assert (agent.game, agent.num_players, agent.name) == (game, players, spec)


def test_keyword_arguments_reach_the_agent():
    assert load("expert", tau=0.3).params.tau == 0.3
    assert load("greedy", tolerance=3).tolerance == 3.0


def test_checkpoint_round_trip(tmp_path):
    path = tmp_path / "policy.pt"
    net = small_checkpoint(path)
    agent = load(str(path), game="dice", num_players=2)
    assert isinstance(agent, PolicyAgent) and agent.name == "policy.pt"
    for a, b in zip(net.state_dict().values(), agent.network.state_dict().values()):
        assert torch.equal(a, b)
    game = DiceGame(num_players=2, seed=0)
    obs = game.features()[game.observation_index(0)]
    mask = np.zeros(37, dtype=np.int8)
    mask[game.legal_actions(0)] = 1
    with torch.no_grad():
        logits, value = net(torch.as_tensor(obs)[None])
    masked = logits[0].numpy().copy()
    masked[mask == 0] = -np.inf
    assert agent.act(obs, mask) == int(masked.argmax())
    assert value.shape == (1,)
    sampler = load(path, game="dice", num_players=2, deterministic=False)  # PathLike works
    sampler.reset(seed=0)
    picks = sampler.act_batch(np.tile(obs, (200, 1)), np.tile(mask, (200, 1)))
    assert mask[picks].all() and len(set(picks.tolist())) > 1


def test_checkpoint_for_another_game_or_player_count(tmp_path):
    path = tmp_path / "cards3.pt"
    small_checkpoint(path, game="cards", num_players=3)
    assert isinstance(load(str(path), game="cards", num_players=3), PolicyAgent)
    with pytest.raises(CheckpointError, match="for the cards game with 3 players, not the "
                                              "dice game with 2 players"):
        load(str(path), game="dice", num_players=2)
    with pytest.raises(CheckpointError, match="3 players, not the cards game with 2"):
        load(str(path), game="cards", num_players=2)


def test_missing_file(tmp_path):
    with pytest.raises(CheckpointNotFoundError, match="does not exist") as info:
        load(str(tmp_path / "nope.pt"))
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)


def test_corrupt_file(tmp_path):
    path = tmp_path / "broken.pt"
    path.write_bytes(b"this is not a torch checkpoint")
    with pytest.raises(CheckpointError, match="corrupt"):
        load(str(path))
    good = tmp_path / "good.pt"
    small_checkpoint(good)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(CheckpointError, match="corrupt"):
        load(str(truncated))


def test_foreign_or_mismatched_checkpoints(tmp_path):
    path = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, path)
    with pytest.raises(CheckpointError, match="not a 'qwinto-policy' checkpoint"):
        load(str(path))
    small_checkpoint(path)
    data = torch.load(path, weights_only=True)
    torch.save({**data, "version": 99}, path)
    with pytest.raises(CheckpointError, match="version 99"):
        load(str(path))
    torch.save({k: v for k, v in data.items() if k != "state_dict"}, path)
    with pytest.raises(CheckpointError, match="lacks the keys \\['state_dict'\\]"):
        load(str(path))
    torch.save({**data, "network": {"hidden": [64], "activation": "tanh"}}, path)
    with pytest.raises(CheckpointError, match="does not match its config"):
        load(str(path))


@pytest.mark.parametrize("spec, message", [
    ("expret", "unknown agent spec 'expret'"),
    ("", "unknown agent spec ''"),
    ("search:", "'search:': search plays a checkpoint .* and names none"),
    ("search[person]:", "search plays a checkpoint .* and names none"),
    ("lookahead:", "lookahead plays a checkpoint .* and names none"),
    (3, "must be a name or a path"),
])
def test_bad_specs(spec, message):
    with pytest.raises(AgentSpecError, match=message):
        load(spec)


def test_bad_game_or_player_count():
    with pytest.raises(AgentSpecError, match="unknown game 'chess'"):
        load("random", game="chess")
    with pytest.raises(AgentSpecError, match="1..4 for the card game \\(1 = solo variant\\), got 5"):
        load("random", game="cards", num_players=5)
    with pytest.raises(AgentSpecError, match="1..6 for the dice game \\(1 = solo variant\\), got 0"):
        load("expert", num_players=0)


@pytest.mark.parametrize("name", pretrained_names())
def test_every_shipped_bot_plays_legal_moves_with_its_shipped_config(name):
    """Each pretrained checkpoint loads for its game, plays a whole game legally, and the
    resolved training config shipped beside it describes its network."""
    path = PRETRAINED_DIR / f"{name}.pt"
    data = torch.load(path, map_location="cpu", weights_only=True)
    config = yaml.safe_load((PRETRAINED_DIR / f"{name}.yaml").read_text())
    assert (data["game"], data["num_players"]) == (config["env"]["game"],
                                                    config["env"]["num_players"])
    assert data["network"] == config["network"]
    assert (PRETRAINED_DIR / f"{name}.txt").read_text().startswith(f"# pretrained:{name}")
    agent = load(f"pretrained:{name}", game=data["game"], num_players=data["num_players"])
    env = parallel_env(game=data["game"], num_players=data["num_players"])
    obs, _ = env.reset(seed=3)
    while env.agents:
        actions = {a: agent.act(obs[a]["observation"], obs[a]["action_mask"]) for a in env.agents}
        assert all(obs[a]["action_mask"][act] == 1 for a, act in actions.items())
        obs, *_ = env.step(actions)


def test_a_checkpoint_under_the_home_folder_after_a_comma(tmp_path, monkeypatch, capsys):
    """The shell expands ``~`` at the start of a word only: ``--agents expert,~/run.pt``
    reached ``load`` as ``~/run.pt``, which did not exist."""
    from agents.evaluate import main

    monkeypatch.setenv("HOME", str(tmp_path))
    small_checkpoint(tmp_path / "run.pt")
    assert load("~/run.pt").name == "run.pt"
    main(["--agents", "random,~/run.pt", "--games", "2", "--quiet"])
    assert "run.pt" in capsys.readouterr().out


def test_a_run_folder_names_the_checkpoints_in_it(tmp_path):
    """A training run's folder was refused as a directory, saying nothing of its final.pt."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    small_checkpoint(run / "final.pt")
    with pytest.raises(CheckpointError, match=re.escape(
            f"is a directory, not a checkpoint file; checkpoints in it: "
            f"'{run / 'final.pt'}'")):
        load(str(run))
    with pytest.raises(CheckpointError, match="is a directory, not a checkpoint file$"):
        load(str(run / "checkpoints"))


@pytest.mark.parametrize("spec, close", [
    ("Random", "random"), (" expert", "expert"), ("expret", "expert"),
    ("pretrained:dice2p", "dice-2p"), ("pretrained:Cards-2P", "cards-2p"),
    ("pretraind:dice-2p", "pretrained:dice-2p"), ("pretrainned:dice", "pretrained:dice-2p"),
])
def test_a_misspelt_name_gets_a_suggestion(spec, close):
    """The errors listed every choice but not the one meant."""
    with pytest.raises(AgentSpecError, match=re.escape(f"(did you mean {close!r}?)")):
        load(spec)


def test_a_pretrained_bot_of_another_game_is_named_as_given():
    """The error named the shipped file's path inside the installed package."""
    with pytest.raises(CheckpointError, match=re.escape(
            "checkpoint 'pretrained:dice-2p' is for the dice game with 2 players, not the "
            "cards game with 2 players")):
        load("search:pretrained:dice-2p", game="cards")
