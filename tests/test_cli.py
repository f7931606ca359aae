"""The training command: every config field documented where ``--help-config`` prints it,
shipped configs taken by name, and ``qwinto-train`` naming itself in its messages."""

import dataclasses
import typing
from pathlib import Path

import pytest

import train
from agents.trainers import cli
from agents.trainers.config import (CONFIG_DIR, ConfigError, TrainConfig, load_config,
                                    shipped_configs)

ROOT = Path(__file__).resolve().parent.parent


def sections():
    hints = typing.get_type_hints(TrainConfig)
    return [(s.name, hints[s.name]) for s in dataclasses.fields(TrainConfig)]


def test_every_section_and_field_has_its_own_doc():
    for name, cls in sections():
        # a dataclass without a docstring gets one generated from its signature
        assert cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("), name
        for f in dataclasses.fields(cls):
            assert f.metadata.get("doc", "").strip(), f"{name}.{f.name} has no doc"


def test_help_config_lists_every_field_with_its_default_and_doc(capsys):
    assert train.main(["--help-config"]) == 0
    out = capsys.readouterr().out
    for name, cls in sections():
        assert f"\n{name}: {cls.__doc__}\n" in f"\n{out}"
        for f in dataclasses.fields(cls):
            line = next(l for l in out.splitlines() if l.startswith(f"  {name}.{f.name}: "))
            assert ", default " in line, line
            assert " ".join(f.metadata["doc"].split()[:3]) in out, f"{name}.{f.name}"
    assert "  ppo.learning_rate: a finite number in (0, 1], default 0.0005\n" in out
    assert "  run.trainer: one of torch, sb3, rllib, default \"torch\"\n" in out


def test_the_shipped_configs_are_the_repository_configs():
    assert shipped_configs() == sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    assert (CONFIG_DIR / "default.yaml").read_bytes() == \
        (ROOT / "configs" / "default.yaml").read_bytes()


def test_a_shipped_config_is_taken_by_name():
    for name in shipped_configs():
        assert load_config(name) == load_config(ROOT / "configs" / f"{name}.yaml")


def test_an_unknown_config_name_is_refused_with_the_names_there_are():
    with pytest.raises(ConfigError, match=r"^config file 'dice-4pp': is neither a file nor "
                                          r"the name of a shipped config \(cards-2p, .*"
                                          r"did you mean 'dice-4p'\?"):
        load_config("dice-4pp")


def test_a_file_shadows_a_shipped_name(tmp_path, monkeypatch):
    (tmp_path / "cards-2p").write_text("run:\n  seed: 7\n")
    monkeypatch.chdir(tmp_path)
    assert load_config("cards-2p").run.seed == 7


def test_qwinto_train_names_itself(tmp_path, capsys):
    assert cli.main(["--runs-dir", str(tmp_path), "ppo.gamma=2"]) == 2
    assert capsys.readouterr().err.startswith("qwinto-train: error: ppo.gamma: ")
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: qwinto-train ")
