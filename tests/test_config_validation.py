"""train.py refuses every bad config before it builds anything: exit code 2, one line
``train.py: error: <field>: <reason>`` on stderr, no run folder, no training."""

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import agents.trainers
import train
from agents.trainers.config import (ConfigError, Device, Range, TrainConfig, describe_plan,
                                    load_config, save_config)
from agents.trainers.preflight import check_resources

ROOT = Path(__file__).resolve().parent.parent
#: A run that trains in seconds, should a bad value ever slip through.
SMALL = ["run.total_steps=1500", "env.num_games=8", "ppo.rollout_steps=8",
         "network.hidden=[16]", "eval.every=0", "eval.final_games=4", "imitation.games=0"]


class Trained(Exception):
    """Raised instead of training: a refused config must never get this far."""


@pytest.fixture
def no_training(monkeypatch):
    def refuse(*args, **kwargs):
        raise Trained
    monkeypatch.setattr(agents.trainers, "train_from_config", refuse)


def refused(tmp_path, capsys, *args):
    """The one line train.main printed for ``args`` (after checking it refused them
    before writing or printing anything else)."""
    runs = tmp_path / "runs"
    assert train.main(["--runs-dir", str(runs), "--no-progress", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and not runs.exists()
    assert err.startswith("train.py: error: ") and err.count("\n") == 1 and err.endswith("\n")
    return err.rstrip("\n")


# -- every field, programmatically ----------------------------------------------------------

def every_field():
    """(dotted name, type hint, Range or None) of every config field."""
    sections = typing.get_type_hints(TrainConfig)
    for section in dataclasses.fields(TrainConfig):
        cls = sections[section.name]
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            yield f"{section.name}.{f.name}", hints[f.name], f.metadata.get("range")


def out_of_range(bounds, integer):
    """Numbers just outside ``bounds``, and far outside."""
    low = bounds.low if bounds.low_open else bounds.low - (1 if integer else 1e-9)
    values = [low, -10 ** 30 if integer else -1e300]
    if bounds.high is not None:
        values += [bounds.high + 1, 10 ** 30 if integer else bounds.high * 1e300]
    return [v for v in values if not bounds.contains(v)]


def bad_scalars(hint, bounds):
    if hint is int:
        return ["x", 1.5, True, [1], None, 10 ** 400, *out_of_range(bounds, True)]
    if hint is float:
        return ["fast", True, [1], None, math.inf, -math.inf, math.nan, 10 ** 400,
                *out_of_range(bounds, False)]
    if hint is bool:
        return ["maybe", 1, None, "yes please"]
    if hint is str:
        return [1, ["a"], None, {"a": 1}]
    if typing.get_origin(hint) is typing.Literal:
        return ["nope", 1, None, [typing.get_args(hint)[0]]]
    if hint is Device:
        return ["gpu", "cuda:", "cuda:-1", "cuda:01", "cuda:1 ", "CUDA", "cuda:x", "tpu:0",
                "cpu:0", 0, None, ["cuda"]]
    raise AssertionError(f"no bad values for {hint}: add them here")


#: Values of the right type that a field must still refuse (paths out of runs/, names
#: that load no agent), with the overrides that make the field matter.
SEMANTIC = {
    "run.name": (["../x", "a/b", "/abs", "..", ".", ".hidden", "", "a\\b", "x" * 101,
                  "tab\tname", "new\nline"], []),
    "run.init_from": (["missing.pt", "../missing.pt", "pretrained:nope", "pretrained:cards-2p",
                       "random"], ["imitation.games=0"]),
    "imitation.demonstrator": (["nope", "pretrained:cards-2p", "lookahead:random"], []),
    "rllib.address": (["not an address", "host", "ray://", "http://x:1"],
                      ["run.trainer=rllib", "opponents.snapshots=0", "imitation.games=0"]),
}


def bad_values(hint, bounds):
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        return ["x", {"a": 1}, [], *([v] for v in bad_scalars(item, bounds))]
    if origin is dict:
        return ["x", [1], {1: 0.5}, *({"random": v} for v in bad_scalars(float, bounds))]
    return bad_scalars(hint, bounds)


def as_yaml(value):
    """``value`` as YAML text for an override (JSON is YAML, except for inf and nan)."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, list):
        return "[" + ", ".join(as_yaml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{as_yaml(k)}: {as_yaml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


CASES = [(name, value, [])
         for name, hint, bounds in every_field() for value in bad_values(hint, bounds)]
CASES += [(name, value, context) for name, (values, context) in SEMANTIC.items()
          for value in values]
CASES += [("eval.opponents", v, []) for v in (["nope"], ["random", "random"],
                                              ["pretrained:cards-2p"], "random")]
CASES += [("opponents.scripted", {"nope": 1.0}, []), ("opponents.scripted", {"nope": 0.0}, [])]


def test_every_numeric_field_declares_its_range():
    for name, hint, bounds in every_field():
        numeric = {hint, *typing.get_args(hint)} & {int, float}
        assert not numeric or isinstance(bounds, Range), f"{name} has no Range"
        if int in numeric:
            assert bounds.high is not None, f"{name}: an integer needs an upper bound"


def test_every_field_is_fuzzed():
    assert {name for name, *_ in every_field()} == {name for name, *_ in CASES}


@pytest.mark.parametrize("name, value, context", CASES,
                         ids=[f"{n}={as_yaml(v)[:30]}" for n, v, _ in CASES])
def test_a_bad_value_of_any_field_is_refused_naming_it(tmp_path, capsys, no_training, name,
                                                       value, context):
    line = refused(tmp_path, capsys, *SMALL, *context, f"{name}={as_yaml(value)}")
    assert re.match(rf"train\.py: error: {re.escape(name)}(\[\d+\]|\.\w+| key)?: ", line), line


@pytest.mark.parametrize("args, message", [
    # the reproductions
    (["ppo.learning_rate=.inf"], "ppo.learning_rate: must be a finite number in (0, 1], got inf"),
    (["ppo.learning_rate=.nan"], "ppo.learning_rate: must be a finite number in (0, 1], got nan"),
    (["ppo.clip_coef=-1"], "ppo.clip_coef: must be a finite number in (0, 1000], got -1.0"),
    (["ppo.max_grad_norm=-1"], "ppo.max_grad_norm: must be a finite number > 0, got -1.0"),
    (["eval.every=-1"], "eval.every: must be an integer in 0..1,000,000,000,000, got -1"),
    (["opponents.snapshot_every=0"], "opponents.snapshot_every: must be an integer in 1.."),
    (["opponents.pool_size=-3"], "opponents.pool_size: must be an integer in 1..1,000, got -3"),
    (["run.name=../x"], "run.name: must be a plain folder name"),
    (["eval.opponents=[nope]"], "eval.opponents[0]: unknown agent spec 'nope'"),
    (["run.seed=-1"], "run.seed: must be an integer in 0..2,147,483,647, got -1"),
    (["run.seed=4294967296"], "run.seed: must be an integer in 0..2,147,483,647"),
    (["run.torch_threads=-1"], "run.torch_threads: must be an integer in 0..1,024, got -1"),
    (["opponents.scripted={nope: 0.1}"], "opponents.scripted.nope: unknown agent spec 'nope'"),
    (["imitation.demonstrator=nope"], "imitation.demonstrator: unknown agent spec 'nope'"),
    # across fields: the field to change is named
    (["run.total_steps=100"], "run.total_steps: must be at least one rollout "
                              "(ppo.rollout_steps * env.num_games = 16,384), got 100"),
    (["ppo.num_minibatches=20000"], "ppo.num_minibatches: must not exceed the samples"),
    (["--trainer", "sb3", "imitation.games=0", "env.num_players=1",
      "opponents.snapshots=0", "opponents.scripted={}"], "env.num_players: the sb3 trainer"),
    (["--trainer", "sb3"], "imitation.games: is supported by the torch trainer"),
    (["env.num_players=1"], "opponents.snapshots: solo play has no opponents"),
    (["opponents.self_play=0", "opponents.snapshots=0", "opponents.scripted={}"],
     "opponents.self_play: the opponent shares"),
    (["network.hidden=[100000]"], "network.hidden[0]: must be an integer in 1..8,192"),
    (["--trainer", "rllib", "opponents.snapshots=0", "imitation.games=0",
      "rllib.num_env_runners=3"], "rllib.num_env_runners: 3 env runners take one CPU each"),
    (["--trainer", "rllib", "opponents.snapshots=0", "imitation.games=0",
      "rllib.num_cpus=8", "rllib.num_learners=4", "rllib.minibatch_size=2000"],
     "rllib.minibatch_size: must not exceed the batch of each learner"),
    # the command line: overrides before and after options
    (["run.seed=1", "--device", "cpu", "ppo.learning_rate=.inf"],
     "ppo.learning_rate: must be a finite number"),
    (["--seed", "x"], "--seed: invalid int value: 'x'"),
    (["--seed", "-5"], "run.seed: must be an integer in 0.."),
    (["--device", "tpu"], "run.device: must be one of auto, cpu, cuda, cuda:N (N = 0, 1, "
                          "...: which GPU), got 'tpu'"),
    (["--device", "cuda1"], "run.device: must be one of auto, cpu, cuda, cuda:N (N = 0, "
                            "1, ...: which GPU), got 'cuda1'; did you mean 'cuda:1'?"),
    (["--device", "0"], "run.device: must be one of auto, cpu, cuda, cuda:N"),
    (["--trainer", "rllib", "--device", "cuda:1", "opponents.snapshots=0", "imitation.games=0"],
     "run.device: the rllib trainer lets Ray place its learners on GPUs, so it cannot pick "
     "'cuda:1': use 'cuda', and set CUDA_VISIBLE_DEVICES where Ray starts"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--config"], "--config: expected one argument"),
])
def test_refusals_name_the_field_and_reason(tmp_path, capsys, no_training, args, message):
    assert refused(tmp_path, capsys, *args).startswith(f"train.py: error: {message}")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_a_run_name_is_refused_or_one_plain_folder(name):
    try:
        cfg = load_config(None, [f"run.name={json.dumps(name)}"])
    except ConfigError as exc:
        assert str(exc).startswith("run.name: ")
        return
    root = Path("/runs")
    assert Path(os.path.normpath(root / cfg.run.name)).parent == root
    assert cfg.run.name == name and not name.startswith(".")
    assert not set(name) & set("/\\:\0\n\t ")


def test_refusing_imports_nothing_that_takes_long(tmp_path):
    code = ("import sys, train; rc = train.main(['--runs-dir', sys.argv[1], "
            "'ppo.learning_rate=.inf']); print(rc, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False"], done.stderr
    assert done.stderr == ("train.py: error: ppo.learning_rate: must be a finite number in "
                           "(0, 1], got inf\n")


# -- config files and overrides -------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("run:\n  seed: 1\nppo:\n  gamma: 0.9\nrun:\n  name: b\n",
     "run: appears twice in config file '{path}' (lines 1 and 5)"),
    ("ppo:\n  gamma: 0.9\n  clip_coef: 0.1\n  gamma: 0.99\n",
     "ppo.gamma: appears twice in config file '{path}' (lines 2 and 4)"),
    ("opponents:\n  scripted: {random: 1, greedy: 1, random: 2}\n",
     "opponents.scripted.random: appears twice in config file '{path}' (lines 2 and 2)"),
    ("", "config file '{path}': is empty"),
    ("# only a comment\n", "config file '{path}': is empty"),
    ("- run\n- ppo\n", "config file '{path}': must map sections (run, env, ppo, ...) to their "
                       "fields, got a list"),
    ("3\n", "config file '{path}': must map sections (run, env, ppo, ...) to their fields, got "
            "a int"),
    ("run: [unclosed\n", "config file '{path}': is not valid YAML: line 2, column 1:"),
    ("run:\n  seed: 1\n---\nppo: {}\n", "config file '{path}': is not valid YAML:"),
    ("run:\n  seed: 1\n  sed: 2\n", "run.sed: unknown config field; did you mean 'run.seed'?"),
    ("run:\n", "run: must be a mapping of fields, got None"),
    ("run:\n  seed: 1\n\tppo: 2\n", "config file '{path}': is not valid YAML: line 3"),
    ("run:\n  ? [a]\n  : 1\n", "run: a key in config file '{path}' is a list (line 2)"),
    ("? {a: 1}\n: 1\n", "the top level: a key in config file '{path}' is a mapping (line 1)"),
])
def test_bad_config_files_are_refused(tmp_path, capsys, no_training, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    line = refused(tmp_path, capsys, "--config", str(path))
    assert line.startswith("train.py: error: " + message.format(path=path)), line


def test_a_config_that_is_not_utf8_a_folder_or_missing_is_refused(tmp_path, capsys, no_training):
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("run:\n  name: caf\xe9\n".encode("latin-1"))
    assert refused(tmp_path, capsys, "--config", str(latin1)) == (
        f"train.py: error: config file '{latin1}': is not UTF-8 text (byte 0xe9 at offset 16)")
    assert refused(tmp_path, capsys, "--config", str(tmp_path)) == (
        f"train.py: error: config file '{tmp_path}': is a directory, not a YAML file")
    assert refused(tmp_path, capsys, "--config", str(tmp_path / "no.yaml")) == (
        f"train.py: error: config file '{tmp_path / 'no.yaml'}': does not exist")
    assert refused(tmp_path, capsys, "--config", "").startswith(
        "train.py: error: --config: is empty; give a YAML file or the name of a shipped config")


@pytest.mark.parametrize("override, message", [
    ("nonsense", "override 'nonsense': must look like section.field=value"),
    ("=1", "override '=1': must look like section.field=value"),
    ("run=3", "override 'run=3': must look like section.field=value"),
    ("run..seed=3", "override 'run..seed=3': must look like section.field=value"),
    (".seed=3", "override '.seed=3': must look like section.field=value"),
    ("run.seed=[1", "run.seed: override value '[1' is not valid YAML: line 1, column 3:"),
    ("opponents.scripted={random: 1, random: 2}",
     "opponents.scripted.random: appears twice in override value"),
    ("run.seed.x=1", "run.seed: is a field, not a section (override 'run.seed.x=1')"),
    ("run.seed=", "run.seed: must be an integer, got None"),
    ("opponents.scripted={[a]: 1}", "opponents.scripted: a key in override value '{[a]: 1}' "
                                   "is a list (line 1); keys are names"),
    ("opponents.scripted={{a: 1}: 1}", "opponents.scripted: a key in override value"),
    ("run.init_from=pretrained:", "run.init_from: must be a string, got {'pretrained': None} "
                                  "(YAML reads a trailing ':' or ': ' as a mapping; quote"),
])
def test_bad_overrides_are_refused(tmp_path, capsys, no_training, override, message):
    assert refused(tmp_path, capsys, override).startswith(f"train.py: error: {message}")


def test_an_override_below_a_field_is_refused():
    with pytest.raises(ConfigError, match=r"^run.seed: must be an integer, got \{'x': 1\}"):
        load_config(None, ["run.seed.x=1"])


def test_yaml_merge_keys_are_not_duplicates(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("opponents:\n  scripted:\n    <<: {random: 1.0}\n    greedy: 2.0\n")
    assert load_config(path).opponents.scripted == {"random": 1.0, "greedy": 2.0}


# -- what only the machine can tell ---------------------------------------------------------

def test_a_corrupt_missing_or_mismatched_init_checkpoint_is_refused_up_front(tmp_path, capsys,
                                                                            no_training):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a checkpoint")
    for spec, message in [(corrupt, f"checkpoint '{corrupt}' is corrupt"),
                          (tmp_path / "none.pt", "checkpoint file"),
                          ("pretrained:cards-2p", "checkpoint"),
                          ("pretrained:dice-2p", "run.init_from 'pretrained:dice-2p' holds"),
                          ("expert", "'expert' names an agent, not a checkpoint"),
                          ("search:pretrained:dice-2p", "names an agent, not a checkpoint")]:
        line = refused(tmp_path, capsys, *SMALL, f"run.init_from={spec}")
        assert line.startswith("train.py: error: run.init_from") and message in line, line


def test_init_from_a_trainer_state_points_at_the_run_s_policies(tmp_path, capsys, no_training):
    """run.init_from=<run>/checkpoints/trainer_state.pt, taken for the run's checkpoint,
    said only that the file was no policy checkpoint."""
    from agents.policy import PolicyNetwork
    from agents.trainers.run import Run, policy_shape
    run = Run(load_config(None, [*SMALL, "run.name=prev", "run.device=cpu"]), root=tmp_path / "old")
    run.save(PolicyNetwork(*policy_shape("dice", 2), hidden=[16]), 100, {})
    line = refused(tmp_path, capsys, *SMALL, f"run.init_from={run.state_path}")
    assert line.startswith(f"train.py: error: run.init_from: checkpoint '{run.state_path}'")
    assert f"start from the run's {run.ckpt_dir / 'latest.pt'} or {run.dir / 'final.pt'}, " \
           f"or continue that run with --resume" in line


def test_init_from_is_not_read_on_resume():
    cfg = load_config(None, [*SMALL, "run.init_from=missing.pt"])
    check_resources(cfg, "runs", resume=True)
    with pytest.raises(ConfigError, match="^run.init_from: checkpoint file 'missing.pt'"):
        check_resources(cfg, "runs")


def test_a_runs_dir_or_run_folder_that_is_a_file_is_refused(tmp_path, capsys, no_training):
    runs = tmp_path / "runs"
    runs.write_text("")
    assert train.main(["--runs-dir", str(runs), *SMALL]) == 2
    assert capsys.readouterr().err.startswith("train.py: error: --runs-dir: ")
    runs.unlink()
    runs.mkdir()
    (runs / "x").write_text("")
    assert train.main(["--runs-dir", str(runs), *SMALL, "run.name=x"]) == 2
    assert capsys.readouterr().err.startswith("train.py: error: run.name: ")
    assert os.listdir(runs) == ["x"] and (runs / "x").read_text() == ""


def test_rllib_without_ray_is_refused(monkeypatch):
    import importlib.util
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else find_spec(name, *a))
    cfg = load_config(None, [*SMALL, "run.trainer=rllib", "opponents.snapshots=0"])
    with pytest.raises(ConfigError, match=r'^run.trainer: rllib needs Ray RLlib'):
        check_resources(cfg, "runs")


# -- the warm start sized to the run, and the plan ------------------------------------------

def test_the_default_run_plans_its_full_warm_start_unchanged():
    cfg = load_config(ROOT / "configs" / "default.yaml")
    assert cfg.warm_start_games() == 2000
    assert cfg.sized_to_run() == cfg  # the same config: the same run, the same weights
    assert "imitate 2,000 self-play games of 'expert' (8 epochs)\n" in describe_plan(cfg)


def test_a_short_run_plans_a_short_warm_start():
    cfg = load_config(None, ["run.total_steps=200000"])
    assert cfg.warm_start_games() == 133 and cfg.sized_to_run().imitation.games == 133
    assert cfg.imitation.games == 2000  # the loaded config says what the user wrote
    plan = describe_plan(cfg)
    assert "imitate 133 self-play games" in plan and "imitation.games 2,000 capped" in plan
    assert "PPO (torch trainer): 200,000 learner steps" in plan
    assert "0 games during training" in plan and "6,000 at the end" in plan
    # below the cap a value is played as given; steps_per_game 0 lifts the cap
    assert load_config(None, ["run.total_steps=200000", "imitation.games=50"]
                       ).warm_start_games() == 50
    assert load_config(None, ["run.total_steps=200000", "imitation.steps_per_game=0"]
                       ).warm_start_games() == 2000
    assert "none (imitation.games 2,000 capped to 0" in describe_plan(
        load_config(None, ["run.total_steps=20000", "imitation.steps_per_game=30000"]))


def test_the_plan_counts_evaluation_games_and_says_how_the_run_starts():
    cfg = load_config(None, ["run.total_steps=3000000", "eval.every=1000000", "eval.games=10",
                             "eval.opponents=[random, greedy]"])
    assert "40 games during training (2 x 10 against each opponent)" in describe_plan(cfg)
    assert "none (resuming" in describe_plan(cfg, resume=True)
    assert "the network of run.init_from 'x.pt'" in describe_plan(
        load_config(None, ["run.init_from=x.pt", "imitation.games=0"]))


def test_train_prints_the_plan_and_trains_the_sized_warm_start(tmp_path, capsys, monkeypatch):
    import agents.trainers.torch_ppo as torch_ppo
    played = []

    def collect(cfg, progress):
        played.append(cfg.imitation.games)
        raise Trained
    monkeypatch.setattr(torch_ppo, "collect", collect)
    with pytest.raises(Trained):
        train.main(["--runs-dir", str(tmp_path), "--no-progress", "--device", "cpu",
                    *SMALL, "run.total_steps=3000", "imitation.games=100"])
    assert played == [2]
    assert capsys.readouterr().out.startswith("plan: warm start: imitate 2 self-play games of")
    assert yaml.safe_load((tmp_path / "dice-2p" / "config.yaml").read_text()
                          )["imitation"]["games"] == 2


# -- writing --------------------------------------------------------------------------------

def test_save_config_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "config.yaml"
    path.write_text("old\n")

    def fail(fd):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        save_config(TrainConfig(), path)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["config.yaml"]
    monkeypatch.undo()
    save_config(TrainConfig(), path)
    assert load_config(path) == TrainConfig()


def test_a_run_folder_that_cannot_be_made_is_refused(tmp_path, capsys, no_training):
    """Below a file, or holding a file where the run writes a folder (or the other way
    round): one line naming --runs-dir or run.name, before anything is written."""
    plain = tmp_path / "plain"
    plain.write_text("")
    assert train.main(["--runs-dir", str(plain / "deeper"), *SMALL]) == 2
    assert capsys.readouterr().err.startswith(
        f"train.py: error: --runs-dir: '{plain}' is a file, where the run's folder")
    for name, make in (("checkpoints", Path.write_text), ("tb", Path.write_text),
                       ("config.yaml", Path.mkdir), ("final.pt", Path.mkdir)):
        run = tmp_path / "runs" / name.replace(".", "_")
        run.mkdir(parents=True)
        make(run / name, *([""] if make is Path.write_text else []))
        assert train.main(["--runs-dir", str(run.parent), *SMALL, f"run.name={run.name}"]) == 2
        assert capsys.readouterr().err.startswith(f"train.py: error: run.name: '{run / name}'")
        assert os.listdir(run) == [name]
