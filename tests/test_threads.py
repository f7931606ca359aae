"""torch's thread count follows the cores other processes leave free (run.torch_threads 0)."""

import pytest
import torch

from agents.trainers import threads, trainer_function
from agents.trainers.config import load_config
from agents.trainers.run import Run
from agents.trainers.threads import ThreadGovernor


class FakeMachine:
    """A clock and CPU counters the test moves by hand."""

    def __init__(self, monkeypatch, cores=2):
        self.now, self.machine, self.own = 0.0, 0.0, 0.0
        monkeypatch.setattr(threads, "usable_cores", lambda: cores)
        monkeypatch.setattr(threads, "_machine_busy_seconds", lambda: self.machine)
        monkeypatch.setattr(threads, "_own_busy_seconds", lambda: self.own)
        monkeypatch.setattr(threads.time, "sleep", lambda s: self.run(s, own=1.0, others=0.0))

    def clock(self):
        return self.now

    def run(self, seconds, own, others):
        """``seconds`` pass with this process using ``own`` cores, the others ``others``."""
        self.now += seconds
        self.own += own * seconds
        self.machine += (own + others) * seconds


@pytest.mark.parametrize("others, expected", [(0.0, 2), (0.5, 2), (0.8, 1), (1.0, 1),
                                              (1.9, 1), (3.0, 1)])
def test_the_threads_are_the_cores_others_leave_free(monkeypatch, others, expected):
    machine = FakeMachine(monkeypatch)
    governor = ThreadGovernor(0, clock=machine.clock)
    assert governor.threads == torch.get_num_threads() == 2  # a quiet start takes both
    machine.run(3.0, own=1.0, others=others)
    assert governor.update() == torch.get_num_threads() == expected


def test_it_looks_again_only_after_the_interval_and_follows_the_load(monkeypatch):
    machine = FakeMachine(monkeypatch)
    governor = ThreadGovernor(0, interval=2.0, clock=machine.clock)
    machine.run(1.0, own=1.0, others=1.0)
    assert governor.update() == 2          # too soon to look again
    machine.run(1.5, own=1.0, others=1.0)
    assert governor.update() == 1          # a neighbour took a core
    machine.run(2.5, own=1.0, others=0.0)
    assert governor.update() == 2          # and gave it back


def test_a_busy_machine_at_the_start_starts_on_the_free_core(monkeypatch):
    machine = FakeMachine(monkeypatch)
    monkeypatch.setattr(threads.time, "sleep", lambda s: machine.run(s, own=1.0, others=1.0))
    assert ThreadGovernor(0, clock=machine.clock).threads == 1


def test_a_fixed_count_is_kept_whatever_the_load(monkeypatch):
    machine = FakeMachine(monkeypatch)
    governor = ThreadGovernor(3, clock=machine.clock)
    machine.run(5.0, own=1.0, others=2.0)
    assert governor.update() == torch.get_num_threads() == 3
    assert not governor.adaptive


def test_without_proc_stat_torch_keeps_its_default(monkeypatch):
    monkeypatch.setattr(threads, "_machine_busy_seconds", lambda: None)
    before = torch.get_num_threads()
    governor = ThreadGovernor(0)
    assert not governor.adaptive and governor.update() == before


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_a_bad_thread_count_is_refused(bad):
    with pytest.raises(ValueError, match="torch threads"):
        ThreadGovernor(bad)


@pytest.mark.parametrize("trainer", ["torch", "sb3"])
def test_every_trainer_lets_the_governor_look_between_updates(tmp_path, monkeypatch, trainer):
    calls = []
    monkeypatch.setattr(ThreadGovernor, "update", lambda self: calls.append(1) or 1)
    cfg = load_config(None, [f"run.trainer={trainer}", "run.total_steps=256",
                             "run.checkpoint_every=100000", "env.num_games=4",
                             "ppo.rollout_steps=16", "ppo.num_minibatches=2",
                             "ppo.update_epochs=1", "network.hidden=[8]", "imitation.games=0",
                             "eval.every=0", "opponents.scripted={random: 1}",
                             "opponents.self_play=0", "opponents.snapshots=0"])
    run = Run(cfg, root=tmp_path)
    trainer_function(trainer)(cfg, run, progress=False)
    run.close()
    updates = 256 // (16 * 4)  # one learner seat per game: 64 learner steps per update
    assert len(calls) >= updates
