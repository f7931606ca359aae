"""Training: config validation, tiny end-to-end runs of each trainer, checkpoints, resume."""

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import agents.trainers
import train
from agents import load
from agents.trainers.config import ConfigError, TrainConfig, load_config, save_config
from agents.trainers.run import ResumeError, Run
from qwinto_env import parallel_env

ROOT = Path(__file__).resolve().parent.parent

TINY = ["run.total_steps=1500", "run.checkpoint_every=700", "env.num_games=8",
        "ppo.rollout_steps=8", "ppo.update_epochs=1", "ppo.num_minibatches=2",
        "network.hidden=[16]", "eval.every=0", "eval.games=4", "eval.final_games=4",
        "eval.opponents=[random]", "opponents.snapshot_every=400",
        "opponents.scripted={random: 0.2, greedy: 0.2}", "imitation.games=0"]


# -- config -------------------------------------------------------------------------------

def test_every_shipped_config_loads():
    configs = sorted((ROOT / "configs").glob("*.yaml"))
    assert configs
    for path in configs:
        cfg = load_config(path)
        assert isinstance(cfg, TrainConfig)


def test_default_yaml_matches_the_dataclass_defaults():
    # the documented default file and the code defaults must not drift apart
    assert load_config(ROOT / "configs" / "default.yaml").to_dict() == TrainConfig().validate().to_dict()


@pytest.mark.parametrize("override, message", [
    ("ppo.learnig_rate=1e-3", "did you mean 'ppo.learning_rate'"),
    ("ppo.learning_rate=fast", "^ppo.learning_rate: must be a number"),
    ("run.trainer=jax", "^run.trainer: must be one of"),
    ("run.total_steps=1.5", "^run.total_steps: must be an integer"),
    ("run.total_steps=0", "^run.total_steps: must be an integer in 1.."),
    ("env.num_players=5", "^env.num_players: must be an integer in 1..4 for the card game"),
    ("network.hidden=128", "^network.hidden: must be a list"),
    ("ppo.anneal_lr=maybe", "^ppo.anneal_lr: must be true or false"),
    ("opponents.scripted={random: -1}", "^opponents.scripted.random: must be a finite number in"),
    ("optimizer.lr=1", "^optimizer: unknown config field"),
    ("nonsense", "must look like section.field=value"),
    ("run.init_from=x.pt", "^run.init_from: .*set imitation.games: 0"),
    ("imitation.refine=true", "^imitation.refine: .*set run.init_from and imitation.games"),
    ("imitation.targets=search", "^imitation.targets: 'search' distils a search's gains"),
    ("imitation.targets=soft", "^imitation.targets: must be one of"),
    ("imitation.temperature=0", "^imitation.temperature: must be a finite number > 0"),
])
def test_bad_overrides_name_the_field(override, message):
    extra = ["env.game=cards"] if "card game" in message else []
    with pytest.raises(ConfigError, match=message):
        load_config(None, extra + [override])


def test_bad_config_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("run:\n  seed: 1\n  sed: 2\n")
    with pytest.raises(ConfigError, match="did you mean 'run.seed'"):
        load_config(bad)


def test_saved_config_round_trips(tmp_path):
    cfg = load_config(None, ["ppo.learning_rate=1e-4", "network.hidden=[32, 32]"])
    save_config(cfg, tmp_path / "c.yaml")
    assert load_config(tmp_path / "c.yaml") == cfg
    assert yaml.safe_load((tmp_path / "c.yaml").read_text())["ppo"]["learning_rate"] == 1e-4


# -- end-to-end runs ----------------------------------------------------------------------

def run_train(tmp_path, *args):
    return train.main(["--runs-dir", str(tmp_path), "--no-progress", "--device", "cpu", *args])


def checkpoint_plays(path, game="dice", players=2):
    agent = load(str(path), game=game, num_players=players)
    env = parallel_env(game=game, num_players=players)
    obs, _ = env.reset(seed=0)
    while env.agents:
        actions = {a: agent.act(obs[a]["observation"], obs[a]["action_mask"]) for a in env.agents}
        for a, act in actions.items():
            assert obs[a]["action_mask"][act] == 1
        obs, *_ = env.step(actions)


@pytest.mark.parametrize("trainer, game, features", [
    ("torch", "dice", "sheet"), ("sb3", "dice", "sheet"), ("torch", "cards", "cards"),
    ("sb3", "cards", "cards")])
def test_tiny_training_run_end_to_end(tmp_path, capsys, trainer, game, features):
    assert run_train(tmp_path, "--trainer", trainer, "run.name=tiny", *TINY, f"env.game={game}",
                     f"network.features={features}") == 0
    out = capsys.readouterr().out
    assert "learner vs random" in out and "win rate" in out
    run_dir = tmp_path / "tiny"
    assert (run_dir / "config.yaml").is_file() and (run_dir / "evaluation.txt").is_file()
    assert list((run_dir / "tb").iterdir())
    assert len(list((run_dir / "checkpoints").glob("step_*.pt"))) >= 2
    checkpoint_plays(run_dir / "final.pt", game=game)
    data = torch.load(run_dir / "final.pt", weights_only=True)
    assert data["metadata"]["trainer"] == trainer
    assert data["network"]["features"] == features


def test_sb3_anneals_the_step_size_over_whole_rollouts_and_stays_above_zero(tmp_path):
    """1,500 steps are 23.4 rollouts of 64 (8 games x 8 steps): SB3 trains 24 and, as the
    torch trainer does, anneals over them, the last update at learning_rate / 24. (It
    annealed over 1,500 steps, so its last update ran at a negative step size and climbed
    the loss: 50,000 steps of 16,384-step rollouts ended worse than random.)"""
    import io

    from sb3_contrib import MaskablePPO
    assert run_train(tmp_path, "--trainer", "sb3", "run.name=lr", *TINY,
                     "ppo.learning_rate=2.4e-3") == 0
    state = torch.load(tmp_path / "lr" / "checkpoints" / "trainer_state.pt", weights_only=False)
    assert state["step"] == 24 * 64
    model = MaskablePPO.load(io.BytesIO(state["sb3_model"]))
    assert model.policy.optimizer.param_groups[0]["lr"] == pytest.approx(2.4e-3 / 24)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_decisions_only_trains_on_decisions(tmp_path, game):
    assert run_train(tmp_path, "run.name=d", *TINY, f"env.game={game}",
                     "ppo.decisions_only=true") == 0
    checkpoint_plays(tmp_path / "d" / "final.pt", game=game)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    logs = EventAccumulator(str(tmp_path / "d" / "tb"))
    logs.Reload()
    shares = [e.value for e in logs.Scalars("train/trained_share")]
    assert shares and all(0.3 < s < 0.9 for s in shares)  # the steps with a choice
    with pytest.raises(ConfigError, match="ppo.decisions_only: is supported by the torch trainer"):
        load_config(None, [*TINY, "run.trainer=sb3", "ppo.decisions_only=true"])


def test_imitation_warm_start_learns_the_demonstrator(tmp_path):
    from agents.trainers.imitation import collect, pretrain
    from agents.policy import PolicyNetwork
    cfg = load_config(None, [*TINY, "imitation.games=6", "imitation.epochs=30",
                             "imitation.demonstrator=greedy", "imitation.batch_size=32",
                             "network.hidden=[64]"])
    demos = collect(cfg, progress=False)
    assert len(demos.actions) > 100
    assert all(m[a] for m, a in zip(demos.masks, demos.actions))   # choices were legal
    assert (demos.to_come[demos.to_come != 0]).size                 # value targets vary
    net = PolicyNetwork(demos.obs.shape[1], demos.masks.shape[1], **vars(cfg.network))
    stats = pretrain(net, demos, cfg, torch.device("cpu"), progress=False)
    assert stats["imitation/accuracy"] > 0.8   # a small net fits a deterministic bot closely
    assert run_train(tmp_path, "run.name=im", *TINY, "imitation.games=2") == 0


def test_imitation_workers_split_the_games_and_join_the_parts_in_order(capsys):
    """imitation.workers=2: part i is what one process collects with seed run.seed + i;
    the progress bar counts the games the workers finish and the decisions recorded (in
    one process too)."""
    from dataclasses import fields
    from agents.trainers.imitation import Demonstrations, collect
    base = [*TINY, "run.seed=7", "imitation.demonstrator=greedy"]
    both = collect(load_config(None, [*base, "imitation.games=5", "imitation.workers=2"]))
    err = capsys.readouterr().err
    assert "5/5" in err and f"{len(both.actions):,} decisions]" in err
    parts = [collect(load_config(None, [*TINY, f"run.seed={seed}", f"imitation.games={n}",
                                        "imitation.demonstrator=greedy"]), progress=seed == 7)
             for seed, n in ((7, 3), (8, 2))]
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "3/3 [" in last and last.endswith(f", {len(parts[0].actions):,} decisions]")
    assert both.targets is None and all(p.targets is None for p in parts)
    for f in fields(Demonstrations):
        if f.name == "targets":
            continue
        joined = np.concatenate([getattr(p, f.name) for p in parts])
        assert np.array_equal(getattr(both, f.name), joined), f.name
    assert len({len(p.actions) for p in parts}) == 2   # two different parts, not one twice


def test_resume_continues_from_the_last_checkpoint(tmp_path):
    assert run_train(tmp_path, "run.name=r", *TINY) == 0
    first = torch.load(tmp_path / "r" / "checkpoints" / "trainer_state.pt", weights_only=False)
    assert run_train(tmp_path, "run.name=r", *TINY) == 2          # refuses to overwrite
    assert run_train(tmp_path, "--resume", "run.name=r", *TINY, "run.total_steps=4000") == 0
    second = torch.load(tmp_path / "r" / "checkpoints" / "trainer_state.pt", weights_only=False)
    assert second["step"] > first["step"] >= 1500
    assert not torch.equal(first["network"]["policy_head.weight"],
                           second["network"]["policy_head.weight"])
    # a resumed run must keep its game and network
    with pytest.raises(ResumeError, match="network"):
        from agents.trainers.run import Run
        Run(load_config(None, [*TINY, "run.name=r", "network.hidden=[8]"]), root=tmp_path,
            resume=True).load_state()


def test_init_from_starts_from_a_checkpoint_and_rejects_a_mismatch(tmp_path, capsys):
    from agents.policy import PolicyNetwork
    from agents.trainers.run import init_network
    assert run_train(tmp_path, "run.name=a", *TINY) == 0
    source = tmp_path / "a" / "final.pt"
    cfg = load_config(None, [*TINY, f"run.init_from={source}"])
    net = PolicyNetwork(89, 37, **vars(cfg.network))
    init_network(net, cfg)
    saved = torch.load(source, weights_only=True)["state_dict"]
    assert all(torch.equal(v, saved[k]) for k, v in net.state_dict().items())
    # another network, a missing file, another game: clear errors, the network untouched
    wide = PolicyNetwork(89, 37, hidden=[32], features="sheet")
    before = {k: v.clone() for k, v in wide.state_dict().items()}
    for overrides, message in [(["network.hidden=[32]"], "holds the network"),
                               ([f"run.init_from={tmp_path / 'nope.pt'}"], "does not exist")]:
        with pytest.raises(ConfigError, match="run.init_from"):
            init_network(wide, load_config(None, [*TINY, f"run.init_from={source}", *overrides]))
        assert all(torch.equal(v, before[k]) for k, v in wide.state_dict().items())
    assert run_train(tmp_path, "run.name=c", *TINY, "env.game=cards",
                     f"run.init_from={source}") == 2
    assert "is for the dice game" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="supported by the torch trainer"):
        load_config(None, [*TINY, "run.trainer=sb3", f"run.init_from={source}"])
    # a run started from the checkpoint trains on from it
    assert run_train(tmp_path, "run.name=b", *TINY, f"run.init_from={source}") == 0
    checkpoint_plays(tmp_path / "b" / "final.pt")


def test_refine_fits_the_start_network_to_a_search_of_it(tmp_path, capsys):
    """Expert iteration: imitation.refine starts the warm start from run.init_from (so
    with step sizes of ~0 the run ends where it started) and plays the search's games."""
    assert run_train(tmp_path, "run.name=a", *TINY) == 0
    source = tmp_path / "a" / "final.pt"
    capsys.readouterr()
    still = ["ppo.learning_rate=1e-12", "imitation.learning_rate=1e-12"]
    search = f"search[samples=2,top_k=2,turns=1]:{source}"
    refine = [f"run.init_from={source}", "imitation.refine=true", "imitation.games=3",
              "imitation.steps_per_game=0", f"imitation.demonstrator={search}"]
    assert run_train(tmp_path, "run.name=e", *TINY, *refine, *still) == 0
    assert f"the network of run.init_from '{source}', then imitate 3 self-play games of " \
           f"'{search}'" in capsys.readouterr().out
    start = torch.load(source, weights_only=True)["state_dict"]
    end = torch.load(tmp_path / "e" / "final.pt", weights_only=True)["state_dict"]
    assert all(torch.allclose(end[k], v, atol=1e-6) for k, v in start.items())
    # refine without run.init_from is refused: there is nothing to refine
    assert run_train(tmp_path, "run.name=f", *TINY, *refine[1:], *still) == 2
    assert "imitation.refine: refines the network of run.init_from" in capsys.readouterr().err


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_shipped_expert_iteration_configs_refine_their_pretrained_network(tmp_path, game):
    """configs/<game>-2p-search.yaml as a user runs it, with fewer and cheaper games: the
    run starts from the shipped network, fits it to its search and writes a checkpoint
    that differs from the shipped one and plays legally."""
    config = ROOT / "configs" / f"{game}-2p-search.yaml"
    demonstrator = load_config(config).imitation.demonstrator
    cheap = demonstrator.replace("]:", ",samples=2]:") if "]:" in demonstrator \
        else demonstrator.replace("search:", "search[samples=2]:")
    assert run_train(tmp_path, "--config", str(config), "run.name=ei", "imitation.games=2",
                     "imitation.workers=1", f"imitation.demonstrator={cheap}",
                     "env.num_games=8", "run.total_steps=512", "eval.final_games=2") == 0
    start = load(f"pretrained:{game}-2p", game=game, num_players=2).network.state_dict()
    end = torch.load(tmp_path / "ei" / "final.pt", weights_only=True)["state_dict"]
    assert start.keys() == end.keys()
    assert any(not torch.equal(end[k], v) for k, v in start.items())
    checkpoint_plays(tmp_path / "ei" / "final.pt", game=game)


def test_shipped_selfplay_config_trains_on_from_the_pretrained_network_and_resumes(tmp_path,
                                                                                   capsys):
    """configs/dice-2p-selfplay.yaml as a user runs it, with fewer steps: no warm-start
    games, the shipped network's weights trained further, and `--resume` takes the run on."""
    config = ROOT / "configs" / "dice-2p-selfplay.yaml"
    short = ["run.name=sp", "env.num_games=8", "run.checkpoint_every=1024", "eval.final_games=2"]
    assert run_train(tmp_path, "--config", str(config), *short, "run.total_steps=1024") == 0
    assert "warm start: the network of run.init_from 'pretrained:dice-2p'" in capsys.readouterr().out
    start = load("pretrained:dice-2p").network.state_dict()
    first = torch.load(tmp_path / "sp" / "final.pt", weights_only=True)["state_dict"]
    assert any(not torch.equal(first[k], v) for k, v in start.items())
    assert run_train(tmp_path, "--resume", "--config", str(config), *short,
                     "run.total_steps=2048") == 0
    assert "2,048 learner steps in all, on from the last checkpoint" in capsys.readouterr().out
    second = torch.load(tmp_path / "sp" / "final.pt", weights_only=True)["state_dict"]
    assert any(not torch.equal(second[k], v) for k, v in first.items())
    checkpoint_plays(tmp_path / "sp" / "final.pt")


def test_improved_policy_adds_the_gains_less_their_noise_over_the_temperature():
    from agents.search import Searched
    from agents.trainers.imitation import improved_policy
    logits = np.array([[0.0, 1.0, -np.inf, 2.0], [0.5, -np.inf, 0.0, 0.0]])
    gains = np.array([[0.0, 2.0, np.nan, -1.0], [np.nan] * 4])
    errors = np.array([[0.0, 1.0, np.nan, 0.0], [np.nan] * 4])
    searched = Searched(logits.argmax(1), logits, gains, errors)
    expected = torch.softmax(torch.tensor([[0.0, 1.0 + 4.0 - 2.0, -np.inf, 0.0],
                                           [0.5, -np.inf, 0.0, 0.0]]), 1).numpy()
    np.testing.assert_allclose(improved_policy(searched, 0.5), expected, rtol=1e-6)


def test_search_targets_move_the_policy_where_the_search_found_gains(tmp_path):
    """imitation.targets=search records, per decision, the policy the search improved:
    a distribution over the legal actions, the network's own but for the odds of the
    candidates the search simulated; a refine run fits it."""
    from agents.trainers.imitation import collect
    spec = "search[samples=2,top_k=3,turns=1,confidence=0]:pretrained:dice-2p"
    soft = [f"imitation.demonstrator={spec}", "imitation.targets=search",
            "imitation.temperature=0.5"]
    demos = collect(load_config(None, [*TINY, "imitation.games=3", *soft]), progress=False)
    targets, masks = demos.targets, demos.masks
    assert targets.shape == masks.shape and np.allclose(targets.sum(1), 1, atol=1e-5)
    assert (targets[~masks] == 0).all()
    network = load("pretrained:dice-2p").network
    with torch.no_grad():
        logits = network(torch.as_tensor(demos.obs))[0]
    policy = torch.softmax(logits.masked_fill(~torch.as_tensor(masks), -torch.inf), 1).numpy()
    # log-odds against the favourite change for at most top_k - 1 = 2 actions of a row
    shift = np.log(np.where(masks, targets, 1)) - np.log(np.where(masks, policy, 1))
    favourite = policy.argmax(1)
    rows = np.arange(len(shift))
    changed = masks & ~np.isclose(shift, shift[rows, favourite][:, None], atol=1e-4)
    assert changed.sum(1).max() <= 2
    moved = changed.any(1)
    assert 0 < moved.sum() < len(targets)        # some decisions searched, some not
    played = demos.actions != favourite          # the search left the favourite
    assert played.any() and changed[played, demos.actions[played]].all()
    assert run_train(tmp_path, "run.name=a", *TINY) == 0
    source = tmp_path / "a" / "final.pt"
    search = f"search[samples=2,top_k=2,turns=1]:{source}"
    assert run_train(tmp_path, "run.name=s", *TINY, f"run.init_from={source}",
                     "imitation.refine=true", "imitation.games=2", "imitation.steps_per_game=0",
                     f"imitation.demonstrator={search}", "imitation.targets=search") == 0
    assert (tmp_path / "s" / "final.pt").exists()


def test_init_from_grows_into_a_larger_feature_set(tmp_path, observations):
    """A sheet-feature card-game checkpoint starts a play-feature network that plays
    exactly like it (the new columns' weights are zero); the other way round is a clear
    error that leaves the network as it was."""
    from agents.policy import PolicyNetwork, save_checkpoint
    from agents.trainers.run import init_network
    cards = [*TINY, "env.game=cards"]
    assert run_train(tmp_path, "run.name=a", *cards, "network.features=sheet") == 0
    source = tmp_path / "a" / "final.pt"
    cfg = load_config(None, [*cards, f"run.init_from={source}", "network.features=cards"])
    obs = observations("cards", 50)
    grown = PolicyNetwork(obs.shape[1], 88, **vars(cfg.network))
    init_network(grown, cfg)
    old = load(str(source), game="cards").network
    for a, b in zip(grown(obs), old(obs)):
        assert torch.allclose(a, b, atol=1e-6)
    assert grown.torso[0].weight[:, old.torso[0].in_features:].abs().sum() == 0
    save_checkpoint(tmp_path / "grown.pt", grown, "cards", 2, obs.shape[1], 88)
    narrow = PolicyNetwork(obs.shape[1], 88, hidden=[16], features="sheet")
    before = {k: v.clone() for k, v in narrow.state_dict().items()}
    with pytest.raises(ConfigError, match="only by adding columns"):
        init_network(narrow, load_config(None, [*cards, "network.features=sheet",
                                                f"run.init_from={tmp_path / 'grown.pt'}"]))
    assert all(torch.equal(v, before[k]) for k, v in narrow.state_dict().items())


def test_resume_without_a_run_is_a_clear_error(tmp_path, capsys):
    assert run_train(tmp_path, "--resume", "run.name=nothing", *TINY) == 2
    assert "cannot resume run 'nothing'" in capsys.readouterr().err


def see_gpus(monkeypatch, count):
    """Torch sees ``count`` CUDA devices (0: no CUDA), as on a machine that has them."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_without_a_gpu_is_a_clear_error(tmp_path, capsys, monkeypatch, device):
    see_gpus(monkeypatch, 0)
    assert train.main(["--runs-dir", str(tmp_path), "--device", device, "run.name=c", *TINY]) == 2
    assert capsys.readouterr().err == (f"train.py: error: run.device: is {device!r} but torch "
                                       f"sees no CUDA device (use --device cpu or auto)\n")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("gpus, seen", [(1, "1 CUDA device (cuda:0;"),
                                        (2, "2 CUDA devices (cuda:0 to cuda:1;")])
def test_a_gpu_past_those_torch_sees_is_a_clear_error(tmp_path, capsys, monkeypatch, gpus, seen):
    see_gpus(monkeypatch, gpus)
    argv = ["--runs-dir", str(tmp_path), "--device", f"cuda:{gpus}", "run.name=c", *TINY]
    assert train.main(argv) == 2
    assert capsys.readouterr().err == (f"train.py: error: run.device: is 'cuda:{gpus}' but "
                                       f"torch sees {seen} CUDA_VISIBLE_DEVICES numbers them "
                                       f"from 0)\n")
    assert not list(tmp_path.iterdir())


def test_a_run_on_gpu_1_keeps_it_in_its_config_and_resumes_with_it(tmp_path, monkeypatch):
    see_gpus(monkeypatch, 2)
    run = Run(load_config(None, [*TINY, "run.name=g", "run.device=cuda:1"]), root=tmp_path)
    assert run.device == torch.device("cuda", 1)
    config = run.dir / "config.yaml"
    assert "  device: cuda:1\n" in config.read_text()
    started = []
    monkeypatch.setattr(agents.trainers, "train_from_config",
                        lambda cfg, **kwargs: started.append((cfg, kwargs["resume"])) or "")
    assert train.main(["--runs-dir", str(tmp_path), "--config", str(config), "--resume"]) == 0
    assert [(cfg.run.device, resume) for cfg, resume in started] == [("cuda:1", True)]


def test_a_run_trained_on_gpu_1_resumes_and_loads_on_a_cpu(tmp_path, capsys, monkeypatch):
    """Its files say cuda:1 for every tensor, as torch.save writes them there; --resume
    --device cpu and agents.load read them on a machine without that GPU."""
    see_gpus(monkeypatch, 0)
    registry = torch.serialization._package_registry
    with monkeypatch.context() as on_gpu_1:  # every tensor saved is tagged cuda:1
        on_gpu_1.setattr(torch.serialization, "_package_registry",
                         [(0, lambda storage: "cuda:1", lambda obj, where: None), *registry])
        assert run_train(tmp_path, "run.name=g", *TINY) == 0
    state, config = tmp_path / "g/checkpoints/trainer_state.pt", tmp_path / "g/config.yaml"
    with pytest.raises(RuntimeError, match="on a CUDA device"):
        torch.load(state, weights_only=True)
    config.write_text(config.read_text().replace("device: cpu", "device: cuda:1"))
    resume = ["--runs-dir", str(tmp_path), "--no-progress", "--config", str(config), "--resume",
              "run.total_steps=2200"]
    assert train.main(resume) == 2
    assert "run.device: is 'cuda:1' but torch sees no CUDA device" in capsys.readouterr().err
    assert train.main([*resume, "--device", "cpu"]) == 0
    checkpoint_plays(tmp_path / "g" / "final.pt")


def test_opponent_games_seat_the_learner_once(tmp_path):
    from agents.trainers.pool import OpponentPool
    cfg = load_config(None, TINY)
    pool = OpponentPool(cfg.opponents, "dice", 2, seed=0)
    draws = pool.draw(4000)
    # no snapshots yet: only the two scripted specs, equal shares
    assert set(np.unique(draws)) == {0, 1}
    assert abs((draws == 0).mean() - 0.5) < 0.05


@pytest.mark.parametrize("snapshots", [0.0, 0.5])
def test_torch_trainer_seats_its_scripted_opponents_with_or_without_snapshots(snapshots):
    """Every opponent row of a rollout is played by the pool: with ``opponents.snapshots=0``
    the scripted bots were never planned in, and the engine's first legal action played
    their seats."""
    from agents.trainers.torch_ppo import TorchPPO
    cfg = load_config(None, TINY + ["opponents.self_play=0", f"opponents.snapshots={snapshots}",
                                    "opponents.scripted={greedy: 1}"])
    ppo = TorchPPO(cfg, torch.device("cpu"))
    if ppo.snapshots:
        ppo.pool.add_snapshot(ppo.net)
    asked = []
    greedy = ppo.pool.scripted[0].agent
    act_batch = greedy.act_batch
    greedy.act_batch = lambda obs, masks: asked.append(len(obs)) or act_batch(obs, masks)
    ppo.rollout()
    planned = torch.cat([rows for _, rows in ppo._opponent_plan()]).sort().values
    every = torch.cat([rows for _, rows in ppo.seats.groups]).sort().values
    assert torch.equal(planned, every) and len(every) > 0
    assert asked and asked[0] == len(dict(ppo.seats.groups)["greedy"])
