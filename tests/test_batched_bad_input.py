"""Bad input to the batched engines: unvalidated steps stay inside their own game and the
rules; refused calls (steps, resets, constructors) change nothing."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from qwinto_env import rules
from qwinto_env.batched import BatchedCardGame, BatchedDiceGame, uniform_legal
from qwinto_env.spec.cards import DECK_SIZE as DECK
from qwinto_env.batched.cards import ENTRY as CARD_ENTRY
from qwinto_env.batched.dice import ENTRY as DICE_ENTRY
from qwinto_env.batched.dice import REROLL_DECISION
from qwinto_env.dice import SUBSET_ROWS
from qwinto_env.vector import QwintoVecEnv, RandomOpponent, TorchVectorEnv
from tests.differential import to_np

ENGINES = {"dice": BatchedDiceGame, "cards": BatchedCardGame}
ENTRY = {"dice": DICE_ENTRY, "cards": CARD_ENTRY}
BACKENDS = ["numpy", "torch"]
INT64 = np.iinfo(np.int64)
CASES = [(game, backend, players) for game, engine in ENGINES.items()
         for backend in BACKENDS for players in range(2, engine.max_players + 1)]


def legal_actions(games, gen=None) -> np.ndarray:
    """Uniform legal actions, drawn from ``gen`` (default: the engine's generator)."""
    gen = games.gen if gen is None else gen
    return to_np(uniform_legal(games.backend, games.legal_bits(), gen, games.num_actions))


def chance_for(games, rng: np.random.Generator):
    """Chance that fixes every draw of the next step but the deals of restarting card games."""
    if isinstance(games, BatchedDiceGame):
        return rng.integers(1, 7, size=(games.num_games, 3))
    orders = np.tile(np.arange(DECK), (games.num_games, 1))
    for n in np.flatnonzero(to_np(games.will_reshuffle())):
        covered = games.covered_cards(int(n))
        orders[n, :len(covered)] = rng.permutation(covered)
    return orders


def wrong_id(rng: np.random.Generator, mask: np.ndarray) -> int:
    """An action id that is not legal for a seat with legal-action ``mask``."""
    kind = rng.integers(4)
    if kind == 0:
        return -int(rng.integers(1, 1000))
    if kind == 1:
        return len(mask) + int(rng.integers(0, 1000))
    if kind == 2:
        return int(rng.choice(np.flatnonzero(mask == 0)))
    return int(rng.choice([INT64.max, INT64.min, INT64.min + 1, 1 << 62, -(1 << 40)]))


def per_game(games, out) -> dict[str, np.ndarray]:
    """Everything a step leaves per game (leading axis: game)."""
    state = {"sheets": games.sheets(), "misthrows": games.misthrows, "scores": games.scores(),
             "active": games.active, "turn": games.turn, "observations": games.observations(),
             "masks": games.action_masks(), "rewards": out.rewards,
             "terminated": out.terminated}
    return {k: to_np(v) for k, v in state.items()}


def finals(out) -> dict[int, tuple]:
    """Game -> (final scores, returns, turns) of the games that ended in a step."""
    done = to_np(out.done_index).tolist()
    scores, returns = to_np(out.final_scores), to_np(out.final_returns)
    turns = to_np(out.final_turns)
    return {g: (scores[j].tolist(), returns[j].tolist(), int(turns[j]))
            for j, g in enumerate(done)}


def check_rules(games, game_ids) -> None:
    """The rules' invariants hold for ``game_ids``: valid sheets, consistent legal cells
    and scores, an end not overdue, every mask with a legal action (every card once)."""
    sheets, misthrows = to_np(games.sheets()), to_np(games.misthrows)
    allowed, scores = to_np(games.allowed_values()), to_np(games.scores())
    masks = to_np(games.action_masks())
    for n in game_ids:
        for s in range(games.num_players):
            cells = sheets[n, s].tolist()
            assert rules.cells_violations(cells) == [], (n, s, cells)
            assert allowed[n, s].tolist() == rules.cells_allowed_values(cells), (n, s)
            assert scores[n, s] == rules.cells_score(cells, int(misthrows[n, s])), (n, s)
            assert rules.cells_full_rows(cells) < rules.FULL_ROWS_TO_END, (n, s)
            assert 0 <= misthrows[n, s] < rules.MAX_MISTHROWS, (n, s)
            assert masks[n, s].sum() > 0, (n, s)
        if isinstance(games, BatchedCardGame):
            check_cards(games, n)
        elif games.phase in (REROLL_DECISION, DICE_ENTRY):
            dice = to_np(games.dice)[n]
            assert 1 <= to_np(games.subset)[n] < len(SUBSET_ROWS), n  # some dice rolled
            assert to_np(games.value)[n] == dice.sum(), n


def check_cards(games: BatchedCardGame, n: int) -> None:
    tops, covered, hands = to_np(games.tops)[n], to_np(games.covered)[n], to_np(games.hands)[n]
    pos, end = int(to_np(games.pile_pos)[n]), int(to_np(games.pile_end)[n])
    cards = (tops.tolist() + np.flatnonzero(covered).tolist()
             + [c for c in hands.reshape(-1) if c < DECK] + to_np(games.pile)[n, pos:end].tolist())
    assert sorted(cards) == list(range(DECK)), n


def clone(games):
    """An independent copy of an engine (its stateless backend shared)."""
    return copy.deepcopy(games, {id(games.backend): games.backend})


def same_as_a_legal_choice(before, actions, chance, n: int, got: dict) -> bool:
    """Whether game ``n`` of ``got`` is what one of its active seat's legal actions makes
    of ``before`` (the other actions as in ``actions``): the non-entry phases, where only
    the active seat chooses."""
    active = int(to_np(before.active)[n])
    for choice in np.flatnonzero(to_np(before.action_masks())[n, active]):
        alt, joint = clone(before), actions.copy()
        joint[n, active] = choice
        out = alt.step(joint, chance)
        want = per_game(alt, out)
        if all(np.array_equal(got[key][n], want[key][n]) for key in got):
            return True
    return False


@pytest.mark.parametrize("game,backend,players", CASES)
def test_unvalidated_wrong_ids_stay_in_their_game_and_the_rules(game, backend, players):
    """Random wrong ids (negative, past the last action, in range but illegal now, int64
    extremes) for random seats, at every phase and random points of games, stepped with
    validate=False: every other game ends exactly as in a twin stepped with legal actions
    only; a game with wrong ids ends as after some legal choice (entry phases: with valid
    sheets); the rules' invariants hold and the batch plays on."""
    rng = np.random.default_rng(players)
    num_games = 6
    for case in range(8):
        games = ENGINES[game](num_games, players, backend=backend,
                              seed=int(rng.integers(1 << 30)), final_observations=True)
        per_turn = games.steps_per_turn  # every phase in turn, at random points of games
        for _ in range(per_turn * int(rng.integers(0, 40)) + case % per_turn):
            games.step(legal_actions(games))
        before, twin = clone(games), clone(games)
        pick = games.backend.generator(case)  # leaves the twins' generators in step
        masks, actions = to_np(games.action_masks()), legal_actions(games, pick)
        bad = actions.copy()
        dirty = rng.random((num_games, players)) < 0.3
        dirty[rng.integers(num_games), rng.integers(players)] = True
        for n, s in zip(*np.nonzero(dirty)):
            bad[n, s] = wrong_id(rng, masks[n, s])
        chance = chance_for(twin, rng)
        B = games.backend
        out = games.step(B.asarray(bad, B.int64), chance, validate=False)
        ref = twin.step(actions, chance)
        clean = [n for n in range(num_games) if not dirty[n].any()]
        got, want = per_game(games, out), per_game(twin, ref)
        # A card game deals each restarting game a deck from the shared generator in
        # order: when a dirty game ends differently, later deals shift legitimately.
        same_deals = game == "dice" or finals(out).keys() == finals(ref).keys()
        for key in got:
            rows = [n for n in clean if same_deals or n not in finals(ref)
                    or key not in ("observations", "masks")]
            assert np.array_equal(got[key][rows], want[key][rows]), (case, key)
        assert {n: v for n, v in finals(out).items() if n in clean} == \
            {n: v for n, v in finals(ref).items() if n in clean}, case
        if before.phase != ENTRY[game]:
            for n in np.flatnonzero(dirty.any(1)):
                assert same_as_a_legal_choice(before, actions, chance, n, got), (case, n)
        check_rules(games, range(num_games))
        for _ in range(2 * games.steps_per_turn):
            games.step(legal_actions(games))  # validated: legal play goes on
            check_rules(games, range(num_games))


# -- refused calls change nothing ---------------------------------------------------------

def snapshot(games) -> dict:
    """Every piece of an engine's state: its public arrays and its sheets', the phase and
    the generator's state."""
    gen = games.gen
    out = {"phase": games.phase,
           "gen": to_np(gen.get_state()).tobytes() if hasattr(gen, "get_state")
           else repr(gen.bit_generator.state)}
    for prefix, owner in (("", games), ("sheet_state.", games.sheet_state)):
        for name, value in vars(owner).items():
            if not name.startswith("_") and (isinstance(value, np.ndarray)
                                             or hasattr(value, "detach")):
                out[prefix + name] = to_np(value).copy()
    return out


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]) if isinstance(a[key], np.ndarray) \
            else a[key] == b[key], key


def assert_plays_like(games, twin, steps: int = 12) -> None:
    """``games`` and ``twin`` step alike, each sampling and rolling from its own
    generator: equal generators and states."""
    assert_same(snapshot(games), snapshot(twin))
    for _ in range(steps):
        games.step(legal_actions(games))
        twin.step(legal_actions(twin))
        assert_same(snapshot(games), snapshot(twin))


def bad_actions(actions: np.ndarray, num_actions: int, masks: np.ndarray) -> tuple[list, list]:
    """Action arguments every step refuses (dtypes, NaN, shapes, ragged nesting), and
    those only a validated step refuses (an illegal id, an id out of range)."""
    illegal = actions.copy()
    illegal[0, 0] = int(np.flatnonzero(masks[0, 0] == 0)[0])
    out_of_range = actions.copy()
    out_of_range[-1, -1] = num_actions
    always = [actions.astype(float), np.full(actions.shape, np.nan), actions > 0,
              actions.astype(complex), actions.astype(str), actions.astype(object), None,
              actions[:-1], actions[:, :-1], np.concatenate([actions, actions[:, :1]], 1),
              actions.reshape(-1), actions[0, 0], [list(r) for r in actions[:-1]] + [[1]],
              actions.astype(np.uint64) + np.uint64(1 << 63), torch.tensor(actions).float(),
              torch.tensor(actions) > 0]
    if hasattr(torch, "uint64"):  # torch 2.3 on
        always.append(torch.from_numpy(actions.astype(np.uint64) + np.uint64(1 << 63)))
    return always, [illegal, out_of_range]


@pytest.mark.parametrize("game", ENGINES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_steps_change_nothing(game, backend):
    """Bad actions (dtypes, NaN, shapes, ragged, values) and bad chance, at every phase:
    a ValueError naming the argument (or the game and seat), then the engine, generator
    included, plays on exactly like an untouched twin."""
    engine = ENGINES[game]
    games = engine(4, 3, backend=backend, seed=11)
    twin = engine(4, 3, backend=backend, seed=11)
    for _ in range(2 * games.steps_per_turn):
        masks = to_np(games.action_masks())
        actions = legal_actions(games, games.backend.generator(0))
        always, if_validated = bad_actions(actions, games.num_actions, masks)
        for validate in (True, False):
            for bad in always + (if_validated if validate else []):
                with pytest.raises(ValueError, match="actions|illegal action"):
                    games.step(bad, validate=validate)
            for chance in bad_chances(games):
                with pytest.raises(ValueError, match="chance"):
                    games.step(actions, chance, validate=validate)
        assert_same(snapshot(games), snapshot(twin))
        games.step(actions)
        twin.step(actions)
    assert_plays_like(games, twin)


def other_layouts(actions: np.ndarray) -> list:
    """``actions`` (N, P) int64 in memory layouts other than C order: a transposed (P, N)
    array and a strided slice, as numpy arrays and as torch tensors."""
    by_seat = np.ascontiguousarray(actions.T)
    wide = np.zeros((actions.shape[0], 2 * actions.shape[1]), dtype=np.int64)
    wide[:, ::2] = actions
    return [by_seat.T, wide[:, ::2], torch.from_numpy(by_seat).T, torch.from_numpy(wide)[:, ::2]]


@pytest.mark.parametrize("game", ENGINES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_actions_in_any_memory_layout_step_like_contiguous_ones(game, backend):
    """Transposed or strided actions, numpy or torch, validated or not, at every phase:
    the same step as the same actions in C order (a non-contiguous tensor made the torch
    engine's flat views raise)."""
    games = ENGINES[game](4, 3, backend=backend, seed=3)
    for step in range(2 * games.steps_per_turn):
        actions = legal_actions(games, games.backend.generator(step))
        want = clone(games)
        want_out = want.step(actions)
        for form in other_layouts(actions):
            for validate in (True, False):
                got = clone(games)
                out = got.step(form, validate=validate)
                assert_same(snapshot(got), snapshot(want))
                assert np.array_equal(to_np(out.rewards), to_np(want_out.rewards))
        games.step(actions)


@pytest.mark.parametrize("game", ENGINES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_writing_legal_bits_changes_nothing(game, backend):
    """The caller owns what legal_bits() returns: setting every bit in it, at every
    phase, leaves the masks, the check of a step's actions and the play as a twin's
    (the engine's own cached bits were given out, so an illegal write passed the check
    and broke the rules)."""
    engine = ENGINES[game]
    games, twin = engine(4, 3, backend=backend, seed=4), engine(4, 3, backend=backend, seed=4)
    for step in range(6 * games.steps_per_turn):
        games.legal_bits()[...] = -1
        assert np.array_equal(to_np(games.legal_bits()), to_np(twin.legal_bits()))
        masks = to_np(games.action_masks())
        assert np.array_equal(masks, to_np(twin.action_masks()))
        _, (illegal, _) = bad_actions(legal_actions(games, games.backend.generator(0)),
                                      games.num_actions, masks)
        with pytest.raises(ValueError, match="not legal now"):
            games.step(illegal)
        actions = legal_actions(games, games.backend.generator(step))
        games.step(actions)
        twin.step(actions)
        check_rules(games, range(games.num_games))
    assert_plays_like(games, twin)


def bad_chances(games) -> list:
    """``chance`` arguments a step must refuse."""
    n = games.num_games
    width = 3 if isinstance(games, BatchedDiceGame) else DECK
    good = np.ones((n, width), dtype=np.int64)
    out = [good.astype(float), np.full((n, width), np.nan), good > 0, good[:-1], good[:, :-1],
           good.reshape(-1), [[1] * width] * (n - 1) + [[1]], torch.ones(n, width)]
    if isinstance(games, BatchedDiceGame):
        out += [good * 0, good * 7, -good]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_reshuffle_orders_change_nothing(backend):
    """A card step whose chance does not start with a permutation of a reshuffling game's
    covered cards is refused, validated or not, and the engine plays on like a twin."""
    games = BatchedCardGame(8, 2, backend=backend, seed=5)
    twin = BatchedCardGame(8, 2, backend=backend, seed=5)
    while not to_np(games.will_reshuffle()).any():
        actions = legal_actions(games, games.backend.generator(0))
        games.step(actions)
        twin.step(actions)
    n = int(np.flatnonzero(to_np(games.will_reshuffle()))[0])
    orders = chance_for(games, np.random.default_rng(0))
    orders[n, 0] = orders[n, 1]
    actions = legal_actions(games, games.backend.generator(0))
    for validate in (True, False):
        with pytest.raises(ValueError, match=f"chance row {n}"):
            games.step(actions, orders, validate=validate)
    assert_plays_like(games, twin)


def bad_reset_args(games) -> list[dict]:
    """``reset`` keyword arguments that must be refused, each with a valid new seed (so a
    refused reset that reseeded first shows)."""
    n, p = games.num_games, games.num_players
    seeds = [-1, 1.5, "3", True, np.bool_(True), 1 << 64, np.float64(3), [3]]
    starts = [p, -1, 1.5, [0] * (n + 1), [0.5] * n, "0", np.full(n, p)]
    out = [{"seed": s} for s in seeds] + [{"seed": 9, "start_player": s} for s in starts]
    if isinstance(games, BatchedCardGame):
        decks = [np.zeros((n, DECK), dtype=int), np.tile(np.arange(DECK), (n + 1, 1)),
                 np.tile(np.arange(DECK), (n, 1)).astype(float), np.arange(DECK)]
        out += [{"seed": 9, "deck": d} for d in decks]
    return out


@pytest.mark.parametrize("game", ENGINES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_resets_change_nothing(game, backend):
    """Bad seeds, start players and decks: a ValueError naming the argument, and every
    game and the generator stay as they were (then play on like a twin)."""
    engine = ENGINES[game]
    games = engine(4, 3, backend=backend, seed=2)
    twin = engine(4, 3, backend=backend, seed=2)
    for _ in range(4):
        actions = legal_actions(games, games.backend.generator(0))
        games.step(actions)
        twin.step(actions)
    for kwargs in bad_reset_args(games):
        name = [k for k in kwargs if k != "seed"] or ["seed"]
        with pytest.raises(ValueError, match=name[0]):
            games.reset(**kwargs)
        assert_same(snapshot(games), snapshot(twin))
    assert_plays_like(games, twin)


@pytest.mark.parametrize("game", ENGINES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", [np.int64(3), np.uint32(3), np.int8(3)])
def test_numpy_integer_seeds_give_the_games_of_python_ints(game, backend, seed):
    engine = ENGINES[game]
    games, twin = engine(4, 2, backend=backend, seed=seed), engine(4, 2, backend=backend, seed=3)
    assert_plays_like(games, twin)
    games.reset(seed=seed, start_player=np.int64(1))
    twin.reset(seed=3, start_player=1)
    assert_plays_like(games, twin)


@pytest.mark.parametrize("game", ENGINES)
def test_bad_constructor_args_name_the_argument(game):
    engine = ENGINES[game]
    engine(2, 2)  # an engine of 2 games, so a cached check of 2 games would match 2.0
    engine(1, 2)
    p = engine.max_players
    bad = [({"num_games": v}, "num_games") for v in (0, -1, 1.5, 2.0, True, "4", [4], None)]
    bad += [({"num_players": v}, "num_players") for v in (0, p + 1, 2.5, True, [2], None)]
    bad += [({"reward": v}, "reward") for v in ("winner", ["win"], 1)]
    bad += [({"backend": v}, "backend") for v in ("jax", None, ["numpy"])]
    bad += [({"backend": "torch", "device": v}, "device") for v in ("foo", 3.5, "cuda:99",
                                                                          "meta")]
    bad += [({"backend": "numpy", "device": "cuda"}, "numpy backend")]
    bad += [({"start_player": v}, "start_player") for v in (2, -1, 1.5, True, [0])]
    bad += [({"seed": v}, "seed") for v in (-1, 1.5, True, "3")]
    bad += [({switch: v}, switch) for switch in ("random_start", "final_observations")
            for v in ("false", 1, None)]  # "false" switched it on
    if game == "cards":
        bad += [({"empty_pile": v}, "empty_pile") for v in ("stop", None)]
    for kwargs, name in bad:
        args = {"num_games": 2, "num_players": 2, **kwargs}
        with pytest.raises(ValueError, match=name):
            engine(args.pop("num_games"), args.pop("num_players"), **args)


# -- the vector envs over the engines ------------------------------------------------------

def make_vec(kind: str):
    """A vector env of 4 three-seat games, the learner in seat 1 against two random
    opponents of their own (so two such envs are twins); and the opponents."""
    front = QwintoVecEnv if kind == "sb3" else TorchVectorEnv
    opponents = [RandomOpponent("numpy" if kind == "sb3" else "torch", seed=s) for s in (1, 2)]
    return front(4, 3, opponents=opponents, learner_seat=1, seed=7), opponents


def vec_reset(env) -> np.ndarray:
    """Reset; the learner's masks."""
    if isinstance(env, QwintoVecEnv):
        env.reset()
        return env.action_masks()
    return to_np(env.reset()[1])


def vec_state(env, opponents) -> dict:
    """The engine's state and the opponents' generators."""
    state = snapshot(env.engine)
    for k, opponent in enumerate(opponents):
        gen = opponent.gen
        state[f"opponent {k}"] = to_np(gen.get_state()).tobytes() \
            if hasattr(gen, "get_state") else repr(gen.bit_generator.state)
    return state


def bad_entry_actions(actions: np.ndarray, num_actions: int, masks: np.ndarray) -> list:
    """Learner actions (one per entry) a vector env must refuse."""
    illegal, out_of_range = actions.copy(), actions.copy()
    illegal[0] = int(np.flatnonzero(masks[0] == 0)[0])
    out_of_range[-1] = num_actions
    return [actions.astype(float), np.full(actions.shape, np.nan), actions > 0,
            actions.astype(str), None, actions[:-1], actions[:, None],
            np.concatenate([actions, actions[:1]]), actions[0], [[1], [2, 3]],
            actions.astype(np.uint64) + np.uint64(1 << 63), torch.tensor(actions).float(),
            illegal, out_of_range]


@pytest.mark.parametrize("kind", ["sb3", "torch"])
def test_vector_env_refuses_bad_learner_actions_before_asking_opponents(kind):
    """Bad learner actions (illegal, out of range, dtypes, shapes) raise ValueError
    naming them before any opponent is asked; the env then plays on like a twin."""
    (env, opponents), (twin, twin_opponents) = make_vec(kind), make_vec(kind)
    masks = vec_reset(env)
    vec_reset(twin)
    rng = np.random.default_rng(0)
    for _ in range(9):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        for bad in bad_entry_actions(actions, env.engine.num_actions, masks):
            with pytest.raises(ValueError, match="actions|illegal action"):
                env.step(bad)
            assert_same(vec_state(env, opponents), vec_state(twin, twin_opponents))
        out, ref = env.step(actions), twin.step(actions)
        masks = env.action_masks() if kind == "sb3" else to_np(out[1])
        for got, want in zip(out[:3], ref[:3]):
            assert np.array_equal(to_np(got), to_np(want))
    assert_same(vec_state(env, opponents), vec_state(twin, twin_opponents))


@pytest.mark.parametrize("kind", ["sb3", "torch"])
def test_vector_env_refuses_bad_opponent_actions(kind):
    """An opponent's answer of the wrong shape or dtype (a single action broadcast to
    every game, floats) raises ValueError naming that opponent's seat; nothing changes."""
    for answer in (np.array([27]), np.full((4, 1), 27), np.full(4, 27.0), np.full(5, 27)):
        front = QwintoVecEnv if kind == "sb3" else TorchVectorEnv
        env = front(4, 2, opponents=lambda obs, masks: answer, learner_seat=0, seed=3)
        twin = front(4, 2, opponents=lambda obs, masks: answer, learner_seat=0, seed=3)
        masks = vec_reset(env)
        vec_reset(twin)
        rolls = np.array([np.flatnonzero(m)[0] for m in masks])  # seat 0 rolls first
        with pytest.raises(ValueError, match="opponent in seat 1"):
            env.step(rolls)
        assert_same(snapshot(env.engine), snapshot(twin.engine))


@pytest.mark.parametrize("kind", ["sb3", "torch"])
def test_vector_env_seeds(kind):
    """A bad seed is refused at reset naming it, with nothing changed; numpy integer
    seeds give the games of Python ints."""
    front = QwintoVecEnv if kind == "sb3" else TorchVectorEnv

    def reset(env, seed):
        if kind == "sb3":
            env.seed(seed)
            return env.reset()
        return to_np(env.reset(seed=seed)[0])

    env, twin = front(4, 2, seed=1), front(4, 2, seed=1)
    # SB3's seed() stores seed + entry index: True becomes 1 and "3" fails there.
    for seed in (-1, 1.5, 1 << 64) + (() if kind == "sb3" else (True, "3")):
        with pytest.raises(ValueError, match="seed"):
            reset(env, seed)
        assert_same(snapshot(env.engine), snapshot(twin.engine))
    for seed in (np.int64(5), np.uint16(5)):
        assert np.array_equal(reset(env, seed), reset(twin, 5))
        assert_same(snapshot(env.engine), snapshot(twin.engine))


def test_vector_env_constructor_args_name_the_argument():
    bad = [({"num_games": 0}, "num_games"), ({"num_games": 1.5}, "num_games"),
           ({"num_games": True}, "num_games"), ({"num_players": 7}, "num_players"),
           ({"game": "chess"}, "game"), ({"reward": "most"}, "reward"),
           ({"seed": -1}, "seed"), ({"opponents": [RandomOpponent()] * 2}, "opponents"),
           ({"opponents": RandomOpponent(), "learner_seat": 2}, "learner_seat"),
           ({"opponents": 3}, "opponents"),
           ({"empty_pile": "stop", "game": "cards"}, "empty_pile")]
    for front, extra in ((QwintoVecEnv, [({"backend": "jax"}, "backend")]),
                         (TorchVectorEnv, [({"device": "foo"}, "device")])):
        for kwargs, name in bad + extra:
            args = {"num_games": 2, "num_players": 2, **kwargs}
            with pytest.raises(ValueError, match=name):
                front(args.pop("num_games"), args.pop("num_players"), **args)
        with pytest.raises(TypeError, match="colour"):
            front(2, 2, colour="red")


def test_sb3_vec_env_reports_bad_actions_at_step_wait_like_sb3():
    """As SB3's own VecEnvs: step_async stores the actions, step_wait raises; a refused
    step changes nothing and the next good one steps as usual."""
    env, twin = QwintoVecEnv(2, 2, seed=0), QwintoVecEnv(2, 2, seed=0)
    env.reset(), twin.reset()
    actions = np.array([np.flatnonzero(m)[0] for m in env.action_masks()])
    for bad in (None, actions[:3], actions.astype(float)):
        env.step_async(bad)
        with pytest.raises(ValueError, match="actions"):
            env.step_wait()
        assert_same(snapshot(env.engine), snapshot(twin.engine))
    env.step_async(actions)
    for got, want in zip(env.step_wait()[:3], twin.step(actions)[:3]):
        assert np.array_equal(got, want)
    with pytest.raises(RuntimeError, match="step_async"):
        env.step_wait()


@pytest.mark.parametrize("front", [QwintoVecEnv, TorchVectorEnv])
def test_opponent_env_steps_before_reset_like_self_play(front):
    """The engine starts reset, so a step before reset() plays from that start (it raised
    AttributeError with opponents, and worked in self-play)."""
    opponent = RandomOpponent("numpy" if front is QwintoVecEnv else "torch", seed=0)
    env = front(2, 2, opponents=opponent, learner_seat=1, seed=0)
    rewards = env.step(np.full(2, 27))[1 if front is QwintoVecEnv else 2]
    assert to_np(rewards).shape == (2,)


def test_sb3_vec_env_indices_name_an_entry_that_does_not_exist():
    """``get_attr`` / ``env_method`` / ``env_is_wrapped`` refuse entries outside the env
    (get_attr answered for them) and take numpy and negative indices as SB3's lists do."""
    env = QwintoVecEnv(2, 2, seed=0)  # 4 entries
    env.reset()
    for bad in (4, [0, 9], -5, [1.5], [True], "0", 2.0):
        for call in (lambda: env.get_attr("num_envs", indices=bad),
                     lambda: env.env_method("action_masks", indices=bad),
                     lambda: env.env_is_wrapped(object, indices=bad)):
            with pytest.raises(IndexError, match=r"indices must be entries in 0\.\.3"):
                call()
    masks = env.action_masks()
    got = env.env_method("action_masks", indices=[np.int64(3), -1])
    assert np.array_equal(np.stack(got), masks[[3, 3]])
    assert env.get_attr("num_envs", indices=np.int64(2)) == [4]
    assert env.env_is_wrapped(object, indices=range(1, 3)) == [False, False]
