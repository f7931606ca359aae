"""The wheel a user installs: every module, the shipped configs and bots, the web page, the
licence, the five console scripts, and test tools only in the ``test`` extra."""

import configparser
import importlib
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = {"qwinto-play": "qwinto_env.play:main", "qwinto-train": "agents.trainers.cli:main",
           "qwinto-evaluate": "agents.evaluate:cli",
           "qwinto-benchmark": "agents.benchmark.__main__:main",
           "qwinto-web": "qwinto_env.web.__main__:main"}
#: What a source checkout holds beside the project (left out of the copy that is built).
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "runs", "benchmark_runs", "build", "dist",
                                    "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel built from a copy of the checkout (a build writes into its source tree)."""
    pytest.importorskip("setuptools", minversion="77", reason="the test extra's setuptools")
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_SOURCE)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp / "dist"), str(source)],
                   check=True, capture_output=True, timeout=300)
    (path,) = (tmp / "dist").glob("qwinto_env-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield {name: archive.read(name) for name in archive.namelist()}


def dist_info(wheel, name):
    (path,) = [p for p in wheel if p.split("/")[0].endswith(".dist-info")
               and p.endswith("/" + name)]
    return wheel[path].decode()


def test_the_wheel_holds_every_module(wheel):
    for package in ("qwinto_env", "agents"):
        for path in (ROOT / package).rglob("*.py"):
            assert path.relative_to(ROOT).as_posix() in wheel, path


def test_the_wheel_ships_the_frozen_rating_ladder(wheel):
    path = ROOT / "agents" / "benchmark" / "ladder.json"
    assert wheel["agents/benchmark/ladder.json"] == path.read_bytes()


def test_the_wheel_ships_the_configs_and_the_bots(wheel):
    configs = sorted((ROOT / "configs").glob("*.yaml"))
    bots = sorted((ROOT / "agents" / "pretrained").iterdir())
    assert configs and bots
    for path in configs:
        assert wheel[f"agents/trainers/configs/{path.name}"] == path.read_bytes(), path
    for path in bots:
        assert wheel[f"agents/pretrained/{path.name}"] == path.read_bytes(), path


def test_the_wheel_ships_the_web_page(wheel):
    files = sorted((ROOT / "qwinto_env" / "web" / "static").iterdir())
    assert {path.name for path in files} >= {"index.html", "app.js", "style.css"}
    for path in files:
        assert wheel[f"qwinto_env/web/static/{path.name}"] == path.read_bytes(), path


def test_the_wheel_has_the_console_scripts(wheel):
    entry_points = configparser.ConfigParser()
    entry_points.read_string(dist_info(wheel, "entry_points.txt"))
    assert dict(entry_points["console_scripts"]) == SCRIPTS
    for target in SCRIPTS.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), target


def test_the_wheel_carries_the_licence_and_keeps_test_tools_in_the_test_extra(wheel):
    assert dist_info(wheel, "LICENSE") == (ROOT / "LICENSE").read_text()
    metadata = Parser().parsestr(dist_info(wheel, "METADATA"))
    assert metadata["License-Expression"] == "MIT"
    assert set(metadata.get_all("Provides-Extra")) == {"test", "bench", "rllib", "benchmark",
                                                        "ecosystem"}
    for requirement in metadata.get_all("Requires-Dist"):
        if requirement.split(">")[0].split("[")[0].strip() in {"pytest", "hypothesis",
                                                                "httpx", "selenium"}:
            assert 'extra == "test"' in requirement, requirement
