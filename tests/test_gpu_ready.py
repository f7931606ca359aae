"""The torch trainer is ready for a GPU: its rollout never waits on the host.

On a CUDA device every read of a device value from Python (``.item()``, ``.tolist()``,
``bool()`` of a tensor, ``nonzero``, boolean-mask indexing, a copy to the host) stalls the
device until it has caught up. ``tests/syncs.py`` counts those calls on CPU; the rollout
of both games with the default opponent mix (snapshots, random, greedy, expert) must make
none. The seating and the episode statistics that replaced the per-game bookkeeping are
checked against direct computations.
"""

import numpy as np
import pytest
import torch

from agents.trainers.config import load_config
from agents.trainers.torch_ppo import Seating, TorchPPO
from syncs import SyncCounter

SMALL = ["env.num_games=24", "ppo.rollout_steps=48", "network.hidden=[16]",
         "imitation.games=0", "run.device=cpu"]
GAMES = [("dice", 2), ("dice", 4), ("cards", 2), ("cards", 3)]


def small_ppo(game: str, players: int, *overrides: str) -> TorchPPO:
    cfg = load_config(None, [*SMALL, f"env.game={game}", f"env.num_players={players}",
                             *(["network.features=cards"] if game == "cards" else []),
                             *overrides])
    ppo = TorchPPO(cfg, torch.device("cpu"))
    ppo.pool.add_snapshot(ppo.net)
    return ppo


@pytest.mark.parametrize("game,players", GAMES)
def test_rollout_makes_no_host_sync(game, players):
    """The default opponent mix, games ending and restarting: zero reads in the rollout."""
    torch.manual_seed(0)
    ppo = small_ppo(game, players)
    assert {name for name, _ in ppo.seats.groups} == {"snapshots", "random", "greedy", "expert"}
    ppo.rollout()  # the first rollout plans the opponents (host work, once)
    with SyncCounter() as syncs:
        ppo.rollout()
    calls = "\n".join(f"{name} at {where}" for name, where in syncs.calls[:10])
    assert syncs.count == 0, f"{syncs.count} host syncs in the rollout:\n{calls}"
    assert ppo.episodes.sums[1] > 0, "no game ended: the restarts went untested"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("game,players", GAMES)
def test_rollout_on_cuda_never_syncs(game, players):
    """The same on a GPU, checked by CUDA itself: any sync raises."""
    cfg = load_config(None, [*SMALL[:-1], "run.device=cuda", f"env.game={game}",
                             f"env.num_players={players}"] +
                      (["network.features=cards"] if game == "cards" else []))
    ppo = TorchPPO(cfg, torch.device("cuda"))
    ppo.pool.add_snapshot(ppo.net)
    ppo.rollout()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        ppo.rollout()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_decisions_only_reads_once_per_step():
    """The documented exception: picking the deciding rows reads their number."""
    ppo = small_ppo("dice", 2, "ppo.decisions_only=true")
    ppo.rollout()
    with SyncCounter() as syncs:
        ppo.rollout()
    assert syncs.count == ppo.pc.rollout_steps
    assert {name for name, _ in syncs.calls} == {"nonzero"}


@pytest.mark.parametrize("games,players", [(64, 2), (50, 3), (7, 4), (256, 2)])
def test_seating_seats_each_opponent_game_once(games, players):
    from agents.trainers.pool import OpponentPool

    cfg = load_config(None, [*SMALL, f"env.num_players={players}"]).opponents
    pool = OpponentPool(cfg, "dice", players, seed=0)
    n_opp = round(games * pool.opponent_share)
    split = pool.split(n_opp)
    shares = {"snapshots": cfg.snapshots, **cfg.scripted}
    total = sum(shares.values())
    for name, n in split:  # largest remainders: within one game of the exact share
        assert abs(n - n_opp * shares[name] / total) < 1
    seats = Seating.deal(games, players, split, torch.device("cpu"))
    learner = seats.learner.numpy()
    assert learner[:games - n_opp].all()
    assert (learner[games - n_opp:].sum(axis=1) == 1).all()
    assert seats.opponent_games == n_opp
    rows = np.concatenate([r.numpy() for _, r in seats.groups])
    assert sorted(rows) == sorted(np.flatnonzero(~learner.reshape(-1)))
    assert (seats.learner_rows.numpy() == np.flatnonzero(learner.reshape(-1))).all()
    for name, r in seats.groups:  # each opponent holds whole games
        games_of = np.unique(r.numpy() // players)
        assert len(r) == len(games_of) * (players - 1) == dict(split)[name] * (players - 1)


def test_every_opponent_plays_its_own_rows():
    """The plan covers every opponent row once, each group by its own opponent, and the
    snapshot group is shared out over the snapshots kept."""
    ppo = small_ppo("dice", 2, "env.num_games=200")
    for _ in range(2):
        ppo.pool.add_snapshot(ppo.net)
    plan = ppo._opponent_plan()
    rows = np.concatenate([r.numpy() for _, r in plan])
    assert len(rows) == len(set(rows)) == sum(len(r) for _, r in ppo.seats.groups)
    groups = {name: set(r.numpy()) for name, r in ppo.seats.groups}
    for opponent, r in plan:
        group = "snapshots" if opponent.name.startswith("snapshot") else opponent.name
        assert set(r.numpy()) <= groups[group]
    assert sum(o.name.startswith("snapshot") for o, _ in plan) == 3


def test_episode_sums_match_the_ended_games():
    """The device sums equal scores and results computed game by game from the engine's
    own report of the games that ended."""
    torch.manual_seed(1)
    ppo = small_ppo("dice", 3)
    scores, results = [], []
    learner = ppo.seats.learner.numpy()
    original = ppo.engine.step

    def step(actions, validate=True):
        out = original(actions, validate=validate)
        for g, finals in zip(out.done_index.tolist(), out.final_scores.tolist()):
            own = [s for s, mine in zip(finals, learner[g]) if mine]
            scores.extend(own)
            if not learner[g].all():
                other = max(s for s, mine in zip(finals, learner[g]) if not mine)
                results.append(1.0 if own[0] > other else 0.5 if own[0] == other else 0.0)
        return out

    ppo.engine.step = step
    for _ in range(3):
        ppo.rollout()
    logs = {}
    ppo.episodes.report(logs)
    assert scores and results
    assert logs["train/episode_score"] == pytest.approx(np.mean(scores))
    assert logs["train/opponent_game_win_rate"] == pytest.approx(np.mean(results))
    assert ppo.episodes.report({}) == {}  # forgotten once reported


def test_device_check_dry_run():
    """The prepared device check runs end to end on the CPU (``--dry-run``): the engine
    table for both games and the trainer's line."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--dry-run"], cwd=root,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| dice", "| cards"))]
    assert len(rows) == 4 and all(float(r.split("|")[3].replace(",", "")) > 0 for r in rows)
    assert "sync check: skipped (needs CUDA)" in done.stdout
    assert "learner steps per second" in done.stdout
