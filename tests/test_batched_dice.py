"""The batched dice engine against the ParallelEnv: identical at every step.

The differential harness runs a batch of games on the batched engine (numpy or torch-CPU)
and one ParallelEnv per game, feeds both the same die faces and the same random legal
actions, and compares observations (bit for bit), masks, rewards, terminations, final
scores, returns and lengths at every step, plus the allowed-value bitmasks against
``rules.cells_allowed_values``.
"""

from __future__ import annotations

import numpy as np
import pytest
from tqdm import tqdm

import qwinto_env
from qwinto_env import rules
from qwinto_env.batched import BatchedDiceGame, get_backend, pack_masks, uniform_legal
from qwinto_env.batched.dice import CHOOSE, ENTRY, PASS, REROLL_DECISION
from qwinto_env.game import IllegalActionError
from tests.differential import StepCheck, assert_same_views, to_np

BACKENDS = ["numpy", "torch"]



class FixedDice:
    """Stands in for a DiceGame's ``random.Random``: hands out the faces the test chose."""

    def __init__(self):
        self.faces: list[int] = []

    def randint(self, low, high):
        return self.faces.pop(0)


IDEAL = 2 * (np.arange(27) % 9 + 1)  # a full row 2, 4, ..., 18 fits every field


def choose_actions(masks: np.ndarray, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random legal actions mixed with a sheet-filling heuristic (write the value where it
    is closest to the field's ideal 2, 4, ..., 18), so that games also end by two full
    rows; plain uniform play nearly always ends by four misthrows."""
    n, p, _ = masks.shape
    fit = np.abs(values[:, None] - IDEAL[None, :])  # (n, 27)
    actions = np.empty((n, p), dtype=np.int64)
    for i in range(n):
        for s in range(p):
            legal = np.flatnonzero(masks[i, s])
            writes = legal[legal < PASS]
            u = rng.random()
            if 34 in legal and u < 0.8:
                actions[i, s] = 34  # roll all three dice
            elif len(writes) and u < 0.9:
                actions[i, s] = writes[np.argmin(fit[i, writes] + rng.random(len(writes)))]
            elif len(writes) and u < 0.97:
                actions[i, s] = rng.choice(writes)
            else:
                actions[i, s] = rng.choice(legal)
    return actions


#: (subset bitmask, value) -> every face triple rolling that value with those dice.
FACES_FOR = {}
for _o in range(1, 7):
    for _y in range(1, 7):
        for _p in range(1, 7):
            for _sub in range(1, 8):
                _v = sum(f for r, f in enumerate((_o, _y, _p)) if _sub >> r & 1)
                FACES_FOR.setdefault((_sub, _v), []).append((_o, _y, _p))


def choose_chance(subsets: np.ndarray, active: np.ndarray, allowed: np.ndarray,
                  rng: np.random.Generator) -> np.ndarray:
    """Die faces: sometimes uniform, mostly loaded to roll a value near the ideal of the
    active seat's leftmost empty field of a rolled row (fills rows, as good play does)."""
    faces = rng.integers(1, 7, size=(len(subsets), 3))
    for i, sub in enumerate(subsets):
        rows = [r for r in range(3) if sub >> r & 1]
        if not rows or rng.random() < 0.15:
            continue
        r = rng.choice(rows)
        empty = [c for c in range(9 * r, 9 * r + 9) if allowed[i, active[i], c]]
        if empty:
            bits = int(allowed[i, active[i], empty[0]])
            values = [v for v in range(1, 19) if bits >> v & 1 and (int(sub), v) in FACES_FOR]
            if values:
                near = [v for v in values if v >= IDEAL[empty[0]] - 1] or values
                options = FACES_FOR[(int(sub), near[0])]
                faces[i] = options[rng.integers(len(options))]
    return faces


def run_differential(backend: str, num_players: int, reward: str, num_games: int,
                     batch: int = 32, seed: int = 0, progress: bool = False) -> dict:
    """Play ``num_games`` games both ways and assert identity; return some counts."""
    rng = np.random.default_rng(seed)
    games = BatchedDiceGame(batch, num_players, backend=backend, seed=seed, reward=reward,
                            random_start=True, final_observations=True)
    envs = [qwinto_env.parallel_env(num_players=num_players, reward=reward)
            for _ in range(batch)]
    dice_sources = [FixedDice() for _ in range(batch)]
    start = to_np(games.active)
    observations, returns = [], np.zeros((batch, num_players))
    for i, env in enumerate(envs):
        observations.append(env.reset(options={"start_player": int(start[i])})[0])
        env.game.rng = dice_sources[i]
    agents = envs[0].possible_agents
    finished, full_row_ends, steps = 0, 0, 0
    bar = tqdm(total=num_games, disable=not progress, desc=f"{backend} {num_players}p {reward}")
    while finished < num_games:
        obs_b, masks_b = to_np(games.observations()), to_np(games.action_masks())
        assert_same_views(obs_b, masks_b, observations, agents, steps)
        allowed_b = to_np(games.allowed_values())
        sheets_b = to_np(games.sheets())
        for i, env in enumerate(envs):
            for s in range(num_players):
                assert sheets_b[i, s].tolist() == env.game.cells[s]
                assert allowed_b[i, s].tolist() == rules.cells_allowed_values(env.game.cells[s])
        actions = choose_actions(masks_b, to_np(games.value), rng)
        phase = games.phase
        active = to_np(games.active)
        subsets = (actions[np.arange(batch), active] - PASS) if phase == CHOOSE \
            else to_np(games.subset)
        faces = choose_chance(subsets, active, allowed_b, rng)
        check = StepCheck(games.step(actions, chance=faces), returns)
        for i, env in enumerate(envs):
            if phase == CHOOSE or (phase == REROLL_DECISION
                                   and actions[i, env.game.active] == qwinto_env.dice.REROLL):
                dice_sources[i].faces = [int(f) for f in faces[i]]
            obs, rew, terms, _, _ = env.step(dict(zip(agents, map(int, actions[i]))))
            assert not dice_sources[i].faces, "the reference did not roll when expected"
            observations[i] = obs
            if check.game(i, env, obs, rew, terms):
                finished += 1
                bar.update(1)
                full_row_ends += any(rules.cells_full_rows(c) >= 2 for c in env.game.cells)
                observations[i] = env.reset(
                    options={"start_player": int(to_np(games.active)[i])})[0]
        steps += 1
    bar.close()
    return {"finished": finished, "full_row_ends": full_row_ends, "steps": steps}


# -- quick differential runs (CI) ---------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_players,reward", [(2, "win"), (3, "margin"), (4, "score"),
                                                (1, "score"), (6, "win")])
def test_matches_parallel_env(backend, num_players, reward):
    counts = run_differential(backend, num_players, reward, num_games=40, batch=16,
                              seed=num_players)
    assert counts["full_row_ends"] > 0, "no game ended by full rows: the test is too weak"


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_parallel_env_10000_games(backend):
    done = 0
    for num_players, reward, games in [(2, "win", 5000), (3, "margin", 2000),
                                       (4, "score", 2000), (1, "score", 1000)]:
        done += run_differential(backend, num_players, reward, num_games=games, batch=256,
                                 seed=7, progress=True)["finished"]
    assert done >= 10_000


# -- engine behaviour ------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_phases_move_together_and_auto_reset(backend):
    games = BatchedDiceGame(256, 2, backend=backend, seed=3)
    B = games.backend
    ended = 0
    for step in range(600):
        assert games.phase == (CHOOSE, REROLL_DECISION, ENTRY)[step % 3]
        out = games.step(uniform_legal(B, games.legal_bits(), games.gen))
        ended += int(out.done_index.shape[0])
        if step % 3 != 2:
            assert not bool(out.terminated.any())
    assert ended > 256, "games did not end and restart"
    # Restarted games hold fresh sheets once their first entry comes.
    scores = to_np(games.scores())
    assert scores.min() >= -20


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_reproduces_trajectory(backend):
    def run(seed):
        games = BatchedDiceGame(64, 3, backend=backend, seed=seed)
        trace = []
        for _ in range(90):
            out = games.step(uniform_legal(games.backend, games.legal_bits(), games.gen))
            trace.append(to_np(out.rewards).copy())
        return np.stack(trace), to_np(games.observations())
    (r1, o1), (r2, o2), (r3, _) = run(5), run(5), run(6)
    assert np.array_equal(r1, r2) and np.array_equal(o1, o2)
    assert not np.array_equal(r1, r3)


def test_numpy_and_torch_agree_given_the_same_chance_and_actions():
    rng = np.random.default_rng(1)
    a = BatchedDiceGame(128, 2, backend="numpy", seed=0)
    b = BatchedDiceGame(128, 2, backend="torch", seed=0)
    for _ in range(150):
        masks = to_np(a.action_masks())
        assert np.array_equal(masks, to_np(b.action_masks()))
        actions = choose_actions(masks, to_np(a.value), rng)
        faces = rng.integers(1, 7, size=(128, 3))
        ra, rb = a.step(actions, chance=faces), b.step(actions, chance=faces)
        assert np.array_equal(to_np(ra.rewards), to_np(rb.rewards))
        assert np.array_equal(a.observations(), to_np(b.observations()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_illegal_action_raises_and_changes_nothing(backend):
    games = BatchedDiceGame(4, 2, backend=backend, seed=0)
    before = to_np(games.observations()).copy()
    actions = np.full((4, 2), PASS)
    actions[np.arange(4), to_np(games.active)] = 34
    actions[2, 1] = 35  # keep is not legal in the choose phase
    with pytest.raises(IllegalActionError, match="game 2 seat 1"):
        games.step(actions)
    actions[2, 1] = 99
    with pytest.raises(IllegalActionError, match="out of range"):
        games.step(actions)
    with pytest.raises(IllegalActionError, match="shape"):
        games.step(actions[:3])
    with pytest.raises(ValueError, match="integers"):
        games.step(actions.astype(float))
    assert np.array_equal(to_np(games.observations()), before)
    assert games.phase == CHOOSE


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_chance_and_options_raise(backend):
    games = BatchedDiceGame(2, 2, backend=backend)
    actions = np.array([[34, PASS], [34, PASS]])
    with pytest.raises(ValueError, match="die faces"):
        games.step(actions, chance=np.full((2, 3), 7))
    with pytest.raises(ValueError, match="die faces"):
        games.step(actions, chance=np.ones((3, 3), dtype=int))
    with pytest.raises(ValueError, match="num_players"):
        BatchedDiceGame(2, 7, backend=backend)
    with pytest.raises(ValueError, match="num_games"):
        BatchedDiceGame(0, 2, backend=backend)
    with pytest.raises(ValueError, match="reward"):
        BatchedDiceGame(2, 1, backend=backend, reward="win")
    with pytest.raises(ValueError, match="start_player"):
        games.reset(start_player=2)
    with pytest.raises(ValueError, match="backend"):
        BatchedDiceGame(2, 2, backend="jax")


def test_chance_fixes_the_roll():
    games = BatchedDiceGame(3, 2, seed=0)
    games.reset(start_player=np.array([0, 1, 0]))
    actions = np.array([[28, PASS], [PASS, 34], [32, PASS]])  # orange; all; orange+purple
    games.step(actions, chance=np.array([[6, 1, 1], [2, 3, 4], [5, 5, 3]]))
    assert games.value.tolist() == [6, 9, 8]
    assert games.dice.tolist() == [[6, 0, 0], [2, 3, 4], [5, 0, 3]]
    # Re-roll only game 1; the others keep their roll even though chance is given.
    games.step(np.array([[35, PASS], [PASS, 36], [35, PASS]]),
               chance=np.array([[1, 1, 1], [1, 1, 1], [1, 1, 1]]))
    assert games.value.tolist() == [6, 3, 8]


@pytest.mark.parametrize("backend", BACKENDS)
def test_uniform_legal_is_uniform_and_legal(backend):
    B = get_backend(backend)
    masks = np.zeros((4, 37), dtype=np.int8)
    masks[0, [3, 27]] = 1
    masks[1, 27] = 1
    masks[2, 28:35] = 1
    masks[3, [0, 5, 9, 13, 20, 26, 27, 36]] = 1
    legal = pack_masks(B, B.asarray(masks, B.int8))
    legal = legal[None, :].repeat(20000, 0) if backend == "numpy" else legal.repeat(20000, 1)
    gen = B.generator(0)
    draws = to_np(uniform_legal(B, legal.reshape(20000, 4), gen))
    for j in range(4):
        values, counts = np.unique(draws[:, j], return_counts=True)
        assert set(values) == set(np.flatnonzero(masks[j]))
        expected = 20000 / len(values)
        assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))


@pytest.mark.parametrize("backend", BACKENDS)
def test_popcount(backend):
    B = get_backend(backend)
    x = np.array([0, 1, 7, (1 << 37) - 1, (1 << 61) + 5], dtype=np.int64)
    assert to_np(B.popcount(B.asarray(x, B.int64))).tolist() == [0, 1, 3, 37, 3]


def test_state_bytes_and_tables_from_rules():
    games = BatchedDiceGame(8, 2)
    assert 100 < games.state_bytes_per_game() < 400
    # The update table is rules.allowed_after_write, transposed.
    allowed = rules.cells_allowed_values([0] * 27)
    rules.allowed_after_write(allowed, 4, 9)
    games.step(np.array([[34, PASS]] * 8), chance=np.array([[3, 3, 3]] * 8))
    games.step(np.array([[35, PASS]] * 8))
    games.step(np.array([[4, PASS]] * 8))
    assert to_np(games.allowed_values())[0, 0].tolist() == allowed


@pytest.mark.parametrize("backend", BACKENDS)
def test_sheet_features_divide_exactly_like_the_single_engine(backend):
    # The batched engines compute float32(v) / 18; the single engines float32(v / 18).
    B = get_backend(backend)
    batched = to_np(B.astype(B.arange(19), B.float32) / 18.0)
    single = np.array([v / 18 for v in range(19)], dtype=np.float32)
    assert np.array_equal(batched.view(np.int32), single.view(np.int32))
