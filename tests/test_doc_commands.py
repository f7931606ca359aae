"""Every command that docs/*.md quotes in its code blocks names a program that exists and
only arguments it accepts, checked without running it: its own argparse parser parses the
quoted arguments (scripts, ``python -m`` modules and console scripts alike), train.py's
overrides load as a config, ``pretrained:`` names are shipped checkpoints and ``pip``
extras are declared. A renamed flag, script, config or checkpoint fails here; a program
that needs a library not installed here (the examples of libraries outside the extras)
is skipped.

The commands themselves mostly take hours; README's run at small budgets in
tests/test_readme_commands.py, and benchmarks/*.py at tiny sizes in
tests/test_bench_scripts.py.
"""

from __future__ import annotations

import argparse
import re
import runpy
import shlex
import sys
from importlib.metadata import entry_points

import pytest

from agents.load import PRETRAINED_DIR
from agents.trainers.cli import config_of
from tests.pages import DOCS, ROOT, shell_commands

COMMANDS = list(dict.fromkeys(c for page in sorted(DOCS.glob("*.md"))
                              for c in shell_commands(page)))
#: Files that earlier commands on the page write (a run's checkpoint or config).
MADE_BY_A_RUN = ("runs/",)
#: This project's own top-level modules: a command that cannot import one of them fails.
OWN_PACKAGES = {"qwinto_env", "agents", "tests", "benchmarks", "train"}


class _Parsed(Exception):
    """Raised in place of running the program once its parser has accepted the words."""

    def __init__(self, namespace: argparse.Namespace):
        self.namespace = namespace


def _stop_after_parsing(monkeypatch) -> None:
    for name in ("parse_args", "parse_intermixed_args"):
        original = getattr(argparse.ArgumentParser, name)

        def parse(self, args=None, namespace=None, _original=original):
            raise _Parsed(_original(self, args, namespace))

        monkeypatch.setattr(argparse.ArgumentParser, name, parse)


def _program(words: list[str]):
    """A function that runs the program ``words`` names (as ``python`` or the console
    script would, with ``sys.argv`` set), and that ``sys.argv``."""
    if words[0].startswith("qwinto-"):
        found = entry_points(group="console_scripts", name=words[0])
        assert found, f"{words[0]} is not an installed console script"
        return lambda: next(iter(found)).load()(), words
    if words[1] == "-m":
        return lambda: runpy.run_module(words[2], run_name="__main__", alter_sys=True), \
            words[2:]
    script = ROOT / words[1]
    assert script.is_file(), f"{words[1]} does not exist"
    sys.path.insert(0, str(script.parent))  # as python does for a script
    return lambda: runpy.run_path(str(script), run_name="__main__"), [str(script), *words[2:]]


def _parse(words: list[str], monkeypatch, capsys) -> argparse.Namespace:
    """The namespace the program's own parser makes of ``words``."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    run, argv = _program(words)
    monkeypatch.setattr(sys, "argv", argv)
    _stop_after_parsing(monkeypatch)
    try:
        run()
    except _Parsed as parsed:
        return parsed.namespace
    except SystemExit as exit_:
        pytest.fail(f"refused ({exit_.code}): {capsys.readouterr().err.strip()}")
    except ModuleNotFoundError as missing:  # examples of libraries no extra installs
        if missing.name.split(".")[0] in OWN_PACKAGES:
            raise
        pytest.skip(f"{words[1]} needs {missing.name}, which is not installed")
    pytest.fail("the program parsed no arguments")


def _check_agents(namespace: argparse.Namespace) -> None:
    """The bots of ``--agents`` (agents.evaluate) or ``--opponents`` (qwinto_env.play)
    load, settings included (a checkpoint a run writes is not there yet)."""
    from agents import load
    from qwinto_env.opponents import split_specs

    specs = getattr(namespace, "agents", None) or getattr(namespace, "opponents", None)
    if not isinstance(specs, str):
        return
    specs = split_specs(specs)
    players = namespace.players or len(specs) + 1
    for spec in specs:
        if not spec.split(":")[-1].startswith(MADE_BY_A_RUN):
            load(spec, game=namespace.game, num_players=players)


@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # runpy, -m
@pytest.mark.parametrize("command", [c for c in COMMANDS if not c.startswith(
    ("pip ", "bash ", "python - "))], ids=str)
def test_quoted_command_parses(command, monkeypatch, capsys):
    words = shlex.split(command)
    namespace = _parse(words, monkeypatch, capsys)
    if words[:2] == ["python", "train.py"] or words[0] == "qwinto-train":
        if not namespace.config.startswith(MADE_BY_A_RUN):
            config_of(namespace)  # the config and its overrides load
    _check_agents(namespace)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("bash ")])
def test_quoted_shell_script_exists_with_its_flags(command):
    script, *flags = shlex.split(command)[1:]
    text = (ROOT / script).read_text()
    for flag in flags:
        assert re.search(rf"{re.escape(flag)}\b", text), f"{script} has no {flag}"


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("pip ")])
def test_quoted_extras_are_declared(command):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    extras = re.search(r"\[([\w,-]+)\]", command).group(1).split(",")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = pyproject["project"]["optional-dependencies"]
    assert not set(extras) - set(declared), f"{command}: no such extra"


def test_quoted_pretrained_names_are_shipped():
    names = {n for c in COMMANDS for n in re.findall(r"pretrained:([\w.-]+)", c)}
    assert names
    missing = sorted(n for n in names if not (PRETRAINED_DIR / f"{n}.pt").is_file())
    assert not missing, f"docs quote pretrained checkpoints that are not shipped: {missing}"


def test_every_page_with_commands_is_read():
    pages = {page.name for page in DOCS.glob("*.md") if shell_commands(page)}
    assert {"agents.md", "benchmark.md", "gpu.md", "play.md", "results.md", "rllib.md",
            "search.md", "batched.md", "cards.md"} <= pages
