"""agents.load on damaged and malformed checkpoints: exactly the saved bot, or a
CheckpointError that names the file."""

import fractions
import os
import pickle

import numpy as np
import pytest
import torch

from agents import load
from agents.load import PRETRAINED_DIR, pretrained_names
from agents.policy import CheckpointError
from tests.checkpoints import small_checkpoint

MUTATIONS = ("flip", "truncate", "zero")
#: Bytes at each end of an archive where torch's zip keeps its structure (data.pkl at
#: the start, the central directory at the end): half the damage lands there.
EDGE = 4096


def small_dice_checkpoint(path):
    """A small dice checkpoint; its (game, players) and state_dict."""
    network = small_checkpoint(path, metadata={"steps": 1})
    return ("dice", 2), network.state_dict()


def shipped_checkpoint(name):
    path = PRETRAINED_DIR / f"{name}.pt"
    data = torch.load(path, map_location="cpu", weights_only=True)
    return path, (data["game"], data["num_players"]), data["state_dict"]


def bits(state_dict):
    """Each tensor's raw bytes (torch.equal would call -0.0 and 0.0 the same)."""
    return {k: v.contiguous().view(torch.uint8).numpy().tobytes() for k, v in state_dict.items()}


def position(rng, size):
    if rng.random() < 0.5:
        return int(rng.integers(size))
    offset = int(rng.integers(min(EDGE, size)))
    return offset if rng.random() < 0.5 else size - 1 - offset


def mutate(rng, raw, kind):
    damaged = bytearray(raw)
    if kind == "flip":
        for _ in range(int(rng.integers(1, 9))):
            damaged[position(rng, len(raw))] ^= int(rng.integers(1, 256))
    elif kind == "truncate":
        del damaged[int(rng.integers(len(raw))):]
    else:
        start = position(rng, len(raw))
        end = min(len(raw), start + int(rng.integers(1, EDGE + 1)))
        damaged[start:end] = bytes(end - start)
    return bytes(damaged)


def fuzz(source, target, game_players, state_dict, kind, trials, seed):
    """Load ``trials`` damaged copies of ``source``: each must raise a CheckpointError
    naming ``target`` or give the saved weights bit for bit; the errors seen."""
    raw, want = source.read_bytes(), bits(state_dict)
    rng = np.random.default_rng(seed)
    game, players = game_players
    errors = 0
    for _ in range(trials):
        target.write_bytes(mutate(rng, raw, kind))
        try:
            agent = load(str(target), game=game, num_players=players)
        except CheckpointError as exc:
            assert str(target) in str(exc)
            errors += 1
            continue
        assert bits(agent.network.state_dict()) == want
    return errors


@pytest.mark.parametrize("kind", MUTATIONS)
def test_damaged_small_checkpoint(tmp_path, kind):
    source = tmp_path / "small.pt"
    game_players, state_dict = small_dice_checkpoint(source)
    errors = fuzz(source, tmp_path / "damaged.pt", game_players, state_dict, kind, 300,
                  MUTATIONS.index(kind))
    assert errors > 250  # nearly every change is caught, not passed over


@pytest.mark.parametrize("kind", MUTATIONS)
@pytest.mark.parametrize("name", pretrained_names())
def test_damaged_shipped_checkpoint(tmp_path, name, kind):
    source, game_players, state_dict = shipped_checkpoint(name)
    errors = fuzz(source, tmp_path / f"{name}.pt", game_players, state_dict, kind, 60,
                  10 + MUTATIONS.index(kind))
    assert errors > 50


@pytest.mark.slow
@pytest.mark.parametrize("kind", MUTATIONS)
@pytest.mark.parametrize("name", pretrained_names())
def test_damaged_shipped_checkpoint_many_trials(tmp_path, name, kind):
    source, game_players, state_dict = shipped_checkpoint(name)
    fuzz(source, tmp_path / f"{name}.pt", game_players, state_dict, kind, 2000,
         100 + MUTATIONS.index(kind))


@pytest.mark.parametrize("name", pretrained_names())
def test_shipped_checkpoints_load_exactly_as_saved(name):
    _, (game, players), state_dict = shipped_checkpoint(name)
    agent = load(f"pretrained:{name}", game=game, num_players=players)
    assert bits(agent.network.state_dict()) == bits(state_dict)


def rewrite(path, **changes):
    """Save the checkpoint at ``path`` again with some fields changed."""
    data = torch.load(path, weights_only=True)
    torch.save({**data, **changes}, path)


def state_with(path, key, value):
    state = dict(torch.load(path, weights_only=True)["state_dict"])
    state[key] = value
    return state


@pytest.mark.parametrize("key, value, message", [
    ("format", "other-policy", "not a 'qwinto-policy' checkpoint"),
    ("version", True, "format version True"),
    ("version", "1", "format version '1'"),
    ("game", 3, "has game 3; expected one of"),
    ("game", "chess", "has game 'chess'"),
    ("game", ["dice"], r"has game \['dice'\]"),
    ("num_players", "two", "num_players 'two'; the dice game takes an integer in 1..6"),
    ("num_players", 2.0, "num_players 2.0"),
    ("num_players", True, "num_players True"),
    ("num_players", 7, "num_players 7"),
    ("observation_size", -1, "observation_size -1; the 2-player dice game has 89"),
    ("observation_size", "89", "observation_size '89'"),
    ("num_actions", 36, "num_actions 36; the 2-player dice game has 37"),
    ("network", 5, "has network 5; expected a dict"),
    ("network", {"hidden": "ab"}, "network hidden 'ab'; expected a list of positive"),
    ("network", {"hidden": [0]}, r"network hidden \[0\]"),
    ("network", {"hidden": [True]}, r"network hidden \[True\]"),
    ("network", {"hidden": [10 ** 12]}, "does not match its config"),  # allocates nothing
    ("network", {"hidden": [32], "depth": 3}, r"unknown network keys \['depth'\]"),
    ("network", {"hidden": [32], "activation": "gelu"}, "network activation 'gelu'"),
    ("network", {"hidden": [32], "activation": ["tanh"]}, "network activation"),
    ("network", {"hidden": [32], "features": "nope"}, "network features 'nope'"),
    ("network", {"hidden": [32], "features": "cards"}, "does not fit its observations"),
    ("state_dict", [1], "state_dict of type list, not a dict"),
    ("metadata", 3, "metadata of type int, not a dict"),
])
def test_malformed_field(tmp_path, key, value, message):
    path = tmp_path / "bad.pt"
    small_checkpoint(path)
    rewrite(path, **{key: value})
    with pytest.raises(CheckpointError, match=message) as info:
        load(str(path))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("key, value, message", [
    ("torso.0.weight", torch.zeros(32, 89, dtype=torch.float64),
     "'torso.0.weight' is a torch.float64 tensor of shape"),
    ("torso.0.weight", torch.zeros(31, 89), r"shape \(31, 89\), not a torch.float32"),
    ("torso.0.weight", 0.5, "'torso.0.weight' is a float, not"),
    ("torso.0.weight", torch.zeros(32, 89).to_sparse(), "is a torch.sparse_coo"),
    ("extra.weight", torch.zeros(3), "does not match its config: keys"),
])
def test_state_dict_that_does_not_fit(tmp_path, key, value, message):
    path = tmp_path / "bad.pt"
    small_checkpoint(path)
    rewrite(path, state_dict=state_with(path, key, value))
    with pytest.raises(CheckpointError, match=message):
        load(str(path))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_weights_that_are_not_finite(tmp_path, bad):
    path = tmp_path / "bad.pt"
    small_checkpoint(path)
    weights = torch.load(path, weights_only=True)["state_dict"]["value_head.bias"].clone()
    weights[0] = bad
    rewrite(path, state_dict=state_with(path, "value_head.bias", weights))
    with pytest.raises(CheckpointError, match=r"not finite \(inf or nan\) in "
                                              r"state_dict\['value_head.bias'\]"):
        load(str(path))


def test_not_a_checkpoint_dict(tmp_path):
    path = tmp_path / "list.pt"
    torch.save([1, 2], path)
    with pytest.raises(CheckpointError, match="holds a list, not a dict"):
        load(str(path))


@pytest.mark.parametrize("content, message", [
    (b"", "is empty"),
    (b"weights: 0.5, 0.25\n", "corrupt or not a torch file"),
    (pickle.dumps({"format": "qwinto-policy"}), "legacy"),
])
def test_files_that_are_not_torch_archives(tmp_path, content, message):
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=message) as info:
        load(str(path))
    assert str(path) in str(info.value)


def test_an_sb3_model_is_named_as_one(tmp_path):
    """What `benchmark run --algo maskable-ppo` and SB3's model.save write: a zip that is no
    checkpoint of this project, said so instead of 'corrupt or not a torch file'."""
    import gymnasium
    from sb3_contrib import MaskablePPO

    import qwinto_env  # noqa: F401 - registers Qwinto-v0

    model = MaskablePPO("MultiInputPolicy", gymnasium.make("Qwinto-v0"), n_steps=64)
    model.save(tmp_path / "model.zip")
    with pytest.raises(CheckpointError, match="is a Stable-Baselines3 model .model.save., not "
                                              "a checkpoint of this project"):
        load(str(tmp_path / "model.zip"))


def test_archive_holding_an_object_torch_will_not_unpickle(tmp_path):
    path = tmp_path / "foreign.pt"
    torch.save({"format": "qwinto-policy", "note": fractions.Fraction(1, 3)}, path)
    with pytest.raises(CheckpointError, match="UnpicklingError: Unsupported global: GLOBAL "
                                              "fractions.Fraction") as info:
        load(str(path))
    assert "\n" not in str(info.value)


def test_legacy_format_is_refused_with_advice(tmp_path):
    """torch's pre-zip format has no checksums: a damaged one could load silently."""
    path = tmp_path / "legacy.pt"
    small_checkpoint(path)
    data = torch.load(path, weights_only=True)
    torch.save(data, path, _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match="legacy .* save it again with torch.save"):
        load(str(path))


def test_directory(tmp_path):
    folder = tmp_path / "run.pt"
    folder.mkdir()
    with pytest.raises(CheckpointError, match="is a directory, not a checkpoint file"):
        load(str(folder))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_named_pipe_is_not_opened(tmp_path):
    pipe = tmp_path / "pipe.pt"
    os.mkfifo(pipe)
    with pytest.raises(CheckpointError, match="is not a regular file"):
        load(str(pipe))  # opening it would wait for a writer forever


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads files whatever their mode")
def test_permission_denied(tmp_path):
    path = tmp_path / "locked.pt"
    small_checkpoint(path)
    path.chmod(0)
    with pytest.raises(CheckpointError, match="cannot be read: Permission denied"):
        load(str(path))


def test_read_error(tmp_path, monkeypatch):
    """What root cannot see with chmod: the read itself failing."""
    import agents.policy

    path = tmp_path / "locked.pt"
    small_checkpoint(path)

    def denied(file, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(file))

    monkeypatch.setattr(agents.policy, "open", denied, raising=False)
    with pytest.raises(CheckpointError, match="locked.pt' cannot be read: Permission denied"):
        load(str(path))


@pytest.mark.parametrize("metadata, message", [
    ({"config": 3}, "config of type int, not a mapping"),
    ({"config": {"env": ["score"]}}, "env of type list, not a mapping"),
    ({"config": {"ppo": {"gamma": "high"}}}, "ppo.gamma 'high', not a finite number"),
    ({"config": {"ppo": {"reward_scale": float("nan")}}}, "ppo.reward_scale nan"),
    ({"config": {"env": {"reward": "win"}}}, "env.reward 'win'"),
])
def test_lookahead_with_a_malformed_training_config(tmp_path, metadata, message):
    path = tmp_path / "bad.pt"
    small_checkpoint(path)
    rewrite(path, metadata=metadata)
    with pytest.raises(CheckpointError, match=message) as info:
        load(f"lookahead:{path}")
    assert str(path) in str(info.value)
