"""Resume and kill safety of training runs: a refused or needless resume changes no file,
every checkpoint file survives a kill (SIGKILL, SIGINT, a failure inside a write) as the
previous good one or the new good one, and ``--resume`` finishes the run from a state at
least as new as every policy checkpoint."""

import hashlib
import io
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import train
from agents import load
from agents.policy import PolicyNetwork, save_checkpoint
from agents.trainers import train_from_config
from agents.trainers.config import MAX_SEED, load_config
from agents.trainers.run import ResumeError, Run, TrainingInterrupted, read_trainer_state

ROOT = Path(__file__).resolve().parent.parent

TINY = ["run.total_steps=1500", "run.checkpoint_every=700", "env.num_games=8",
        "ppo.rollout_steps=8", "ppo.update_epochs=1", "ppo.num_minibatches=2",
        "network.hidden=[16]", "eval.every=0", "eval.games=4", "eval.final_games=4",
        "eval.opponents=[random]", "opponents.snapshot_every=400",
        "opponents.scripted={random: 0.2, greedy: 0.2}", "imitation.games=0",
        "run.torch_threads=1", "run.device=cpu"]
#: a checkpoint after every update (96 steps), so that kills often land in or near one
KILLABLE = [*TINY, "run.total_steps=2000", "run.checkpoint_every=1"]


def run_train(root, *args):
    return train.main(["--runs-dir", str(root), "--no-progress", *args])


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its content hash and modification time."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                         p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def policy_weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, weights_only=True)["state_dict"]


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k].cpu(), b[k].cpu()) for k in a)


def check_run_folder(run_dir: Path, cfg) -> int:
    """Every ``.pt`` of the run loads; the trainer state is at least as new as every
    policy checkpoint. Returns the state's step (0 without a state)."""
    state_path = run_dir / "checkpoints" / "trainer_state.pt"
    for path in run_dir.rglob("*.pt"):
        if path != state_path:
            load(str(path), game=cfg.env.game, num_players=cfg.env.num_players)
    steps = [int(p.stem[len("step_"):]) for p in run_dir.glob("checkpoints/step_*.pt")]
    latest = run_dir / "checkpoints" / "latest.pt"
    if latest.is_file():
        steps.append(torch.load(latest, weights_only=True)["metadata"]["steps"])
    if not state_path.is_file():
        assert not steps, "policy checkpoints without a trainer state"
        return 0
    state = read_trainer_state(state_path, cfg)
    assert state["step"] >= max(steps, default=0)
    return state["step"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished tiny torch run (copy it before changing it)."""
    root = tmp_path_factory.mktemp("finished")
    assert run_train(root, "run.name=r", *TINY) == 0
    return root / "r"


@pytest.fixture
def run_copy(finished_run, tmp_path):
    shutil.copytree(finished_run, tmp_path / "r")
    return tmp_path / "r"


# -- refused and needless resumes ------------------------------------------------------------

@pytest.mark.parametrize("override, message", [
    ("env.num_players=3", "trained with env"), ("network.hidden=[8]", "trained with network"),
    ("run.trainer=sb3", "trained by the torch trainer")])
def test_a_refused_resume_changes_no_file(run_copy, capsys, override, message):
    before = snapshot(run_copy)
    assert run_train(run_copy.parent, "--resume", "run.name=r", *TINY, override) == 2
    assert message in capsys.readouterr().err
    assert snapshot(run_copy) == before


def test_a_resume_draws_new_random_streams_from_the_seed_and_the_step(run_copy):
    """A resume seeded the engine and torch with run.seed again: every stage of a run
    replayed the dice of its first steps."""
    cfg = load_config(None, [*TINY, "run.name=r", "run.total_steps=3000"])
    resumed = [Run(cfg, root=run_copy.parent, resume=True) for _ in range(2)]
    assert resumed[0].step > 0
    assert resumed[0].seed == resumed[1].seed != cfg.run.seed
    # in run.seed's range: SB3 and RLlib add offsets and seed numpy's legacy generator
    for resumed[0].step in range(1, 100):
        assert 0 <= resumed[0].seed <= MAX_SEED, resumed[0].step
    fresh = Run(load_config(None, [*TINY, "run.name=new"]), root=run_copy.parent)
    assert fresh.seed == cfg.run.seed


def test_a_new_run_over_a_run_without_its_state_is_refused(run_copy, capsys):
    (run_copy / "checkpoints" / "trainer_state.pt").unlink()
    before = snapshot(run_copy)
    assert run_train(run_copy.parent, "run.name=r", *TINY, "run.seed=3") == 2
    assert "already holds a run" in capsys.readouterr().err
    assert snapshot(run_copy) == before


def test_a_state_its_trainer_refuses_changes_no_file(tmp_path, capsys):
    """The SB3 model inside the state is read by the trainer, after the run folder is
    open: config.yaml waits for the first checkpoint."""
    assert run_train(tmp_path, "run.name=s", "run.trainer=sb3", *TINY) == 0
    path = tmp_path / "s" / "checkpoints" / "trainer_state.pt"
    torch.save({**torch.load(path, weights_only=True), "sb3_model": b"not a zip"}, path)
    (tmp_path / "s" / "final.pt").unlink()
    before = snapshot(tmp_path / "s")
    assert run_train(tmp_path, "--resume", "run.name=s", "run.trainer=sb3", *TINY,
                     "run.total_steps=3000", "eval.final_games=7") == 2
    assert "the SB3 model it holds does not load" in capsys.readouterr().err
    assert snapshot(tmp_path / "s") == before


def test_a_resumed_run_drops_the_logged_points_past_its_state(run_copy):
    """A kill after some logging but before the next checkpoint left points past the
    state's step; the resumed run logs those steps again, and TensorBoard shows each once."""
    from torch.utils.tensorboard import SummaryWriter
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    cfg = load_config(None, [*TINY, "run.name=r", "run.total_steps=3000"])
    step = read_trainer_state(run_copy / "checkpoints" / "trainer_state.pt", cfg)["step"]
    killed = SummaryWriter(str(run_copy / "tb"))
    killed.add_scalar("probe", 1.0, step + 100)  # logged by the run that was killed
    killed.close()
    run = Run(cfg, root=run_copy.parent, resume=True)
    run.log(step + 100, {"probe": 2.0})
    run.close()
    events = EventAccumulator(str(run_copy / "tb"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("probe")] == [(step + 100, 2.0)]


@pytest.mark.parametrize("cut_after, message", [
    ("trainer: torc", "run.trainer: must be one of ['torch', 'sb3', 'rllib'], got 'torc'"),
    ("  learning_ra", "ppo: must be a mapping of fields, got 'learning_ra'"),
    ("  num_games: 8\n", ": lacks network, ppo, imitation, opponents, eval, rllib, which "
                         "the run wrote"),
    ("  init_from: ''\n", ": lacks env, network, ppo,")])
def test_a_resume_from_a_cut_short_config_file_names_the_file(run_copy, capsys, cut_after,
                                                               message):
    """A config.yaml cut short where it still parses: the refusal named the field but not
    the file it came from (nor the state the config did not match). Cut after a section,
    the sections lost took their defaults: the resume went on with other settings, said
    only where they were ppo's or opponents', or refused only for env or network."""
    config = run_copy / "config.yaml"
    text = config.read_text()
    config.write_text(text[:text.index(cut_after) + len(cut_after)])
    before = snapshot(run_copy)
    assert run_train(run_copy.parent, "--resume", "--config", str(config)) == 2
    err = capsys.readouterr().err
    assert err.startswith("train.py: error: ") and message in err, err
    state = run_copy / "checkpoints" / "trainer_state.pt"
    assert f"config file {str(config)!r}" in err or f"cannot resume from {state}:" in err, err
    assert snapshot(run_copy) == before


def test_a_resume_from_a_config_file_missing_a_field_names_it(run_copy, capsys):
    """A field lost from the run's config.yaml took its default on --resume; given as an
    override it is the user's choice, and another YAML file may leave fields out."""
    config = run_copy / "config.yaml"
    config.write_text(config.read_text().replace("  learning_rate: 0.0005\n", ""))
    before = snapshot(run_copy)
    assert run_train(run_copy.parent, "--resume", "--config", str(config)) == 2
    err = capsys.readouterr().err
    assert f"config file {str(config)!r}: lacks ppo.learning_rate, which the run wrote" in err
    assert snapshot(run_copy) == before
    shutil.copy(config, run_copy.parent / "edited.yaml")
    for where, args in ((config, ["ppo.learning_rate=0.0005"]),
                        (run_copy.parent / "edited.yaml", [])):
        assert run_train(run_copy.parent, "--resume", "--config", str(where), *args) == 0
        assert "already finished" in capsys.readouterr().out


def test_resuming_a_finished_run_says_so_and_changes_nothing(run_copy, capsys):
    before = snapshot(run_copy)
    assert run_train(run_copy.parent, "--resume", "run.name=r", *TINY) == 0
    out = capsys.readouterr().out.strip()
    assert "already finished" in out and "\n" not in out
    assert str(run_copy / "final.pt") in out and str(run_copy / "evaluation.txt") in out
    assert snapshot(run_copy) == before


@pytest.mark.parametrize("changes, said", [
    ([], []),
    (["ppo.learning_rate=1e-4"], ["ppo.learning_rate 0.0005 -> 0.0001"]),
    (["opponents.self_play=1", "opponents.scripted={}"],
     ["opponents.self_play 0.6 -> 1", "opponents.scripted {'random': 0.2, 'greedy': 0.2} -> {}"]),
    (["run.seed=5"], ["run.seed 0 -> 5"])])
def test_a_resume_with_other_training_settings_says_which(run_copy, capsys, changes, said):
    """Resuming without the run's overrides trains on with the defaults: allowed (a smaller
    learning rate to finish a run), but each changed field is named, in one line of the
    command's own voice; a longer run is not."""
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert run_train(run_copy.parent, "--resume", "run.name=r", *TINY,
                         "run.total_steps=1700", *changes) == 0
    err = capsys.readouterr().err
    told = [line for line in err.splitlines() if "resuming run 'r'" in line]
    assert len(told) == (1 if said else 0)
    assert all(line.startswith("train.py: warning: resuming run") for line in told)
    for field in said:
        assert field in told[0]
    assert not said or "run.total_steps" not in told[0]


def test_a_resume_with_a_smaller_pool_keeps_the_newest_snapshots(run_copy):
    """The pool dropped its oldest snapshots only when a new one came: a resume with a
    smaller opponents.pool_size played on against every saved one until then."""
    cfg = load_config(None, [*TINY, "run.name=r"])
    saved = read_trainer_state(run_copy / "checkpoints" / "trainer_state.pt", cfg)
    names = [name for name, _ in saved["pool"]["snapshots"]]
    assert len(names) > 2
    assert run_train(run_copy.parent, "--resume", "run.name=r", *TINY, "run.total_steps=1700",
                     "opponents.pool_size=2", "opponents.snapshot_every=100000",
                     "run.checkpoint_every=1") == 0
    state = torch.load(run_copy / "checkpoints" / "trainer_state.pt", weights_only=True)
    assert state["step"] > saved["step"]  # trained on, with no new snapshot
    assert [name for name, _ in state["pool"]["snapshots"]] == names[-2:]


def test_resume_finishes_a_run_killed_during_its_final_evaluation(run_copy, capsys):
    """The state has reached total_steps; the kill came before evaluation.txt and
    final.pt, and also between the state and its policy checkpoints."""
    cfg = load_config(None, [*TINY, "run.name=r"])
    state = read_trainer_state(run_copy / "checkpoints" / "trainer_state.pt", cfg)
    ckpt = run_copy / "checkpoints"
    older = sorted(ckpt.glob("step_*.pt"), key=lambda p: int(p.stem[5:]))[-2]
    (run_copy / "evaluation.txt").unlink()
    (run_copy / "final.pt").unlink()
    (ckpt / f"step_{state['step']}.pt").unlink()
    shutil.copy(older, ckpt / "latest.pt")
    trained = snapshot(ckpt)["trainer_state.pt"]
    assert run_train(run_copy.parent, "--resume", "run.name=r", *TINY) == 0
    assert "learner vs random" in capsys.readouterr().out
    assert snapshot(ckpt)["trainer_state.pt"] == trained  # evaluated, not trained on
    assert (run_copy / "evaluation.txt").is_file()
    for path in (run_copy / "final.pt", ckpt / "latest.pt", ckpt / f"step_{state['step']}.pt"):
        assert same_weights(policy_weights(path), state["network"]), path
    final = torch.load(run_copy / "final.pt", weights_only=True)
    assert final["metadata"]["steps"] == state["step"]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_corrupt_trainer_state_is_a_resume_error_naming_the_file(run_copy, data):
    cfg = load_config(None, [*TINY, "run.name=r"])
    path = run_copy / "checkpoints" / "trainer_state.pt"
    good = path.read_bytes()
    kind = data.draw(st.sampled_from(["truncated", "garbage", "other object"]))
    if kind == "truncated":
        bad = good[:data.draw(st.integers(0, len(good) - 1))]
    elif kind == "garbage":
        bad = data.draw(st.binary(max_size=200))
    else:
        buffer = io.BytesIO()
        torch.save(data.draw(st.sampled_from([[1, 2], {"step": 5}, "state", None])), buffer)
        bad = buffer.getvalue()
    try:
        path.write_bytes(bad)
        with pytest.raises(ResumeError, match="trainer_state.pt"):
            read_trainer_state(path, cfg)
    finally:
        path.write_bytes(good)


def test_a_flipped_bit_in_the_trainer_state_is_found_by_its_checksum(run_copy):
    """torch.load does not check its archive's CRC-32s: a flipped bit in a weight loaded,
    and the resumed run spread it to every later checkpoint."""
    import zipfile
    cfg = load_config(None, [*TINY, "run.name=r"])
    path = run_copy / "checkpoints" / "trainer_state.pt"
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as archive:
        member = next(i for i in archive.infolist() if i.filename.endswith("/data/0"))
    name_len, extra_len = struct.unpack_from("<HH", raw, member.header_offset + 26)
    raw[member.header_offset + 30 + name_len + extra_len + 3] ^= 0x40  # in the member's data
    path.write_bytes(bytes(raw))
    with pytest.raises(ResumeError, match="data/0' fails its CRC-32"):
        read_trainer_state(path, cfg)


@pytest.mark.parametrize("config", [{}, {"run": {}, "env": {}, "network": {}}, [1], None])
def test_a_trainer_state_whose_config_lost_sections_is_named(run_copy, config):
    """A state written by the run holds its whole config; one that lost a section (a file
    edited, or another program's) is refused by name, not as a bare KeyError."""
    cfg = load_config(None, [*TINY, "run.name=r"])
    path = run_copy / "checkpoints" / "trainer_state.pt"
    good = path.read_bytes()
    state = torch.load(path, weights_only=True)
    try:
        torch.save({**state, "config": config}, path)
        with pytest.raises(ResumeError, match="trainer_state.pt: not a trainer state"):
            read_trainer_state(path, cfg)
    finally:
        path.write_bytes(good)


class _Payload:
    def __reduce__(self):
        return (exec, ("import builtins; builtins.PAYLOAD_RAN = True",))


def test_a_trainer_state_is_loaded_as_weights_only_and_runs_no_code(run_copy):
    import builtins
    cfg = load_config(None, [*TINY, "run.name=r"])
    path = run_copy / "checkpoints" / "trainer_state.pt"
    state = torch.load(path, weights_only=True)
    torch.save({**state, "extra": _Payload()}, path)
    with pytest.raises(ResumeError, match="not a trainer state"):
        read_trainer_state(path, cfg)
    assert not getattr(builtins, "PAYLOAD_RAN", False)


def test_train_py_reports_a_corrupt_trainer_state(run_copy, capsys):
    path = run_copy / "checkpoints" / "trainer_state.pt"
    path.write_bytes(path.read_bytes()[:1000])
    before = snapshot(run_copy)
    assert run_train(run_copy.parent, "--resume", "run.name=r", *TINY) == 2
    err = capsys.readouterr().err
    assert err.startswith("train.py: error: cannot resume from ") and str(path) in err
    assert "corrupt" in err
    assert snapshot(run_copy) == before


# -- a failure inside a checkpoint write -----------------------------------------------------

def tiny_network(seed: int) -> PolicyNetwork:
    torch.manual_seed(seed)
    return PolicyNetwork(89, 37, hidden=[8], features="sheet")


@pytest.mark.parametrize("failing_write", [1, 2, 3])  # the state, step_<n>.pt, latest.pt
def test_a_write_failing_halfway_leaves_every_file_loadable_and_consistent(
        tmp_path, monkeypatch, failing_write):
    cfg = load_config(None, [*TINY, "run.name=f", "network.hidden=[8]"])
    run = Run(cfg, root=tmp_path)
    old, new = tiny_network(0), tiny_network(1)
    run.save(old, 100, {})
    real_save, calls = torch.save, []

    def half_then_fail(obj, f, *args, **kwargs):
        calls.append(1)
        if len(calls) != failing_write:
            return real_save(obj, f, *args, **kwargs)
        buffer = io.BytesIO()
        real_save(obj, buffer)
        data = buffer.getvalue()
        (f.write if hasattr(f, "write") else Path(f).write_bytes)(data[:len(data) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        run.save(new, 200, {})
    monkeypatch.undo()
    step = check_run_folder(run.dir, cfg)
    assert step == (100 if failing_write == 1 else 200)
    ckpt = run.dir / "checkpoints"
    expected = old if failing_write == 1 else new
    assert same_weights(read_trainer_state(ckpt / "trainer_state.pt", cfg)["network"],
                        expected.state_dict())
    # latest.pt comes last, so here it is always the previous one
    assert same_weights(policy_weights(ckpt / "latest.pt"), old.state_dict())
    assert not [p for p in ckpt.iterdir() if p.name.endswith(".tmp")]


def test_ctrl_c_during_a_checkpoint_write_interrupts_after_the_file_is_whole(
        tmp_path, monkeypatch):
    """A SIGINT in the middle of ``torch.save`` (where torch's zip writer would turn the
    ``KeyboardInterrupt`` into a ``RuntimeError``) is raised once the file is complete."""
    target = tmp_path / "policy.pt"
    real_save = torch.save

    def interrupted_halfway(obj, f, *args, **kwargs):
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        data = buffer.getvalue()
        f.write(data[:len(data) // 2])
        os.kill(os.getpid(), signal.SIGINT)
        f.write(data[len(data) // 2:])

    monkeypatch.setattr(torch, "save", interrupted_halfway)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(target, tiny_network(1), "dice", 2, 89, 37)
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert same_weights(load(str(target)).network.state_dict(), tiny_network(1).state_dict())
    assert [p.name for p in tmp_path.iterdir()] == ["policy.pt"]


def test_ctrl_c_during_the_first_write_of_a_save_interrupts_after_the_last(tmp_path,
                                                                           monkeypatch):
    """A SIGINT while the trainer state is written: the step's policy checkpoints are
    written too before the interrupt, and the run names that step to resume from."""
    cfg = load_config(None, [*TINY, "run.name=c", "network.hidden=[8]"])
    run = Run(cfg, root=tmp_path)
    run.save(tiny_network(0), 100, {})
    real_save, calls = torch.save, []

    def interrupt_the_first(obj, f, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", interrupt_the_first)
    with pytest.raises(KeyboardInterrupt):
        run.save(tiny_network(1), 200, {})
    monkeypatch.undo()
    assert len(calls) == 3 and run.step == 200
    assert check_run_folder(run.dir, cfg) == 200
    assert same_weights(policy_weights(run.dir / "checkpoints" / "latest.pt"),
                        tiny_network(1).state_dict())


def test_a_checkpoint_written_outside_the_main_thread_is_written(tmp_path):
    """Only the main thread may hold SIGINT; a write from another thread goes on as is."""
    target = tmp_path / "policy.pt"
    worker = threading.Thread(
        target=save_checkpoint, args=(target, tiny_network(2), "dice", 2, 89, 37))
    worker.start()
    worker.join()
    assert same_weights(load(str(target)).network.state_dict(), tiny_network(2).state_dict())


def killed_halfway(writer: str) -> None:
    """Run the Python code ``writer`` and kill it (SIGKILL) once it prints ``halfway``."""
    proc = subprocess.Popen([sys.executable, "-c", writer], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "halfway"
    finally:
        proc.kill()
        proc.wait()


def test_a_policy_checkpoint_killed_during_its_write_keeps_the_previous_file(tmp_path):
    """A process killed (SIGKILL) while ``save_checkpoint`` writes leaves the previous file."""
    target = tmp_path / "policy.pt"
    save_checkpoint(target, tiny_network(0), "dice", 2, 89, 37)
    before = target.read_bytes()
    writer = (
        "import io, sys, time, torch\n"
        "from agents.policy import PolicyNetwork, save_checkpoint\n"
        "real = torch.save\n"
        "def slow(obj, f, *a, **k):\n"
        "    f = f if hasattr(f, 'write') else open(f, 'wb')\n"
        "    buffer = io.BytesIO(); real(obj, buffer); data = buffer.getvalue()\n"
        "    f.write(data[:len(data) // 2]); f.flush()\n"
        "    print('halfway', flush=True); time.sleep(60)\n"
        "torch.save = slow\n"
        f"save_checkpoint({str(target)!r}, PolicyNetwork(89, 37, hidden=[8], features='sheet'),"
        " 'dice', 2, 89, 37)\n")
    killed_halfway(writer)
    assert target.read_bytes() == before
    assert same_weights(load(str(target)).network.state_dict(), tiny_network(0).state_dict())


def test_a_run_clears_the_temporary_files_its_killed_writes_left(run_copy):
    """A write killed outright left its hidden temporary file in the run folder for good;
    the next start of the run removes those of its own files and nothing else."""
    ckpt = run_copy / "checkpoints"
    for target in (ckpt / "latest.pt", ckpt / "step_99.pt", run_copy / "evaluation.txt"):
        killed_halfway("import time\n"
                       "from qwinto_env.fileio import atomic_write\n"
                       "def half(fh):\n"
                       "    fh.write(b'half'); fh.flush(); print('halfway', flush=True)\n"
                       "    time.sleep(60)\n"
                       f"atomic_write({str(target)!r}, half)\n")
    assert len(list(run_copy.rglob(".*.tmp"))) == 3
    others = [run_copy / ".notes.txt.a1b2c3d4.tmp", ckpt / ".latest.pt.swp",
              run_copy / "tb" / ".final.pt.a1b2c3d4.tmp"]
    for path in others:
        path.write_text("not the run's")
    assert run_train(run_copy.parent, "--resume", "run.name=r", *TINY,
                     "run.total_steps=1700") == 0
    assert sorted(run_copy.rglob(".*")) == sorted(others)


# -- interrupted and resumed runs ------------------------------------------------------------

def interrupt_after_checkpoints(monkeypatch, n: int) -> None:
    """Ctrl-C right after the ``n``-th checkpoint of the next run."""
    real, count = Run.save, []

    def save(self, *args, **kwargs):
        path = real(self, *args, **kwargs)
        count.append(path)
        if len(count) == n:
            raise KeyboardInterrupt
        return path
    monkeypatch.setattr(Run, "save", save)


def scalars(folder: Path, tag: str) -> dict[int, float]:
    """``step -> value`` of ``tag`` over every TensorBoard log under ``folder``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    values = {}
    for logs in {p.parent for p in folder.rglob("events.*")}:
        acc = EventAccumulator(str(logs))
        acc.Reload()
        if tag in acc.Tags()["scalars"]:
            values.update({e.step: e.value for e in acc.Scalars(tag)})
    return values


def test_a_resumed_torch_run_anneals_the_step_size_as_the_uninterrupted_run(tmp_path,
                                                                             monkeypatch):
    cfg = load_config(None, [*TINY, "run.name=a", "run.total_steps=1000",
                             "run.checkpoint_every=300"])
    train_from_config(cfg, root=tmp_path, progress=False)
    uninterrupted = scalars(tmp_path / "a" / "tb", "train/lr")
    first_checkpoint = min(step for step in uninterrupted if step >= 300)
    cfg.run.name = "b"
    with monkeypatch.context() as patch:
        interrupt_after_checkpoints(patch, 1)
        with pytest.raises(TrainingInterrupted, match=f"continues run b from its checkpoint "
                                                      f"at step {first_checkpoint}"):
            train_from_config(cfg, root=tmp_path, progress=False)
    train_from_config(cfg, root=tmp_path, resume=True, progress=False)
    resumed = scalars(tmp_path / "b" / "tb", "train/lr")
    assert len(resumed) == len(uninterrupted) > 5
    for step, lr in uninterrupted.items():
        assert resumed[step] == pytest.approx(lr), step


def test_sb3_resumes_from_its_state_with_the_settings_of_the_config(tmp_path, monkeypatch):
    """The SB3 model travels inside the trainer state; a resume trains on with the
    config's settings (here a learning rate 100 times smaller), not the saved ones."""
    cfg = load_config(None, [*TINY, "run.name=s", "run.trainer=sb3", "run.checkpoint_every=300"])
    with monkeypatch.context() as patch:
        interrupt_after_checkpoints(patch, 1)
        with pytest.raises(TrainingInterrupted):
            train_from_config(cfg, root=tmp_path, progress=False)
    run_dir = tmp_path / "s"
    stopped = check_run_folder(run_dir, cfg)
    assert 0 < stopped < 1500
    assert "sb3_model" in read_trainer_state(run_dir / "checkpoints" / "trainer_state.pt", cfg)
    slower = load_config(None, [*TINY, "run.name=s", "run.trainer=sb3",
                                "run.checkpoint_every=300", "ppo.learning_rate=5e-6"])
    train_from_config(slower, root=tmp_path, resume=True, progress=False)
    assert check_run_folder(run_dir, cfg) >= 1500
    rates = scalars(run_dir / "tb", "train/learning_rate")
    assert max(rate for step, rate in rates.items() if step <= stopped) > 1e-4
    assert max(rate for step, rate in rates.items() if step > stopped) <= 5e-6


def test_ctrl_c_inside_sb3s_own_save_interrupts_at_that_checkpoint(tmp_path, monkeypatch):
    """A SIGINT while SB3 zips its model (its first ``torch.save`` into the zip): the run
    stops with the checkpoint of that step whole, and names it to resume from."""
    cfg = load_config(None, [*TINY, "run.name=z", "run.trainer=sb3", "run.checkpoint_every=300"])
    real_save, sent = torch.save, []

    def interrupted_in_the_zip(obj, f, *args, **kwargs):
        if type(f).__module__ != "zipfile" or sent:
            return real_save(obj, f, *args, **kwargs)
        sent.append(1)
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        f.write(buffer.getvalue()[:100])
        os.kill(os.getpid(), signal.SIGINT)
        f.write(buffer.getvalue()[100:])

    monkeypatch.setattr(torch, "save", interrupted_in_the_zip)
    with pytest.raises(TrainingInterrupted) as interrupted:
        train_from_config(cfg, root=tmp_path, progress=False)
    monkeypatch.undo()
    step = check_run_folder(tmp_path / "z", cfg)
    assert sent and step > 0 and f"checkpoint at step {step}" in str(interrupted.value)
    assert "sb3_model" in read_trainer_state(tmp_path / "z" / "checkpoints" / "trainer_state.pt",
                                             cfg)


def test_ctrl_c_inside_rllibs_own_save_interrupts_after_the_old_folders_go(tmp_path,
                                                                          monkeypatch):
    """A SIGINT while RLlib writes its checkpoint folder: the trainer state names the new
    folder and the older ones are gone before the run stops."""
    from agents.trainers import rllib_ppo

    cfg = load_config(None, [*TINY, "run.name=l", "network.hidden=[8]"])
    run = Run(cfg, root=tmp_path)
    (run.ckpt_dir / "rllib_100").mkdir(parents=True)

    class Algo:
        def save_to_path(self, path):
            Path(path).mkdir()
            os.kill(os.getpid(), signal.SIGINT)
            (Path(path) / "state.pkl").write_bytes(b"state")

    monkeypatch.setattr(rllib_ppo, "export", lambda algo, cfg: tiny_network(3))
    with pytest.raises(KeyboardInterrupt):
        rllib_ppo.save(Algo(), run, 200, 7)
    state = read_trainer_state(run.ckpt_dir / "trainer_state.pt", cfg)
    assert (state["step"], state["rllib_dir"]) == (200, "rllib_200")
    assert sorted(p.name for p in run.ckpt_dir.glob("rllib*")) == ["rllib_200"]
    assert (run.ckpt_dir / "rllib_200" / "state.pkl").is_file()


# -- kills of train.py -----------------------------------------------------------------------

def test_sb3_resumes_a_run_that_kept_its_model_beside_the_state(tmp_path, monkeypatch):
    """Runs saved before the trainer state held the SB3 model kept it in
    checkpoints/sb3_model.zip: such a run resumes from that file; a damaged one is a
    ResumeError naming the state."""
    overrides = [*TINY, "run.name=old", "run.trainer=sb3", "run.checkpoint_every=300"]
    cfg = load_config(None, overrides)
    with monkeypatch.context() as patch:
        interrupt_after_checkpoints(patch, 1)
        with pytest.raises(TrainingInterrupted):
            train_from_config(cfg, root=tmp_path, progress=False)
    ckpt = tmp_path / "old" / "checkpoints"
    state = read_trainer_state(ckpt / "trainer_state.pt", cfg)
    model = state.pop("sb3_model")
    torch.save(state, ckpt / "trainer_state.pt")
    (ckpt / "sb3_model.zip").write_bytes(model[:len(model) // 2])
    with pytest.raises(ResumeError, match="trainer_state.pt: the SB3 model it holds"):
        train_from_config(cfg, root=tmp_path, resume=True, progress=False)
    (ckpt / "sb3_model.zip").write_bytes(model)
    train_from_config(cfg, root=tmp_path, resume=True, progress=False)
    assert check_run_folder(tmp_path / "old", cfg) >= 1500


def start(root: Path, *args: str) -> subprocess.Popen:
    """train.py as a terminal's foreground job: Ctrl-C (SIGINT) is live in it even where
    the tests run as a background job, which starts its children with SIGINT ignored."""
    return subprocess.Popen([sys.executable, "train.py", "--runs-dir", str(root),
                             "--no-progress", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def stop_after_a_checkpoint(run_dir: Path, overrides: list[str], sig: int, after: int = 0,
                           seed: str = "") -> tuple[int, str]:
    """Start train.py (``--resume`` when ``after``), wait for a checkpoint of a step past
    ``after``, send ``sig`` a seeded random moment later; exit status and stderr."""
    proc = start(run_dir.parent, *(["--resume"] if after else []), *overrides)
    ckpt, deadline = run_dir / "checkpoints", time.monotonic() + 120
    while not any(int(p.stem[5:]) > after for p in ckpt.glob("step_*.pt")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoint within 120 s"
        time.sleep(0.01)
    time.sleep(random.Random(f"{sig} {seed}").uniform(0.0, 0.5))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    return proc.returncode, err


def resume_to_the_end(run_dir: Path, cfg, overrides: list[str]) -> None:
    """``--resume`` (or a fresh start, without a state) finishes the run; the checkpoints
    up to the state it resumed from are kept, so it went on from that state."""
    stopped = check_run_folder(run_dir, cfg)
    kept = {k: v for k, v in snapshot(run_dir / "checkpoints").items()
            if k.startswith("step_") and int(k[5:-3]) <= stopped}
    proc = start(run_dir.parent, *(["--resume"] if stopped else []), *overrides)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    after = snapshot(run_dir / "checkpoints")
    assert {k: after[k] for k in kept} == kept
    assert check_run_folder(run_dir, cfg) >= cfg.run.total_steps
    assert (run_dir / "evaluation.txt").is_file()
    assert same_weights(policy_weights(run_dir / "final.pt"), policy_weights(
        run_dir / "checkpoints" / "latest.pt"))


def test_sigint_then_sigkill_then_resume_finishes_the_run(tmp_path):
    """Ctrl-C: exit 130, no traceback, a message naming the step --resume continues
    from; SIGKILL of the resumed run after a checkpoint; a last --resume finishes."""
    # Long enough that Ctrl-C, sent at most 0.5 s after the first checkpoint is seen,
    # lands in training even on a loaded machine (2,000 steps could end within that).
    overrides = [*KILLABLE, "run.name=i", "run.total_steps=24000"]
    cfg = load_config(None, overrides)
    code, err = stop_after_a_checkpoint(tmp_path / "i", overrides, signal.SIGINT)
    assert code == 130, err
    assert "train.py --resume with the same config continues run i from its checkpoint" in err
    stopped = int(err.rsplit("at step ", 1)[1].strip().replace(",", ""))
    assert check_run_folder(tmp_path / "i", cfg) == stopped
    code, _ = stop_after_a_checkpoint(tmp_path / "i", overrides, signal.SIGKILL, after=stopped)
    assert code in (-signal.SIGKILL, 0)  # 0: it was done before the kill
    assert check_run_folder(tmp_path / "i", cfg) > stopped
    resume_to_the_end(tmp_path / "i", cfg, overrides)


@pytest.mark.slow
def test_sigkill_of_an_sb3_run_after_a_checkpoint_then_resume(tmp_path):
    overrides = [*KILLABLE, "run.trainer=sb3", "run.name=k"]
    stop_after_a_checkpoint(tmp_path / "k", overrides, signal.SIGKILL, seed="sb3")
    resume_to_the_end(tmp_path / "k", load_config(None, overrides), overrides)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_sigkill_at_random_moments_then_resume(tmp_path, seed):
    """Kills at seeded random moments, from the interpreter's start on (so some land
    before the first checkpoint, some in a write); after each, every file loads and the
    next start goes on from the newest state."""
    overrides = [*KILLABLE, "run.name=k", "run.total_steps=5000"]
    cfg = load_config(None, overrides)
    rng, run_dir = random.Random(seed), tmp_path / "k"
    for _ in range(4):
        stopped = check_run_folder(run_dir, cfg) if run_dir.exists() else 0
        proc = start(tmp_path, *(["--resume"] if stopped else []), *overrides)
        time.sleep(rng.uniform(1.0, 8.0))
        proc.kill()
        _, err = proc.communicate()
        assert "Traceback" not in err, err
    check_run_folder(run_dir, cfg)
    resume_to_the_end(run_dir, cfg, overrides)


@pytest.mark.slow
def test_rllib_resumes_from_the_folder_its_state_names(tmp_path, monkeypatch):
    """RLlib's checkpoint is a folder per step that the state names; a half-written
    folder (a kill inside RLlib's save) is passed over and removed by the next save."""
    ray = pytest.importorskip("ray")
    overrides = ["run.name=rl", "run.total_steps=2500", "run.checkpoint_every=1000",
                 "rllib.train_batch_size=1000", "rllib.minibatch_size=250",
                 "rllib.num_envs_per_env_runner=2", "rllib.num_env_runners=0",
                 "network.hidden=[16]", "ppo.update_epochs=1", "eval.final_games=4",
                 "eval.opponents=[random]", "run.torch_threads=1"]
    cfg = load_config(ROOT / "configs" / "dice-2p-rllib.yaml", overrides)
    ckpt = tmp_path / "rl" / "checkpoints"
    try:
        with monkeypatch.context() as patch:
            interrupt_after_checkpoints(patch, 1)
            with pytest.raises(TrainingInterrupted):
                train_from_config(cfg, root=tmp_path, progress=False)
        state = read_trainer_state(ckpt / "trainer_state.pt", cfg)
        assert [p.name for p in ckpt.glob("rllib*")] == [state["rllib_dir"]]
        (ckpt / "rllib_999999").mkdir()  # what a kill inside RLlib's next save leaves
        (ckpt / "rllib_999999" / "half").write_text("")
        from agents.trainers import rllib_ppo
        expected = Run(cfg, root=tmp_path, resume=True).seed
        build, seeds = rllib_ppo.build_config, []
        monkeypatch.setattr(rllib_ppo, "build_config",
                            lambda *args, **kw: seeds.append(kw["seed"]) or build(*args, **kw))
        train_from_config(cfg, root=tmp_path, resume=True, progress=False)
    finally:
        ray.shutdown()
    assert seeds == [expected] != [cfg.run.seed]  # not the games the run began with
    final = read_trainer_state(ckpt / "trainer_state.pt", cfg)
    assert final["step"] >= 2500 and final["rllib_lifetime"] > state["rllib_lifetime"]
    assert [p.name for p in ckpt.glob("rllib*")] == [final["rllib_dir"]]
    check_run_folder(tmp_path / "rl", cfg)
