"""The measuring scripts the docs quote, as a user runs them, at tiny sizes: they run to
their table (search_headroom.py broke when a helper it shares took a new argument), and
bad sizes, player counts, bots and configs are usage errors that name the option.

The runs take a few seconds each (a process that imports torch, a game or a tiny
training), about two minutes in all: the slow suite. distill_headroom.py runs in
tests/test_distill_headroom.py, gpu_check.py in tests/test_gpu_ready.py.
"""

import importlib.util
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
#: script -> its smallest run, and a line of its table (the header).
TINY = {
    "bench_batched.py": (["--seconds", "0.01", "--players", "2", "--batch-sizes", "4096",
                          "--gpu-batch-sizes", "4096"], "| game | engine | players | batch |"),
    "bench_bots.py": (["--seconds", "0.01", "--batch", "64", "--scalar-rows", "4",
                       "--threads", "1"], "| bot | game | players | backend | batch |"),
    "bench_load.py": (["--steps", "512", "--threads", "1"], "run.torch_threads"),
    "bench_parallel.py": (["--seconds", "0.01", "--players", "2"], "qwinto cards ParallelEnv"),
    "bench_render.py": (["--players", "2"], "| game | players | ms per frame |"),
    "bench_rllib.py": (["--runners", "1", "--iterations", "1", "--cpus", "1"],
                       "| env runners | sample env steps/s |"),
    "bench_search.py": (["--decisions", "2", "--presets", "person"], "| game | checkpoint |"),
    "bench_trainers.py": (["--steps", "512", "--games", "8"], "torch, decisions_only"),
    "bench_web.py": (["--games", "1", "--held", "1"], "| game | bot | moves |"),
    "fit_ladder.py": (["--ladder", "dice-4p", "--games", "100", "--bootstrap", "100",
                       "--quiet", "--out", "{tmp}/ladder.json"], "greedy vs expert"),
    "profile_rollout.py": (["--games", "16", "--steps", "2"], "**rollout step**"),
}
#: Run by their own tests (above), or no script (the scripts' shared argument types).
ELSEWHERE = {"search_headroom.py", "distill_headroom.py", "gpu_check.py", "arguments.py"}


def test_every_benchmark_script_runs_here():
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    assert scripts - ELSEWHERE == set(TINY)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_to_its_table(script, tmp_path):
    if script == "bench_rllib.py" and importlib.util.find_spec("ray") is None:
        pytest.skip("the rllib extra is not installed")
    args, line = TINY[script]
    result = subprocess.run([sys.executable, f"benchmarks/{script}",
                             *(a.format(tmp=tmp_path) for a in args)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert line in result.stdout


@pytest.mark.parametrize("script,args,option", [
    ("bench_batched.py", ["--seconds", "0"], "--seconds"),  # measured nothing: 0 steps/s
    ("bench_batched.py", ["--seconds", "nan"], "--seconds"),
    ("bench_batched.py", ["--batch-sizes", "0"], "--batch-sizes"),
    ("bench_batched.py", ["--players", "9"], "--players"),
    ("bench_bots.py", ["--batch", "0"], "--batch"),  # ZeroDivisionError
    ("bench_bots.py", ["--bots", "nobot", "--games", "dice"], "unknown agent spec 'nobot'"),
    ("bench_load.py", ["--threads", "5000"], "run.torch_threads"),
    ("bench_parallel.py", ["--players", "0"], "--players"),
    ("bench_render.py", ["--games", "chess"], "--games"),
    ("bench_rllib.py", ["--config", "nothere.yaml"], "'nothere.yaml': does not exist"),
    ("bench_search.py", ["--decisions", "0"], "--decisions"),  # IndexError
    ("bench_search.py", ["--games", "dice", "--presets", "fast", "--decisions", "1"],
     "unknown search preset"),
    ("bench_trainers.py", ["--hidden", "wide"], "network.hidden"),
    ("bench_web.py", ["--games", "0"], "--games"),  # StatisticsError
    ("gpu_check.py", ["--device", "gpu"], "--device"),
    ("gpu_check.py", ["--device", "mps"], "--device: must be one of auto, cpu, cuda, cuda:N"),
    ("fit_ladder.py", ["--ladder", "dice-2p", "--games", "0"], "--games"),
    ("profile_rollout.py", ["--steps", "0"], "--steps"),  # ZeroDivisionError
    ("profile_rollout.py", ["--game", "chess"], "env.game"),
    ("profile_rollout.py", ["--device", "gpu"], "run.device: must be one of auto, cpu, cuda"),
])
def test_bad_input_is_a_usage_error(script, args, option, monkeypatch, capsys):
    err = usage_error(script, args, monkeypatch, capsys)
    assert option in err, err


@pytest.mark.parametrize("script", ["gpu_check.py", "profile_rollout.py", "bench_trainers.py"])
def test_a_gpu_past_those_torch_sees_is_a_usage_error(script, monkeypatch, capsys):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    err = usage_error(script, ["--device", "cuda:2"], monkeypatch, capsys)
    assert "run.device: is 'cuda:2' but torch sees 2 CUDA devices (cuda:0 to cuda:1;" in err


def usage_error(script, args, monkeypatch, capsys):
    """What ``script`` (run as a script) says on stderr as it refuses ``args``: exit code 2."""
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])
    monkeypatch.setattr(sys, "argv", [script, *args])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{script}: error: " in err, err
    return err


@pytest.mark.parametrize("name, text, problem", [
    (".", None, "is a directory"),
    ("notes.md", "# notes\n", "is not a ladder file (Expecting value"),
    ("list.json", "[1]\n", 'is not a ladder file (no "ladders" object)')])
def test_fit_ladder_refuses_an_out_it_cannot_write_before_the_fit(name, text, problem, tmp_path,
                                                                  monkeypatch, capsys):
    """A directory or a file of another kind failed after the round robin (hours of play),
    in save_fit's IsADirectoryError, JSONDecodeError or AttributeError."""
    from agents.benchmark import ladder

    monkeypatch.setattr(ladder, "fit_ladder", lambda *a, **k: pytest.fail("a fit was played"))
    out = tmp_path / name
    if text is not None:
        out.write_text(text)
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])
    monkeypatch.setattr(sys, "argv", ["fit_ladder.py", "--ladder", "dice-2p", "--out", str(out)])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(BENCHMARKS / "fit_ladder.py"), run_name="__main__")
    assert exit_.value.code == 2
    assert f"fit_ladder.py: error: argument --out: {str(out)!r} {problem}" in \
        capsys.readouterr().err
    assert out.is_dir() or out.read_text() == text


@pytest.mark.parametrize("args", [
    ["--game", "cards", "--variants", "2/4/1/play"],
    ["--game", "dice", "--objective", "win", "--variants", "0/4/2/all/0.01"]])
def test_search_headroom_runs_to_its_table(args):
    result = subprocess.run([sys.executable, "benchmarks/search_headroom.py", "--decisions", "3",
                             "--samples", "4", *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "| leaves the favourite | reference gain per decision |" in result.stdout


def test_bench_batched_prints_ratios_below_ten_to_two_digits(monkeypatch):
    """A batch of one game runs below the ParallelEnv: its ratio printed as 0 hid that."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    ratio_text = runpy.run_path(str(BENCHMARKS / "bench_batched.py"))["ratio_text"]
    assert [ratio_text(r) for r in (0.4706, 0.064, 6.09, 214.2, 1234.5)] == \
        ["0.47", "0.064", "6.1", "214", "1,234"]
