"""The benchmark's tasks, protocol, runner, table and command line (tiny budgets)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import load
from agents.base import Agent
from agents.benchmark import __main__ as cli
from agents.benchmark import extras, protocol, report, runner
from agents.benchmark.algorithms import ALGORITHMS, Progress
from agents.benchmark.tasks import TASKS, get_task


class FirstLegal(Agent):
    """A user's own agent, as `rate --agent module:Class` builds it."""

    supports_batch = True

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])

    def act_batch(self, observations, masks):
        return np.asarray(masks).argmax(1).astype(np.int64)


class FirstIllegal(Agent):
    """A user's agent with a bug: it plays the first action its mask forbids."""

    def act(self, observation, action_mask):
        return int(np.flatnonzero(np.asarray(action_mask) == 0)[0])


def test_task_ids_are_versioned_and_known_tasks_listed():
    assert {"dice-2p-v0", "dice-4p-v0", "cards-2p-v0", "dice-solo-v0"} <= set(TASKS)
    assert all(re.fullmatch(r"[a-z0-9-]+-v\d+", task_id) for task_id in TASKS)
    with pytest.raises(KeyError, match="unknown task 'dice-2p-v9'.*dice-2p-v0"):
        get_task("dice-2p-v9")


@pytest.mark.parametrize("task_id", list(TASKS))
def test_every_task_builds_its_env_and_references(task_id):
    from agents import load

    task = get_task(task_id)
    env = task.make_env()
    obs, _ = env.reset(seed=0)
    assert env.unwrapped.num_players == task.num_players
    action = int(np.flatnonzero(obs["action_mask"])[0])
    env.step(action)
    for ref in task.evaluation.references:
        load(ref, game=task.game, num_players=task.num_players)
    assert task.budget.cpu < task.budget.gpu
    with pytest.raises(ValueError, match="budget must be"):
        task.budget.steps("tpu")


def test_protocol_is_deterministic_and_tells_agents_apart():
    task = get_task("dice-solo-v0")
    a = protocol.evaluate("greedy", task, games=40)
    assert a == protocol.evaluate("greedy", task, games=40)
    assert a["games"] == 40
    assert protocol.evaluate("random", task, games=40)["mean_score"] < a["mean_score"]


def test_the_protocol_takes_a_task_id_as_a_notebook_passes_it():
    """``evaluate(agent, "dice-solo-v0")`` raised AttributeError ('str' has no evaluation)."""
    by_id = protocol.evaluate("greedy", "dice-solo-v0", games=20)
    assert by_id == protocol.evaluate("greedy", get_task("dice-solo-v0"), games=20)
    assert protocol.win_keys("dice-2p-v0") == protocol.win_keys(get_task("dice-2p-v0"))
    with pytest.raises(KeyError, match="unknown task 'dice-2p-v9'; known tasks: dice-2p-v0"):
        protocol.evaluate("greedy", "dice-2p-v9")
    with pytest.raises(TypeError, match="task must be a Task or a task id .*got 7"):
        protocol.evaluate("greedy", 7)


@pytest.mark.parametrize("task_id", ["dice-2p-v0", "cards-2p-v0"])
def test_an_agent_without_act_batch_plays_the_same_games_as_one_with_it(task_id):
    """The evaluator picks its engine by ``supports_batch``, and the two engines draw
    chance differently: the protocol plays every agent on the batched one."""
    from agents import load

    task = get_task(task_id)
    greedy = load("greedy", game=task.game, num_players=task.num_players)

    class RowByRow(Agent):
        supports_batch = False

        def act(self, observation, action_mask):
            return greedy.act(observation, action_mask)

    row = RowByRow(task.game, task.num_players)
    assert protocol.evaluate(row, task, games=30) == protocol.evaluate(greedy, task, games=30)


def test_the_baselines_docstrings_state_the_tasks_cpu_budget():
    """dqn's said its defaults were scaled to "the 200,000-step CPU budget": it is 50,000."""
    from agents.benchmark.algorithms import get_algorithm

    (cpu,) = {f"{task.budget.cpu:,}" for task in TASKS.values()}
    stated = {name: re.findall(r"([\d,]+)-step CPU\s+budget", get_algorithm(name).__doc__)
              for name in ALGORITHMS}
    assert stated["dqn"] and stated["nfsp"]
    assert all(budget == cpu for budgets in stated.values() for budget in budgets), stated


def test_progress_reports_once_per_update_however_many_points_it_passes():
    seen = []

    class Spy(Progress):
        def on_point(self, steps, agent):
            seen.append((steps, agent))

    p = Spy([10, 20, 30])
    p.update(5, lambda: pytest.fail("no point due"))
    p.update(25, lambda: "a")
    p.update(31, lambda: "b")
    p.update(40, lambda: pytest.fail("no point left"))
    assert seen == [(25, "a"), (31, "b")] and p.steps == 40


def test_a_cell_runs_once_and_resumes_after_a_kill(tmp_path, monkeypatch):
    first = runner.run_cell("dice-solo-v0", "ppo", 0, steps=4096, root=tmp_path,
                            progress=False)
    path = runner.cell_dir(tmp_path, "dice-solo-v0", "ppo", "custom", 0) / "result.json"
    assert json.loads(path.read_text()) == first
    assert first["curve"][-1]["steps"] >= 4096 and first["final"]["games"] == 2000
    assert first["command"].startswith("python -m agents.benchmark run --task dice-solo-v0")
    module = __import__(ALGORITHMS["ppo"], fromlist=["train"])
    monkeypatch.setattr(module, "train", lambda *a: pytest.fail("a done cell was run again"))
    assert runner.run_cell("dice-solo-v0", "ppo", 0, steps=4096, root=tmp_path) == first
    with pytest.raises(ValueError, match="holds a run of 4096 steps, not 8192"):
        runner.run_cell("dice-solo-v0", "ppo", 0, steps=8192, root=tmp_path)
    monkeypatch.undo()
    # killed: work/ left behind, no result: the cell runs again from the start, same result
    path.unlink()
    (path.parent / "work" / "stale").write_text("left by a kill")
    again = runner.run_cell("dice-solo-v0", "ppo", 0, steps=4096, root=tmp_path,
                            progress=False)
    assert again["final"] == first["final"]
    assert not (path.parent / "work" / "stale").exists()


def _fake(task, algorithm, seed, value):
    curve = [{"steps": s, "seconds": s / 100, "mean_score": value * s / 200, "games": 10}
             for s in (100, 200)]
    return {"task": task, "algorithm": algorithm, "seed": seed, "budget": "cpu",
            "steps": 200, "family": "f", "masks": "m", "train_seconds": 60.0,
            "final": {"mean_score": value, "games": 10}, "curve": curve}


def test_table_gives_rliable_iqm_and_bootstrap_intervals(tmp_path):
    pytest.importorskip("rliable", reason="the benchmark extra is not installed")
    results = [_fake("dice-solo-v0", "a", s, v) for s, v in enumerate([10.0, 20.0, 30.0, 40.0])]
    results += [_fake("dice-solo-v0", "b", s, v) for s, v in enumerate([5.0, 5.0, 5.0])]
    rows = {r["algorithm"]: r for r in report.aggregate(results)}
    assert rows["a"]["iqm"] == pytest.approx(25.0)   # the middle two of four
    assert rows["a"]["mean"] == pytest.approx(25.0)
    assert rows["a"]["iqm_low"] < 25.0 < rows["a"]["iqm_high"]
    assert rows["b"]["iqm_low"] == rows["b"]["iqm_high"] == pytest.approx(5.0)
    text = report.build(results, tmp_path)
    assert text.index("`a`") < text.index("`b`")
    assert (tmp_path / "curves_dice-solo-v0.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "results.json").read_text()) == results
    assert "iqm_low" in (tmp_path / "table.csv").read_text().splitlines()[0]
    assert "--seed <seed>`;" in text  # the CPU budget: no flag
    custom = [{**r, "budget": "custom", "steps": 9000} for r in results]
    assert "--seed <seed> --steps 9000`;" in report.build(custom, tmp_path)


def test_table_command_rewrites_only_the_generated_part_of_the_doc(tmp_path, capsys):
    pytest.importorskip("rliable", reason="the benchmark extra is not installed")
    for seed in range(2):
        cell = runner.cell_dir(tmp_path / "runs", "dice-solo-v0", "x", "cpu", seed)
        cell.mkdir(parents=True)
        (cell / "result.json").write_text(json.dumps(_fake("dice-solo-v0", "x", seed, 7.0)))
    doc = tmp_path / "bench.md"
    doc.write_text(f"intro\n{cli.TABLE_START}\nold\n{cli.TABLE_END}\noutro\n")
    assert cli.main(["table", "--root", str(tmp_path / "runs"), "--out", str(tmp_path / "o"),
                     "--doc", str(doc), "--baselines", ""]) == 0
    page = doc.read_text()
    assert page.startswith("intro\n") and page.endswith(f"{cli.TABLE_END}\noutro\n")
    assert "old" not in page and "`x`" in page
    assert cli.main(["table", "--root", str(tmp_path / "none"), "--doc", "",
                     "--baselines", ""]) == 1
    assert "no finished cells" in capsys.readouterr().err


def test_table_adds_the_shipped_baselines_the_users_root_lacks(tmp_path, monkeypatch):
    """A root with only the user's cells gave a table without the baselines, and wrote
    that over docs/benchmark/results.json, the shipped cells' one copy."""
    pytest.importorskip("rliable", reason="the benchmark extra is not installed")
    shipped_path = Path(__file__).resolve().parent.parent / cli.BASELINES
    shipped = json.loads(shipped_path.read_text())
    (tmp_path / "docs" / "benchmark").mkdir(parents=True)
    shutil.copy(shipped_path, tmp_path / cli.BASELINES)
    shutil.copy(shipped_path.parent.parent / "benchmark.md", tmp_path / cli.DOC)
    ppo0 = next(r for r in shipped if (r["task"], r["algorithm"], r["seed"])
                == ("dice-2p-v0", "ppo", 0))
    own = [{**ppo0, "algorithm": "mine", "seed": seed} for seed in (0, 1)]
    own.append({**ppo0, "final": {**ppo0["final"], "rating": 1234.5}})  # run again
    for r in own:
        cell = runner.cell_dir(tmp_path / "runs", r["task"], r["algorithm"], "cpu", r["seed"])
        cell.mkdir(parents=True)
        (cell / "result.json").write_text(json.dumps(r))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["table", "--root", "runs"]) == 0
    written = json.loads((tmp_path / cli.BASELINES).read_text())
    assert len(written) == len(shipped) + 2
    assert all(r in written for r in shipped if r is not ppo0) and ppo0 not in written
    assert own[2] in written  # the user's own cell wins
    table = (tmp_path / cli.DOC).read_text().split(cli.TABLE_START)[1].split(cli.TABLE_END)[0]
    assert "| `mine` |" in table and table.count("| `nfsp` |") == 2  # one row per task
    assert cli.main(["table", "--root", "runs", "--baselines", "", "--doc", ""]) == 0
    assert json.loads((tmp_path / cli.BASELINES).read_text()) == own


def test_another_budgets_table_leaves_the_shipped_table_and_cells(tmp_path, monkeypatch):
    """``table --budget custom`` (docs/benchmark.md's way to see a ``--steps`` try) wrote
    the try's rows over the shipped page's table and the try's cells alone over
    docs/benchmark/results.json, the shipped cells' one copy."""
    pytest.importorskip("rliable", reason="the benchmark extra is not installed")
    shipped_path = Path(__file__).resolve().parent.parent / cli.BASELINES
    (tmp_path / "docs" / "benchmark").mkdir(parents=True)
    shutil.copy(shipped_path, tmp_path / cli.BASELINES)
    shutil.copy(shipped_path.parent.parent / "benchmark.md", tmp_path / cli.DOC)
    before = {p: (tmp_path / p).read_bytes() for p in (cli.BASELINES, cli.DOC)}
    try_ = {**_fake("dice-solo-v0", "mine", 0, 7.0), "budget": "custom"}
    cell = runner.cell_dir(tmp_path / "runs", "dice-solo-v0", "mine", "custom", 0)
    cell.mkdir(parents=True)
    (cell / "result.json").write_text(json.dumps(try_))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["table", "--root", "runs", "--budget", "custom"]) == 0
    assert {p: (tmp_path / p).read_bytes() for p in before} == before
    assert json.loads((tmp_path / "runs" / "table-custom" / "results.json").read_text()) \
        == [try_]
    assert cli.main(["table", "--root", "runs", "--budget", "custom", "--out",
                     "docs/benchmark"]) == 0  # asked for: the file keeps every cell
    written = json.loads((tmp_path / cli.BASELINES).read_text())
    assert written == [try_, *json.loads(before[cli.BASELINES])]
    assert (tmp_path / cli.DOC).read_bytes() == before[cli.DOC]


@pytest.mark.parametrize("argv, message", [
    (["run", "--task", "dice-9p-v0", "--algo", "ppo", "--seed", "0"],
     "unknown task 'dice-9p-v0'; known: dice-2p-v0"),
    (["run", "--task", "", "--algo", "ppo", "--seed", "0"], "unknown task ''; known:"),
    (["table", "--root", "/no/such", "--doc", "", "--baselines", "", "--out", ""],
     "argument --out: '' is no folder"),
    (["run", "--task", "all", "--algo", "sarsa", "--seed", "0"],
     "unknown algorithm 'sarsa'; known: ppo, maskable-ppo"),
    (["run", "--task", "all", "--algo", "ppo", "--seed", "x"], "seeds are integers"),
    (["run", "--task", "all", "--algo", "ppo", "--seed", "0", "--steps", "0"], "positive"),
    *[(["rate", "--task", "dice-solo-v0", "--agent", "greedy", "--games", games],
       f"argument --games: must be a positive integer of at most 1,000,000 (the evaluator "
       f"keeps every game in memory), got '{games}'") for games in ("1.5", "0", "-3")],
    (["rate", "--task", "dice-solo-v0", "--agent", "greedy", "--games", "100000000000000"],
     "argument --games: must be a positive integer of at most 1,000,000"),
    # a --root that cannot be made (under a file): a refused option writes nothing anywhere
    *[(["run", "--task", "dice-solo-v0", "--algo", "ppo", "--seed", "0", option, "10" * 7,
        "--root", f"{__file__}/root"], f"argument {option}: must be a positive integer of at "
                                       f"most {most}") for option, most in
      (("--steps", "1,000,000,000,000"), ("--threads", "1,024"), ("--jobs", "256"))],
    (["rate", "--task", "dice-solo-v0", "--agent", "no_such_module:Bot"], "cannot import"),
    (["rate", "--task", "dice-solo-v0", "--agent", "sarsa"], "unknown agent spec"),
    (["rate", "--task", "dice-solo-v0", "--agent", "agents.base:Agent"],
     "argument --agent: agent 'agents.base:Agent': Agent(game='dice', num_players=1) failed: "
     "TypeError"),
    (["rate", "--task", "dice-solo-v0", "--agent", "os:getcwd"],
     "agent 'os:getcwd': os.getcwd is not a subclass of agents.base.Agent"),
    (["rate", "--task", "dice-solo-v0", "--agent", "greedy", "--json", "/no/such/x.json"],
     "argument --json: '/no/such/x.json' is in '/no/such', which is not an existing"),
    (["table", "--root", "/no/such", "--doc", "/no/such/bench.md"],
     "argument --doc: '/no/such/bench.md' does not exist"),
    (["table", "--root", "/no/such", "--doc", "/"], "argument --doc: '/' is a directory"),
    (["table", "--root", "/no/such", "--doc", "", "--baselines", "/no/such/results.json"],
     "argument --baselines: '/no/such/results.json' does not exist"),
    (["table", "--root", "/no/such", "--doc", "", "--baselines", __file__],
     f"argument --baselines: {__file__}: not a table's results.json ("),
    (["run", "--task", "dice-solo-v0", "--algo", "ppo", "--seed", "0", "--steps", "64",
      "--root", "/no/such/root"], "argument --steps: 64 learner steps are fewer than algorithm "
                                  "'ppo' needs on dice-solo-v0 for its first update (4,096)"),
    *[(["run", "--task", "dice-2p-v0", "--algo", algo, "--seed", "0", "--steps", "200",
        "--root", "/no/such/root"], f"fewer than algorithm '{algo}' needs on dice-2p-v0 for "
                                    f"its first update ({fewest})")
      for algo, fewest in (("dqn", "5,001"), ("maskable-ppo", "2,048"), ("nfsp", "2,032"))],
    (["table", "--root", "/no/such", "--doc", "", "--out", __file__], "is a file, not a folder"),
    (["run", "--task", "dice-solo-v0", "--algo", "ppo", "--seed", "18446744073709551621"],
     "seeds must be in 0..4294967295"),
    (["run", "--task", "dice-solo-v0", "--algo", "ppo", "--seed", "0", "--root", __file__],
     "argument --root: "),
])
def test_bad_command_lines_are_refused_naming_the_problem(argv, message, capsys, monkeypatch):
    """Each before any game is played (the protocol would raise) or any file written."""
    monkeypatch.setattr(protocol, "evaluate", lambda *a, **k: pytest.fail("games were played"))
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_the_protocol_refuses_more_games_than_it_can_hold():
    """10**14 games per reference died in numpy's allocator (a MemoryError)."""
    with pytest.raises(ValueError, match="games: must be at most 1,000,000"):
        protocol.evaluate("greedy", get_task("dice-solo-v0"), games=10 ** 14)


def test_table_outside_the_project_root_writes_nothing(tmp_path, monkeypatch, capsys):
    """The default --doc is docs/benchmark.md of the working folder: elsewhere the command
    stops before it writes the default --out, docs/benchmark/."""
    cell = runner.cell_dir(tmp_path / "runs", "dice-solo-v0", "x", "cpu", 0)
    cell.mkdir(parents=True)
    (cell / "result.json").write_text(json.dumps(_fake("dice-solo-v0", "x", 0, 7.0)))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["table", "--root", "runs"])
    assert exit_.value.code == 2
    assert "--doc: 'docs/benchmark.md' does not exist" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_rate_writes_strict_json(tmp_path, monkeypatch):
    """A rating of minus infinity (every game lost) is null in the file, not -Infinity."""
    out = tmp_path / "r.json"
    monkeypatch.setattr(protocol, "evaluate",
                        lambda agent, task, games=None: {"rating": -math.inf, "win_rate": 0.0})
    assert cli.main(["rate", "--task", "dice-2p-v0", "--agent", "random", "--json",
                     str(out)]) == 0
    assert json.loads(out.read_text(), parse_constant=pytest.fail)["rating"] is None


def test_a_closed_pipe_ends_the_commands_quietly():
    """``| head``: status 1 and nothing on stderr, not a BrokenPipeError traceback."""
    for argv in (["-m", "agents.benchmark", "list"],
                 ["-m", "agents.evaluate", "--agents", "random,greedy", "--games", "4", "--quiet"],
                 ["train.py", "--help-config"]):
        proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parent.parent)
        proc.stdout.close()  # the reader is gone before the first line
        assert proc.wait(timeout=120) == 1, argv
        assert proc.stderr.read() == b"", argv
        proc.stderr.close()


@pytest.fixture
def without(monkeypatch):
    """Makes the named top-level modules look uninstalled to the benchmark's checks."""
    real = extras.importlib.util.find_spec

    def hide(*names):
        monkeypatch.setattr(extras.importlib.util, "find_spec",
                            lambda name, *a: None if name in names else real(name, *a))
    return hide


@pytest.mark.parametrize("algorithm, module, extra", [("rllib-ppo", "ray", "rllib"),
                                                      ("nfsp", "open_spiel", "benchmark")])
def test_an_algorithm_whose_library_is_missing_stops_the_suite_before_any_cell(
        tmp_path, capsys, without, algorithm, module, extra):
    without(module)
    root = tmp_path / "runs"
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--task", "dice-solo-v0", "--algo", f"ppo,{algorithm}", "--seed", "0",
                  "--steps", "64", "--root", str(root), "--no-progress"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"algorithm {algorithm}" in err and f'pip install -e ".[{extra}]"' in err
    assert not root.exists()  # ppo, listed first, did not start either
    with pytest.raises(extras.MissingExtra, match=module):
        runner.run_cell("dice-solo-v0", algorithm, 0, steps=64, root=root)
    assert not root.exists()
    assert cli.main(["list"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith(algorithm)]
    assert len(listed) == 1 and listed[0].endswith(f'[not installed: pip install -e ".[{extra}]"]')


def test_the_table_without_rliable_names_the_extra(tmp_path, capsys, without):
    without("rliable")
    cell = runner.cell_dir(tmp_path / "runs", "dice-solo-v0", "x", "cpu", 0)
    cell.mkdir(parents=True)
    (cell / "result.json").write_text(json.dumps(_fake("dice-solo-v0", "x", 0, 7.0)))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["table", "--root", str(tmp_path / "runs"), "--out", str(tmp_path / "o"),
                  "--doc", ""])
    assert exit_.value.code == 2
    assert 'rliable, which is not installed: pip install -e ".[benchmark]"' in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_user_rates_their_own_class_in_one_command(tmp_path, capsys):
    out = tmp_path / "me.json"
    assert cli.main(["rate", "--task", "dice-solo-v0", "--agent",
                     "tests.test_benchmark:FirstLegal", "--games", "30",
                     "--json", str(out)]) == 0
    metrics = json.loads(out.read_text())
    expected = protocol.evaluate(FirstLegal("dice", 1), get_task("dice-solo-v0"), games=30)
    assert metrics == {"task": "dice-solo-v0", "agent": "tests.test_benchmark:FirstLegal",
                       **expected}
    assert "mean_score" in capsys.readouterr().out


def test_an_illegal_action_of_the_users_agent_is_its_fault_not_the_command_lines(capsys):
    """It was reported with the usage line and status 2, as a bad command line is."""
    assert cli.main(["rate", "--task", "dice-2p-v0", "--agent",
                     "tests.test_benchmark:FirstIllegal", "--games", "4"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m agents.benchmark: error: bot FirstIllegal "
                          "'tests.test_benchmark:FirstIllegal' answered act() with 0: not "
                          "legal (legal: [")
    assert "usage" not in err and len(err.splitlines()) == 1


def test_the_console_script_finds_the_users_module_in_the_working_folder(tmp_path):
    """``python -m`` puts the working folder on the path, a console script does not."""
    (tmp_path / "mybots.py").write_text(
        "import numpy as np\nfrom agents.base import Agent\n\n"
        "class First(Agent):\n"
        "    def act(self, observation, action_mask):\n"
        "        return int(np.flatnonzero(action_mask)[0])\n")
    script = Path(sys.executable).parent / "qwinto-benchmark"
    result = subprocess.run([str(script), "rate", "--task", "dice-solo-v0", "--agent",
                             "mybots:First", "--games", "4"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "mean_score" in result.stdout


@pytest.mark.parametrize("spec", ["pretrained:dice-2p", "lookahead:pretrained:dice-2p",
                                  "search:pretrained:dice-2p-v2",
                                  "search[person,samples=8]:pretrained:dice-2p-v2"])
def test_rate_takes_every_agents_load_spec_with_a_colon(spec):
    agent = load(spec, "dice", 2)
    assert agent.name == spec


def test_a_reference_rated_by_the_protocol_lands_on_its_frozen_rating():
    from agents.benchmark.ladder import get_ladder

    task = get_task("dice-2p-v0")
    first = protocol.evaluate("greedy", task, games=100)
    assert first == protocol.evaluate("greedy", task, games=100)
    assert set(protocol.win_keys(task)) < set(first)
    frozen = get_ladder(task.ladder).ratings["greedy"].rating
    assert first["rating_low"] <= frozen <= first["rating_high"]
    assert first["rating_high"] - first["rating_low"] < 200


@pytest.mark.parametrize("text, message", [
    ('{"task": "dice-2p-v0", ', "not a cell's result (Expecting"),
    ("[]", "not a cell's result (no task"), ("{}", "not a cell's result (no task"),
    (None, "unknown task 'dice-2p-v9'")])
def test_a_damaged_cell_result_is_named_by_table_and_run(tmp_path, capsys, text, message):
    good = _fake("dice-solo-v0", "ppo", 0, 10.0)
    path = runner.cell_dir(tmp_path, "dice-solo-v0", "ppo", "cpu", 0) / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text(text if text is not None else json.dumps({**good, "task": "dice-2p-v9"}))
    with pytest.raises(ValueError, match=re.escape(f"{path}: {message}")):
        runner.read_results(tmp_path)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        runner.run_cell("dice-solo-v0", "ppo", 0, root=tmp_path)


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.update(final={}), "final: not a cell's result (no mean_score)"),
    (lambda r: r["final"].update(mean_score="7"), "final: not a cell's result (mean_score is "
                                                  "'7', not a number)"),
    (lambda r: r.update(train_seconds="60"),
     "not a cell's result (train_seconds is '60', not a number)"),
    (lambda r: r.update(curve=[{"steps": 100}]), "curve 0: not a cell's result (no seconds)"),
    (lambda r: r.update(curve=[5]), "curve 0: not a cell's result (5 is not an object)"),
    (lambda r: r.update(final=None), "not a cell's result (final of another type)"),
    (lambda r: r.update(steps="200"), "not a cell's result (steps of another type)")])
def test_a_hand_edited_cell_is_named_by_table_not_a_traceback(tmp_path, capsys, edit, message):
    """Each ended in a KeyError or TypeError from the table's sums, naming no file."""
    cell = _fake("dice-solo-v0", "x", 0, 7.0)
    edit(cell)
    path = runner.cell_dir(tmp_path, "dice-solo-v0", "x", "cpu", 0) / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(cell))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["table", "--root", str(tmp_path), "--doc", "", "--baselines", "",
                  "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert f"{path}: {message}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_damaged_results_file_names_the_cell(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps([_fake("dice-solo-v0", "x", 0, 7.0), {"task": "dice-2p-v0"}]))
    with pytest.raises(ValueError, match=re.escape(f"{path}, cell 1: not a cell's result (no "
                                                   "algorithm")):
        runner.read_results_file(path)
    path.write_text(json.dumps([{**_fake("dice-solo-v0", "x", 0, 7.0), "seed": "0"}]))
    with pytest.raises(ValueError, match="cell 0: not a cell's result .seed of another type"):
        runner.read_results_file(path)


USER_ALGORITHM = '''"""A user's algorithm: it learns nothing, it plays the first legal action."""
import numpy as np
from agents.base import Agent

FAMILY, MASKS, LIBRARY = "none", "first legal action", "mine"


class First(Agent):
    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


def train(task, seed, steps, workdir, progress):
    agent = First(task.game, task.num_players)
    progress.update(steps, lambda: agent)
    return agent
'''


@pytest.fixture
def users_folder(tmp_path, monkeypatch):
    """The working folder of a user whose modules sit beside them (not installed)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("users_")]:
        del sys.modules[name]


def test_a_users_own_algorithm_runs_from_its_module_without_an_edit_of_the_package(
        users_folder, capsys):
    """--algo took only the names of ALGORITHMS: a user of the installed package had to
    edit it to benchmark their own algorithm."""
    (users_folder / "users_algo.py").write_text(USER_ALGORITHM)
    assert cli.main(["run", "--task", "dice-solo-v0", "--algo", "users_algo", "--seed", "0",
                     "--steps", "100", "--root", "runs", "--no-progress"]) == 0
    assert "dice-solo-v0 users_algo seed 0: mean score" in capsys.readouterr().out
    (result,) = runner.read_results("runs", "custom")
    assert (result["algorithm"], result["family"], result["library"]) == (
        "users_algo", "none", "mine")
    assert "--algo users_algo --seed 0 --steps 100" in result["command"]


@pytest.mark.parametrize("text, message", [
    (None, "unknown algorithm 'users_none'; known: ppo, maskable-ppo"),
    ("FAMILY = 'x'\n", "algorithm 'users_x': module users_x lacks MASKS, LIBRARY, train"),
    (USER_ALGORITHM.replace("def train(", "train = 3\ndef _("),
     "algorithm 'users_x': module users_x lacks a callable train"),
    ("import no_such_library\n", "algorithm 'users_x': importing module users_x failed: "
                                  "ModuleNotFoundError: No module named 'no_such_library'"),
    ("1 / 0\n", "algorithm 'users_x': importing module users_x failed: ZeroDivisionError")])
def test_a_users_module_that_is_no_algorithm_is_refused_naming_it(users_folder, text, message,
                                                                   capsys):
    if text is not None:
        (users_folder / "users_x.py").write_text(text)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--task", "dice-solo-v0", "--algo",
                  "users_none" if text is None else "users_x", "--seed", "0", "--root", "runs"])
    assert exit_.value.code == 2
    assert f"argument --algo: {message}" in capsys.readouterr().err
    assert not (users_folder / "runs").exists()


@pytest.mark.parametrize("old, new, message", [
    ("    return agent\n", "    return None\n", "seed 0: train returned None, not an"),
    ("lambda: agent", "lambda: 'first'", "seed 0: make_agent() at step 100 returned 'first', "
                                         "not an"),
    ("progress.update(steps,", "progress.update(steps // 2,",
     "seed 0: train reported 50 of the cell's 100 learner steps (the contract: "
     "progress.update(steps_done, make_agent) when it ends)")])
def test_a_users_algorithm_breaking_the_contract_is_named_as_its_fault(users_folder, capsys,
                                                                      old, new, message):
    """The protocol's complaint about a None entrant came as a bad command line (status 2,
    the usage line) and named neither the algorithm nor its train; a train that reported
    half the steps was recorded as a cell of the whole budget."""
    (users_folder / "users_algo.py").write_text(USER_ALGORITHM.replace(old, new))
    assert cli.main(["run", "--task", "dice-solo-v0", "--algo", "users_algo", "--seed", "0",
                     "--steps", "100", "--root", "runs", "--no-progress"]) == 1
    assert capsys.readouterr().err.startswith(
        f"python -m agents.benchmark: error: dice-solo-v0 users_algo {message}")
    assert runner.read_results("runs", "custom") == []


def test_a_cell_named_twice_runs_once():
    """``--seed 1,1`` listed the cell twice, and with --jobs 2 trained it twice at once in
    one folder."""
    assert cli._seeds("1,1,0") == [1, 0]
    assert cli._names("ppo,dqn,ppo", list(ALGORITHMS), "algorithm") == ["ppo", "dqn"]


def test_all_names_every_baseline_inside_a_list_too(users_folder):
    """``--algo all,users_algo`` (the baselines and yours) was refused as an unknown
    algorithm 'all'; the same for ``--task``."""
    (users_folder / "users_algo.py").write_text(USER_ALGORITHM)
    args = cli.parser().parse_args(["run", "--task", "dice-solo-v0,all", "--algo",
                                    "dqn,all,users_algo,ppo", "--seed", "0"])
    assert args.algo == ["dqn", *[a for a in ALGORITHMS if a != "dqn"], "users_algo"]
    assert args.task == ["dice-solo-v0", *[t for t in TASKS if t != "dice-solo-v0"]]


def test_run_with_two_jobs_under_python_m(tmp_path):
    """Spawned workers cannot import a function of the package's ``__main__``: every cell
    of ``python -m agents.benchmark run --jobs 2`` failed with BrokenProcessPool."""
    result = subprocess.run([sys.executable, "-m", "agents.benchmark", "run", "--task",
                             "dice-solo-v0", "--algo", "ppo", "--seed", "0,1", "--steps", "4096",
                             "--jobs", "2", "--root", str(tmp_path), "--no-progress"],
                            cwd=Path(__file__).resolve().parent.parent, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert len(runner.read_results(tmp_path, "custom")) == 2
