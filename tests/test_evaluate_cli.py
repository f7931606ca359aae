"""The evaluator checks every argument before the first game (command line and
``play``), and writes its outputs atomically."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import agents.evaluate as evaluate
from agents.evaluate import (EvaluationError, main, play, plot_scores, round_robin, write_csv,
                             write_json)
from agents.policy import PolicyNetwork, save_checkpoint
from agents.scripted import RandomAgent
from qwinto_env.dice import observation_size


@pytest.fixture
def games_played(monkeypatch):
    """Every way a game could start, replaced by a recorder: the list of attempts."""
    attempts = []

    def record(*args, **kwargs):
        attempts.append(args)
        raise AssertionError("a game was played")

    monkeypatch.setattr(evaluate, "_play_games", record)
    for game in list(evaluate.BATCHED_RUNNERS):
        monkeypatch.setitem(evaluate.BATCHED_RUNNERS, game, record)
    monkeypatch.setattr(evaluate, "in_processes", record)
    return attempts


@pytest.fixture
def files(tmp_path):
    """Paths the bad arguments refer to: a folder, a plain file, a corrupt checkpoint."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("not a folder\n")
    (tmp_path / "corrupt.pt").write_bytes(b"PK\x03\x04 broken")
    return tmp_path


BAD_COMMAND_LINES = [
    (["--game", "chess"], "--game"),
    (["--game"], "--game"),
    (["--players", "0"], "--players"),
    (["--players", "-1"], "--players"),
    (["--players", "7"], "--players"),
    (["--game", "cards", "--players", "5"], "--players"),
    (["--players", "two"], "--players"),
    (["--players", "2.5"], "--players"),
    (["--agents", "nobody"], "--agents"),
    (["--agents", "expert,expert,expert"], "--agents"),
    (["--agents", ""], "--agents"),
    (["--agents", "expert,"], "--agents"),
    (["--agents", "pretrained:nope"], "--agents"),
    (["--agents", "{tmp}/missing.pt"], "--agents"),
    (["--agents", "{tmp}/folder"], "--agents"),
    (["--agents", "{tmp}/corrupt.pt"], "--agents"),
    (["--agents", "pretrained:cards-2p"], "--agents"),          # a card bot, dice game
    (["--players", "3", "--agents", "pretrained:dice-2p"], "--agents"),  # a 2-player bot
    (["--agents", "lookahead:expert"], "--agents"),
    (["--game", "cards", "--agents", "lookahead:pretrained:cards-2p"], "--agents"),
    (["--games", "0"], "--games"),
    (["--games", "-5"], "--games"),
    (["--games", "x"], "--games"),
    (["--games", "1.5"], "--games"),
    (["--seed", "-1"], "--seed"),
    (["--seed", "x"], "--seed"),
    (["--workers", "0"], "--workers"),
    (["--workers", "-2"], "--workers"),
    (["--workers", "x"], "--workers"),
    (["--engine", "gpu"], "--engine"),
    (["--quiet=yes"], "--quiet"),
    *[(["--" + out, path], "--" + out) for out in ("json", "csv", "plot") for path in
      ("{tmp}/missing/out.x", "{tmp}/folder", "{tmp}/file.txt/out.x", "")],
    (["--plot", "{tmp}/scores.txt"], "--plot"),
    (["--round-robin=yes"], "--round-robin"),
    (["--round-robin", "--agents", "expert"], "--agents"),
    (["--round-robin", "--agents", "random,greedy", "--players", "3"], "--agents"),
    (["--round-robin", "--agents", "random,nobody,greedy"], "--agents"),
    (["--round-robin", "--agents", "random,greedy,"], "--agents"),
    (["--round-robin", "--agents", "random,greedy,expert", "--games", "0"], "--games"),
    (["--round-robin", "--agents", "random,greedy,expert", "--players", "1"], "--players"),
    (["--seed", str(2 ** 64)], "--seed"),
    (["--games", str(10 ** 14)], "--games"),  # was a MemoryError in numpy's allocator
    (["--round-robin", "--agents", "random,greedy,expert", "--workers", "0"], "--workers"),
    (["--json", "{tmp}/out", "--csv", "{tmp}/./out"], "--csv"),
    (["--csv", "{tmp}/out.png", "--plot", "{tmp}/out.png"], "--plot"),
]


@pytest.mark.parametrize("args, option", BAD_COMMAND_LINES)
def test_bad_command_line(args, option, files, games_played, capsys):
    argv = ["--games", "4", "--quiet", *(a.replace("{tmp}", str(files)) for a in args)]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    last = capsys.readouterr().err.rstrip("\n").split("\n")[-1]
    assert last.startswith(f"python -m agents.evaluate: error: argument {option}: "), last
    assert games_played == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into any folder")
def test_output_folder_not_writable(tmp_path, games_played, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(SystemExit):
        main(["--games", "4", "--quiet", "--json", str(locked / "out.json")])
    err = capsys.readouterr().err
    assert "argument --json:" in err and "not writable" in err
    assert games_played == []


def test_output_folder_checked_with_os_access(tmp_path, games_played, monkeypatch, capsys):
    """What root cannot see with chmod: a folder the process may not write into."""
    monkeypatch.setattr(evaluate.os, "access", lambda path, mode: False)
    with pytest.raises(SystemExit):
        main(["--games", "4", "--quiet", "--csv", str(tmp_path / "out.csv")])
    assert "argument --csv:" in capsys.readouterr().err
    assert games_played == []


def dice_agent(**kw):
    return RandomAgent(game="dice", num_players=2, **kw)


BAD_CALLS = [
    (dict(game="chess"), "game"),
    (dict(game=3), "game"),
    (dict(game=["dice"]), "game"),
    (dict(num_players=0), "num_players"),
    (dict(num_players=7), "num_players"),
    (dict(num_players=2.0), "num_players"),
    (dict(num_players=True), "num_players"),
    (dict(num_players="2"), "num_players"),
    (dict(num_players=None), "num_players"),
    (dict(games=0), "games"),
    (dict(games=-1), "games"),
    (dict(games=1.5), "games"),
    (dict(games=True), "games"),
    (dict(games="10"), "games"),
    (dict(seed=-1), "seed"),
    (dict(seed=1.5), "seed"),
    (dict(seed="0"), "seed"),
    (dict(seed=None), "seed"),
    (dict(workers=0), "workers"),
    (dict(workers=1.5), "workers"),
    (dict(workers=None), "workers"),
    (dict(engine="gpu"), "engine"),
    (dict(engine=["auto"]), "engine"),
    (dict(agents="expert"), "agents"),                   # a bare string, not a list
    (dict(agents=Path("expert.pt")), "agents"),
    (dict(agents=dice_agent()), "agents"),
    (dict(agents=5), "agents"),
    (dict(agents=[]), "agents"),
    (dict(agents=["expert"] * 3), "agents"),
    (dict(agents=[3]), "agents"),
    (dict(agents=[None, "random"]), "agents"),
    (dict(agents=["nobody"]), "agents"),
    (dict(agents=["missing.pt"]), "agents"),
    (dict(agents=[RandomAgent(game="cards", num_players=2)]), "agents"),
    (dict(agents=[RandomAgent(game="dice", num_players=3)]), "agents"),
    (dict(agents=[dice_agent(), "random"], workers=2), "workers"),
]


@pytest.mark.parametrize("kwargs, argument", BAD_CALLS)
def test_bad_play_arguments(kwargs, argument, games_played):
    with pytest.raises(EvaluationError) as info:
        play(**{"agents": ["random"], "games": 4, "progress": False, **kwargs})
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}: ")
    assert games_played == []


BAD_ROUND_ROBINS = [
    (dict(agents=["random"]), "agents", "needs at least 2 agents, got 1"),
    (dict(agents=["random", "greedy"], num_players=3), "agents", "at least 3 agents"),
    (dict(agents="random,greedy,expert"), "agents", "must be a list"),
    (dict(agents=["random", "greedy", 3]), "agents", "is 3, neither a spec"),
    (dict(agents=["random", "greedy", "nobody"]), "agents", "nobody"),
    (dict(agents=[dice_agent(), "random", "greedy"], workers=2), "workers", "needs agent specs"),
    (dict(games=0), "games", "positive integer"),
    (dict(games=10 ** 14), "games", "at most 1,000,000"),
    (dict(seed=-1), "seed", "non-negative integer"),
    (dict(game="chess"), "game", "unknown game"),
]


@pytest.mark.parametrize("kwargs, argument, message", BAD_ROUND_ROBINS)
def test_bad_round_robin_arguments(kwargs, argument, message, games_played):
    with pytest.raises(EvaluationError, match=message) as info:
        round_robin(**{"agents": ["random", "greedy", "expert"], "games": 4,
                       "progress": False, **kwargs})
    assert info.value.argument == argument
    assert games_played == []


def test_paths_and_numpy_integers_are_accepted(tmp_path):
    torch_path = tmp_path / "p.pt"
    size = observation_size(2)
    save_checkpoint(torch_path, PolicyNetwork(size, 37, hidden=(8,)), "dice", 2, size, 37)
    res = play([torch_path, "random"], num_players=np.int64(2), games=np.int64(3),
               seed=np.int64(5), progress=False)
    assert res.entrants == [str(torch_path), "random"] and res.games == 3
    assert json.loads(json.dumps(res.summary))["players"] == 2
    assert json.loads(json.dumps(res.summary))["seed"] == 5


@pytest.fixture(scope="module")
def results():
    return play(["random"], games=3, progress=False)


@pytest.mark.parametrize("write", [
    lambda res, path: write_json(res, path),
    lambda res, path: write_csv(res.summary, path),
    lambda res, path: plot_scores(res, path),
], ids=["json", "csv", "plot"])
def test_outputs_are_written_atomically(write, results, tmp_path, monkeypatch):
    """A write that fails before its last step leaves the previous file as it was."""
    target = tmp_path / "out"
    target.write_bytes(b"previous run\n")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write(results, str(target))
    assert target.read_bytes() == b"previous run\n"
    assert os.listdir(tmp_path) == ["out"]


@pytest.mark.parametrize("name, magic", [("scores", b"\x89PNG"), ("scores.svg", b"<?xml"),
                                         ("scores.pdf", b"%PDF")])
def test_plot_format_follows_the_extension(name, magic, results, tmp_path):
    plot_scores(results, str(tmp_path / name))
    assert (tmp_path / name).read_bytes().startswith(magic)


def test_solo_json_is_strict(tmp_path):
    """A solo table has no rating (NaN in Python): null in the file, which strict parsers
    (jq, JavaScript) read, where Python's default would write NaN."""
    out = tmp_path / "solo.json"
    main(["--agents", "random", "--players", "1", "--games", "4", "--quiet", "--json", str(out)])
    summary = json.loads(out.read_text(), parse_constant=pytest.fail)
    assert [row["rating"] for row in summary["agents"]] == [None]


def test_no_more_worker_processes_than_jobs(monkeypatch):
    """``--workers 8`` for 3 games starts the processes that have games to play, not 8."""
    import multiprocessing.context as context

    sizes, pool = [], context.SpawnContext.Pool

    def counted(self, processes=None, *args, **kwargs):
        sizes.append(processes)
        return pool(self, processes, *args, **kwargs)

    monkeypatch.setattr(context.SpawnContext, "Pool", counted)
    play(["random", "greedy"], games=3, workers=8, progress=False, engine="single")
    with pytest.warns(UserWarning, match="1 of the 8 workers play"):
        play(["random", "greedy"], games=3, workers=8, progress=False, engine="batched")
    assert sizes == [3, 1]


@pytest.mark.parametrize("moment", [rb"\| *0/1000000", rb"\| *[1-9][0-9]*/1000000"],
                         ids=["workers starting", "workers playing"])
def test_ctrl_c_stops_the_workers_without_a_traceback(moment):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) during a tournament in
    worker processes, while they start up or play: one line, status 130, no worker left
    behind (a worker that died starting up, or a pool feeding it large jobs, left the
    pool's terminate() waiting for good)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agents.evaluate", "--agents", "expert,greedy", "--games",
         "1000000", "--workers", "2", "--engine", "single"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        # a terminal's foreground job: the tests may run as a background job, whose
        # children start with SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err = b""
    while not re.search(moment, err):
        chunk = proc.stderr.read1(4096)
        assert chunk, err.decode()
        err += chunk
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    tail = proc.stderr.read().decode()
    proc.stderr.close()
    assert "Traceback" not in tail and tail.endswith("agents.evaluate: error: interrupted\n")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)  # a worker of the group is still alive
        except ProcessLookupError:
            return
        time.sleep(0.2)
    pytest.fail("a worker process outlived the interrupted evaluator")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_workers_die_with_a_parent_killed_outright(tmp_path):
    """SIGKILL leaves the pool no chance to stop its workers: they played on, orphans,
    for as long as their jobs ran (a search bot's, half an hour)."""
    script = tmp_path / "pool.py"
    script.write_text("import time\nfrom agents.processes import in_processes\n"
                      "if __name__ == '__main__':\n"
                      "    in_processes(time.sleep, [300, 300], 2, 2, '', False)\n")
    parent = subprocess.Popen([sys.executable, str(script)],
                              cwd=Path(__file__).resolve().parent.parent)
    try:
        workers: list[int] = []
        for _ in range(600):  # the workers start (they import torch)
            time.sleep(0.1)
            children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
            if len(children) >= 3:  # two workers and multiprocessing's resource tracker
                workers = [int(c) for c in children]
                break
        assert workers, "the pool did not start"
        time.sleep(1.0)  # past the workers' initializer
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [w for w in workers if Path(f"/proc/{w}").exists()]
    for w in alive:
        os.kill(w, signal.SIGKILL)
    assert not alive
