"""Every shell command in README.md runs as written, long ones with smaller budgets.

The commands are read from the README's ``bash`` blocks, so a command added there is
run here too (and :func:`test_every_readme_command_has_a_runner` fails until this file
knows how to shorten it). Budgets shrink only sizes (steps, games, seconds); every flag
and override the README writes is kept. The console scripts ``qwinto-train`` and
``qwinto-evaluate`` shrink like ``python train.py`` and ``python -m agents.evaluate``, the
programs they run; a benchmark cell trains 4,096 steps (or the fewest its algorithm learns
from) in the test's folder. The install steps of the quickstart are what ``.ci/run`` does in a
fresh virtual environment, so they are not repeated here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
#: Lines of the quickstart that install (run by .ci/run as the README says) or run the
#: suite that runs this file.
SETUP = re.compile(r"^(python3? -m venv|\. \S+/activate|pip install|python -m pytest)")

#: The train.py overrides that shrink a run; each is added unless the command sets it.
TRAIN_BUDGET = {"run.total_steps": "16384", "run.checkpoint_every": "8192",
                "env.num_games": "32", "imitation.games": "8", "eval.every": "0",
                "eval.final_games": "8", "rllib.train_batch_size": "1024",
                "rllib.minibatch_size": "256"}
#: The sizes always shrunk, even when the README writes them (they only make it longer).
ALWAYS_SHRUNK = ("run.total_steps", "run.checkpoint_every", "eval.final_games")
#: Command-line options of the scripts, shrunk the same way: option -> value.
OPTION_BUDGET = {"--games": "16", "--steps": "4096", "--seconds": "0.05"}


def readme_commands() -> list[str]:
    """The commands of the README's bash blocks, comments stripped, ``&&`` chains split."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            for part in (p.strip() for p in line.split("&&")):
                if part and not SETUP.match(part):
                    commands.append(part)
    return list(dict.fromkeys(commands))


def shrink_train(words: list[str], runs: Path) -> list[str]:
    """``python train.py ...`` with the budget overrides and the test's run folder."""
    if "rllib" in " ".join(words):
        budget = dict(TRAIN_BUDGET)
    else:
        budget = {k: v for k, v in TRAIN_BUDGET.items() if not k.startswith("rllib.")}
    given = {w.split("=")[0] for w in words if "=" in w and not w.startswith("-")}
    for key in ALWAYS_SHRUNK:
        words = [w for w in words if not w.startswith(key + "=")]
        given.discard(key)
    if "run.init_from" in given or "sb3" in words or "rllib" in " ".join(words):
        budget.pop("imitation.games")  # those runs start without imitation
    extra = [f"{k}={v}" for k, v in budget.items() if k not in given]
    return words + extra + ["--runs-dir", str(runs), "--no-progress"]


def shrink_options(words: list[str]) -> list[str]:
    out = list(words)
    for i, word in enumerate(out[:-1]):
        if word in OPTION_BUDGET:
            out[i + 1] = OPTION_BUDGET[word]
    return out


def shrink_benchmark(words: list[str], tmp: Path) -> list[str]:
    """A benchmark cell at 4,096 steps (or the fewest its algorithm learns from) in the
    test's folder; a rating on 16 games."""
    from agents.benchmark.algorithms import get_algorithm
    from agents.benchmark.tasks import get_task

    out = shrink_options(words)
    if "run" in out:
        if "--budget" in out:
            del out[out.index("--budget"):out.index("--budget") + 2]
        module = get_algorithm(out[out.index("--algo") + 1])
        fewest = module.min_steps(get_task(out[out.index("--task") + 1])) \
            if hasattr(module, "min_steps") else 1
        out += ["--steps", str(max(4096, fewest)), "--root", str(tmp / "benchmark_runs"),
                "--no-progress"]
    if "rate" in out and "--games" not in out:
        out += ["--games", "16"]
    return out


def runner(command: str):
    """How to run ``command`` here: a function of the test's temp folder -> (argv, stdin,
    seconds it may take, whether it runs until stopped), or None when none is known."""
    words = shlex.split(command)
    head = " ".join(words[:3])
    if words[:2] == ["python", "train.py"] or words[0] == "qwinto-train":
        return lambda tmp: (shrink_train(words, tmp / "runs"), None, 900, False)
    if head.startswith(("python -m qwinto_env.play", "qwinto-play")):
        # Answer "1" (the first legal choice) to every question: a whole game.
        return lambda tmp: (words, "1\n" * 5000, 300, False)
    if head.startswith(("python -m agents.evaluate", "qwinto-evaluate", "python benchmarks/")):
        return lambda tmp: (shrink_options(words), None, 900, False)
    if head.startswith(("python -m agents.benchmark", "qwinto-benchmark")):
        return lambda tmp: (shrink_benchmark(words, tmp), None, 900, False)
    if words[0] == "tensorboard":
        return lambda tmp: (words, None, 15, True)
    if head.startswith(("python -m qwinto_env.web", "qwinto-web")):
        # A free port instead of the default one, which another program may hold.
        return lambda tmp: (words + ["--port", "0"], None, 20, True)
    if words[:2] == ["bash", "benchmarks/gpu_check.sh"]:
        return lambda tmp: (words, None, 600, False)
    return None


def test_every_readme_command_has_a_runner():
    commands = readme_commands()
    assert any(c.startswith("python train.py") for c in commands)
    assert any(c.startswith("qwinto-train") for c in commands)
    assert any(c.startswith("qwinto-evaluate") for c in commands)
    unknown = [c for c in commands if runner(c) is None]
    assert not unknown, f"README commands this test cannot run yet: {unknown}"


def _needs_gpu(command: str) -> bool:
    device_check = "gpu_check.sh" in command and "--dry-run" not in command
    return "--device cuda" in command or "device=cuda" in command or device_check


def _needs_ray(command: str) -> bool:
    return "rllib" in command and importlib.util.find_spec("ray") is None


def _run(argv: list[str], stdin: str | None, seconds: int, server: bool):
    """Run ``argv`` from the repository root (the README's commands assume it), with this
    interpreter for ``python`` and this environment's scripts for the rest."""
    head = sys.executable if argv[0] == "python" else str(BIN / argv[0])
    argv = [head if Path(head).exists() else argv[0], *argv[1:]]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if not server:
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=ROOT,
                              env=env, timeout=seconds)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT, env=env)
    time.sleep(seconds)
    alive = proc.poll() is None
    proc.terminate()
    out, _ = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, 0 if alive else proc.returncode, out, "")


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command, tmp_path):
    if _needs_gpu(command) and not torch.cuda.is_available():
        pytest.skip("the command asks for a CUDA device; this machine has none")
    if _needs_ray(command):
        pytest.skip("the command trains on Ray RLlib; the rllib extra is not installed")
    argv, stdin, seconds, server = runner(command)(tmp_path)
    if "--resume" in argv:  # it resumes the run that the README's `python train.py` makes
        first = runner("python train.py")(tmp_path)[0]
        assert _run(first, None, 900, False).returncode == 0
    result = _run(argv, stdin, seconds, server)
    assert result.returncode == 0, (f"{command!r} failed:\n{result.stdout[-3000:]}\n"
                                    f"{result.stderr[-3000:]}")


def test_a_bare_pytest_collects_what_python_m_pytest_does():
    """The docs run ``pytest -m slow``: the console script, unlike ``python -m pytest``,
    puts no checkout on ``sys.path``, so the test modules that import ``train`` or
    ``tests.*`` load only by ``pythonpath`` of pyproject.toml."""
    script = BIN / "pytest"
    if not script.exists():
        pytest.skip(f"no pytest console script beside {sys.executable}")
    done = subprocess.run([str(script), "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/test_cli.py", "tests/test_batched_expert.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
