"""The search agent (``agents.load("search:<checkpoint>")``): legal, reproducible, honest
about hidden cards, exact where its simulation is deterministic, and loud about bad
settings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents import load
from agents.base import AgentSpecError
from agents.evaluate import BATCH_GAMES
from agents.evaluate import main as evaluate_main
from agents.evaluate import play
from agents.load import CheckpointNotFoundError
from agents.search import (DEFAULTS, MAX_BATCH_COPIES, MAX_COPIES, PRESETS, SearchAgent,
                           deal_hidden)
from qwinto_env import rules
from qwinto_env.batched import BatchedCardGame, BatchedDiceGame, uniform_legal
from qwinto_env.spec import SPECS
from qwinto_env.spec import cards as card_spec
from qwinto_env.spec.dice import ENTRY
from qwinto_env.view import decode_batch
from tests.checkpoints import small_checkpoint

SMALL = {"samples": 4, "top_k": 3, "turns": 1, "phases": "all", "min_prob": 0}
ENGINES = {"dice": (BatchedDiceGame, 37), "cards": (BatchedCardGame, 88)}


def decisions(game: str, seed: int, steps: int, num_players: int = 2):
    """Seat 0's real decisions (several legal actions) in random games after ``steps``."""
    kind, bits = ENGINES[game]
    engine = kind(32, num_players, seed=seed)
    for _ in range(steps):
        engine.step(uniform_legal(engine.backend, engine.legal_bits(), engine.gen, bits))
    obs, masks = engine.observations()[:, 0], engine.action_masks()[:, 0]
    real = masks.sum(1) > 1
    return engine, obs[real], masks[real]


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_search_plays_legal_actions(game):
    agent = load(f"search:pretrained:{game}-2p", game=game, **SMALL)
    agent.reset(seed=0)
    seen = 0
    for steps in range(0, 40, 3):  # every phase of both games
        _, obs, masks = decisions(game, steps, steps)
        if len(obs):
            actions = agent.act_batch(obs, masks)
            assert masks[np.arange(len(obs)), actions].all()
            assert masks[0, agent.act(obs[0], masks[0])] == 1
            seen += len(obs)
    assert seen > 50


@pytest.mark.parametrize("num_players", [1, 3, 4])
@pytest.mark.parametrize("game", ["dice", "cards"])
def test_search_plays_every_player_count(tmp_path, game, num_players):
    """A checkpoint of any player count searches: legal actions in every phase, some of
    them not the policy's, and whole games in the evaluator."""
    path = tmp_path / "net.pt"
    small_checkpoint(path, game, num_players, features="sheet", seed=num_players)
    agent = load(f"search[samples=4,top_k=3,turns=0,confidence=0]:{path}", game=game,
                 num_players=num_players)
    policy = load(str(path), game=game, num_players=num_players)
    agent.reset(seed=0)
    seen = changed = 0
    for steps in range(0, 40, 5):
        _, obs, masks = decisions(game, steps, steps, num_players)
        if len(obs):
            actions = agent.act_batch(obs, masks)
            assert masks[np.arange(len(obs)), actions].all()
            changed += (actions != policy.act_batch(obs, masks)).sum()
            seen += len(obs)
    assert seen > 50 and changed > 0
    others = ["random"] * (num_players - 1)
    results = play([agent, *others], game, num_players, games=2, seed=0, progress=False)
    assert results.games == 2 and np.isfinite(results.score).all()


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_search_is_reproducible_with_its_seed(game):
    agent = load(f"search:pretrained:{game}-2p", game=game, **SMALL)
    _, obs, masks = decisions(game, 3, 31)
    runs = []
    for _ in range(2):
        agent.reset(seed=11)
        runs.append(agent.act_batch(obs, masks))
    np.testing.assert_array_equal(*runs)


def test_phases_left_out_follow_the_policy():
    searched = load("search:pretrained:cards-2p", game="cards", samples=4, top_k=4,
                    confidence=0, phases="entry")
    policy = load("pretrained:cards-2p", game="cards")
    plays = entries = 0
    for steps in range(10, 40, 3):
        engine, obs, masks = decisions("cards", steps, steps)
        if len(obs):
            searched.reset(seed=steps)
            chose = searched.act_batch(obs, masks)
            same = chose == policy.act_batch(obs, masks)
            if engine.phase == card_spec.PLAY:
                assert same.all()
                plays += len(obs)
            else:
                entries += len(obs) - same.sum()
    assert plays > 20 and entries > 0  # the entries were searched (some choices differ)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_min_prob_keeps_only_likely_candidates(game):
    """With ``min_prob`` the agent plays the favourite or an action the policy gives at
    least that probability; searching still changes some choices; ``min_prob=1`` leaves
    only the favourite, so it plays the policy."""
    policy = load(f"pretrained:{game}-2p", game=game)
    pruned = load(f"search:pretrained:{game}-2p", game=game, samples=4, top_k=4, turns=1,
                  confidence=0, min_prob=0.1)
    never = load(f"search:pretrained:{game}-2p", game=game, **{**SMALL, "min_prob": 1})
    changed = 0
    for steps in range(0, 40, 3):
        _, obs, masks = decisions(game, 50 + steps, steps)
        if not len(obs):
            continue
        with torch.no_grad():
            logits = policy.network(torch.as_tensor(obs))[0]
        probs = torch.softmax(logits.masked_fill(torch.as_tensor(masks) == 0, -torch.inf),
                              1).numpy()
        favourite = policy.act_batch(obs, masks)
        pruned.reset(seed=steps)
        chose = pruned.act_batch(obs, masks)
        rows = np.arange(len(obs))
        assert ((chose == favourite) | (probs[rows, chose] >= 0.1)).all()
        changed += (chose != favourite).sum()
        np.testing.assert_array_equal(never.act_batch(obs, masks), favourite)
    assert changed > 0


def test_search_batch_reports_the_gain_of_every_candidate():
    """search_batch: the actions act_batch plays, the masked logits, and a gain and its
    error for the top_k legal actions of each searched decision (gain 0 for the favourite,
    the played one the best with confidence 0), NaN for every other action."""
    agent = load("search:pretrained:dice-2p", **SMALL, confidence=0)
    _, obs, masks = decisions("dice", 3, 31)
    agent.reset(seed=4)
    actions, logits, gains, errors = agent.search_batch(obs, masks)
    agent.reset(seed=4)
    np.testing.assert_array_equal(agent.act_batch(obs, masks), actions)
    assert np.isneginf(logits[masks == 0]).all() and np.isfinite(logits[masks > 0]).all()
    known = np.isfinite(gains)
    searched = known.any(1)
    assert searched.sum() == (masks.sum(1) > 1).sum() > 5
    top = np.argsort(-logits, 1, kind="stable")[:, :SMALL["top_k"]]
    assert (known == np.isin(np.arange(masks.shape[1])[None], top) & (masks > 0)
            & searched[:, None]).all()
    assert (np.isfinite(errors) == known).all() and (errors[known] >= 0).all()
    favourite = logits.argmax(1)
    assert (gains[searched, favourite[searched]] == 0).all()
    np.testing.assert_array_equal(gains[searched, actions[searched]],
                                  np.nanmax(gains[searched], 1))


def test_rounds_sample_again_only_while_a_candidate_leads_without_confidence():
    """A decision gets another round of copies while a candidate leads the favourite by
    less than ``confidence`` standard errors; one already beaten, or already beating it
    by that much, is done; the gains pool every round's copies."""
    agent = load("search:pretrained:dice-2p", samples=8, top_k=2, confidence=2,
                 min_prob=0, rounds=4)
    M = agent.samples
    noisy = np.where(np.arange(M) % 2 == 0, 1.0, -0.5)  # mean 0.25, about 0.8 error
    table = {0: (np.zeros(M), np.ones(M)),         # the challenger wins every copy
             1: (np.zeros(M), -np.ones(M)),        # the challenger loses every copy
             2: (np.zeros(M), noisy)}              # leads, but not by 2 errors
    calls = []

    def simulate(obs, candidates, phase):
        rows = obs[:, 0].astype(int)
        calls.append(list(rows))
        return np.stack([np.stack(table[r]) for r in rows])

    agent._simulate_positions = simulate
    obs = np.zeros((3, 5), dtype=np.float32)
    obs[:, 0] = [0, 1, 2]
    logits = np.array([[2.0, 1.0, -np.inf]] * 3)
    candidates, gain, error = agent.candidate_gains(obs, logits, phase=0)
    assert calls == [[0, 1, 2], [2], [2], [2]]
    np.testing.assert_array_equal(candidates, [[0, 1]] * 3)
    np.testing.assert_allclose(gain[:, 1], [1, -1, 0.25])
    pooled = np.tile(noisy, 4)
    np.testing.assert_allclose(error[2, 1], pooled.std(ddof=1) / np.sqrt(4 * M))
    np.testing.assert_array_equal(agent._choose(candidates, gain, error), [1, 0, 0])


def test_rounds_play_real_games():
    """With rounds, the real search still plays legal actions, and later rounds simulate
    only some of the decisions."""
    agent = load("search:pretrained:dice-2p", samples=4, top_k=3, turns=1, min_prob=0,
                 confidence=2, rounds=3)
    sizes, simulate = [], agent._simulate_positions

    def spy(obs, candidates, phase):
        sizes.append(len(obs))
        return simulate(obs, candidates, phase)

    agent._simulate_positions = spy
    agent.reset(seed=2)
    _, obs, masks = decisions("dice", 3, 31)
    actions = agent.act_batch(obs, masks)
    assert masks[np.arange(len(obs)), actions].all()
    assert len(sizes) > 1 and max(sizes[1:]) < sizes[0]


def zero_value(agent: SearchAgent) -> SearchAgent:
    """The agent with a value head that always says 0: a leaf is worth its score now."""
    with torch.no_grad():
        agent.network.value_head.weight.zero_()
        agent.network.value_head.bias.zero_()
    return agent


@pytest.mark.parametrize("objective", ["score", "margin"])
def test_gains_over_one_entry_are_the_rules_score_changes(objective):
    """Searching one entry (turns=1) with a zero value head is deterministic: each
    candidate's gain is exactly the score it adds by the rules (margin: the other seat
    plays the same entry whatever I write), with no error, and the agent plays the best."""
    agent = zero_value(load("search:pretrained:dice-2p", samples=3, top_k=5, turns=1,
                            min_prob=0, objective=objective))
    agent.reset(seed=0)
    engine, obs, masks = BatchedDiceGame(64, 2, seed=1), None, None
    while not (engine.phase == ENTRY and int(engine.turn.min()) > 6):
        engine.step(uniform_legal(engine.backend, engine.legal_bits(), engine.gen, 37))
    obs, masks = engine.observations()[:, 0], engine.action_masks()[:, 0]
    real = masks.sum(1) > 2
    obs, masks = obs[real], masks[real]
    logits = agent.network(torch.as_tensor(obs))[0].detach().numpy()
    logits = np.where(masks > 0, logits, -np.inf)
    candidates, gain, error = agent.candidate_gains(obs, logits, ENTRY)
    view = decode_batch(obs)
    checked = 0
    for r in range(len(obs)):
        cells, misthrows = view.cells[r, 0], int(view.misthrows[r, 0])
        active = view.active[r] == 0

        def score_after(action: int) -> int:
            if action == rules.NUM_CELLS:  # pass: a misthrow for the active seat
                return rules.cells_score(list(cells), misthrows + active)
            after = cells.copy()
            after[action] = view.value[r]
            return rules.cells_score(list(after), misthrows)

        base = score_after(int(candidates[r, 0]))
        for k, action in enumerate(candidates[r]):
            if np.isfinite(gain[r, k]):
                assert gain[r, k] == pytest.approx(score_after(int(action)) - base)
                assert error[r, k] == 0
                checked += 1
        best = candidates[r][np.argmax(np.where(gain[r] > 0, gain[r], 0))]
        assert agent.act(obs[r], masks[r]) == best or gain[r].max() <= 0
    assert checked > 20


@pytest.mark.parametrize("objective,expected", [
    ("score", [30, 30, 30, 30]), ("margin", [-5, 0, 2, 30]), ("win", [0, 0.5, 1, 1])])
def test_objectives_measure_against_the_best_other_seat(tmp_path, objective, expected):
    """With three or more seats the margin is over the best other seat, not the next;
    alone, every objective is the score."""
    four, solo = tmp_path / "four.pt", tmp_path / "solo.pt"
    small_checkpoint(four, num_players=4)
    small_checkpoint(solo, num_players=1)
    agent = load(f"search:{four}", num_players=4, objective=objective)
    scores = np.array([[30, 10, 35, 20], [30, 20, 30, 30], [30, 20, 25, 28], [30, 0, 0, 0]])
    np.testing.assert_array_equal(agent._objective(scores, None), expected)
    alone = load(f"search:{solo}", num_players=1, objective=objective)
    np.testing.assert_array_equal(alone._objective(scores[:, :1], None), [30] * 4)


def play_position(seed: int, num_players: int = 2):
    """A card engine at a play where seat 0 is active with several plays."""
    for s in range(seed, seed + 200):
        engine = BatchedCardGame(1, num_players, seed=s)
        for _ in range(num_players * int(np.random.default_rng(s).integers(3, 12))):
            engine.step(uniform_legal(engine.backend, engine.legal_bits(), engine.gen, 88))
        if engine.phase == card_spec.PLAY and engine.active[0] == 0 \
                and engine.action_masks()[0, 0].sum() > 3 and engine.hands[0, 1:].min() < 32:
            return engine
    raise AssertionError("no such position")


def rearranged(engine: BatchedCardGame, rng: np.random.Generator) -> BatchedCardGame:
    """The same position with the other seats' hands and the pile dealt again from the
    same cards: nothing seat 0 sees has changed."""
    hands, tops = engine.hands[0], engine.tops[0]
    pos, end = int(engine.pile_pos[0]), int(engine.pile_end[0])
    others = hands[1:]
    hidden = rng.permutation(np.r_[others[others < 32], engine.pile[0, pos:end]])
    dealt = np.full(hands.shape, -1)
    dealt[0] = np.where(hands[0] == 32, -1, hands[0])
    start = 0
    for seat, size in enumerate((others < 32).sum(1), 1):
        dealt[seat, :size] = hidden[start:start + size]
        start += size
    pile = np.full(32, -1)
    pile[:len(hidden) - start] = hidden[start:]
    out = BatchedCardGame(1, len(hands), seed=99)
    sheet = engine.sheet_state
    out.set_positions(sheet.cells[:, :, :27], sheet.misthrows, engine.active,
                      engine.phase, dealt[None], tops[None], engine.covered, pile[None])
    return out


def assert_blind(agent: SearchAgent, rng: np.random.Generator, positions: int = 3) -> None:
    """The agent decides each of ``positions`` plays the same whatever the hidden cards
    (with the same seed)."""
    for seed in range(0, 20 * positions, 20):
        engine = play_position(seed, agent.num_players)
        other = rearranged(engine, rng)
        assert not np.array_equal(other.hands[0, 1:], engine.hands[0, 1:]) \
            or not np.array_equal(other.pile[0, :5], engine.pile[0, int(engine.pile_pos[0]):][:5])
        np.testing.assert_array_equal(other.observations()[0, 0], engine.observations()[0, 0])
        decided = []
        for game in (engine, other):
            agent.reset(seed=seed)
            decided.append(agent.act(game.observations()[0, 0], game.action_masks()[0, 0]))
        assert decided[0] == decided[1]


@pytest.mark.parametrize("settings", [{}, {"rounds": 3, "confidence": 50}])
def test_card_search_cannot_see_other_hands_or_the_pile_order(settings):
    """The same decision whatever the other hand and the pile order, also when some
    decisions are sampled again (``rounds``; the high ``confidence`` keeps them open)."""
    agent = load("search:pretrained:cards-2p", game="cards", samples=8, top_k=4, turns=2,
                 **settings)
    searches, simulate = [], agent._simulate_positions
    agent._simulate_positions = lambda *a: searches.append(1) or simulate(*a)
    assert_blind(agent, np.random.default_rng(0))
    assert len(searches) > 6 if settings else len(searches) == 6  # 3 decisions, twice each


@pytest.mark.parametrize("num_players", [3, 4])
def test_card_search_cannot_see_any_other_hand(tmp_path, num_players):
    """As above with several other hands. Played to the end on few samples, the decisions
    hang on the deals: one dealt as the real cards moves 2 (3 players) and 3 (4 players)
    of these 5."""
    path = tmp_path / "net.pt"
    small_checkpoint(path, "cards", num_players, features="sheet", seed=num_players)
    agent = load(f"search[samples=4,turns=0,confidence=0]:{path}", game="cards",
                 num_players=num_players)
    assert_blind(agent, np.random.default_rng(num_players), positions=5)


def test_hidden_cards_are_dealt_from_the_unseen_ones_uniformly():
    engine = play_position(3)
    obs = engine.observations()[:, 0]
    hands, piles = deal_hidden(obs, 4000, np.random.default_rng(0))
    view = decode_batch(obs, "cards")
    seen = set(view.hand[0][view.hand[0] >= 0]) | set(view.tops[0]) \
        | set(np.flatnonzero(engine.covered[0]))
    unseen = sorted(set(range(32)) - seen)
    size = int((engine.hands[0, 1] < 32).sum())
    counts = np.zeros(32)
    for hand, pile in zip(hands, piles):
        assert sorted(hand[0][hand[0] >= 0]) == sorted(view.hand[0][view.hand[0] >= 0])
        dealt = np.r_[hand[1][hand[1] >= 0], pile[pile >= 0]]
        assert sorted(dealt) == unseen and (hand[1] >= 0).sum() == size
        counts[hand[1][hand[1] >= 0]] += 1
    share = counts[unseen] / len(hands)
    expected = size / len(unseen)  # every unseen card equally likely in the other hand
    assert np.abs(share - expected).max() < 0.04
    assert counts[list(seen)].sum() == 0


@pytest.mark.parametrize("num_players", [3, 4])
def test_hidden_cards_fill_every_other_hand_and_the_pile(num_players):
    """With several other seats, every deal gives each its hand's size and the pile its
    length, from the unseen cards, each exactly once."""
    engine = BatchedCardGame(8, num_players, seed=num_players)
    for _ in range(5 * num_players):
        engine.step(uniform_legal(engine.backend, engine.legal_bits(), engine.gen, 88))
    obs, samples = engine.observations()[:, 0], 20
    hands, piles = deal_hidden(obs, samples, np.random.default_rng(1))
    view = decode_batch(obs, "cards")
    for r in range(len(obs)):
        own = view.hand[r][view.hand[r] >= 0]
        seen = set(own) | set(view.tops[r]) | set(np.flatnonzero(engine.covered[r]))
        sizes = (engine.hands[r] < card_spec.DECK_SIZE).sum(1)
        pile_size = int(engine.pile_end[r] - engine.pile_pos[r])
        for hand, pile in zip(hands[r * samples:(r + 1) * samples],
                              piles[r * samples:(r + 1) * samples]):
            assert sorted(hand[0][hand[0] >= 0]) == sorted(own)
            np.testing.assert_array_equal((hand >= 0).sum(1)[1:], sizes[1:])
            assert (pile >= 0).sum() == pile_size
            dealt = np.r_[hand[1:][hand[1:] >= 0], pile[pile >= 0]]
            assert sorted(dealt) == sorted(set(range(card_spec.DECK_SIZE)) - seen)


@pytest.mark.parametrize("kwargs,message", [
    ({"samples": 0}, "samples must be an integer >= 1"),
    ({"top_k": 1.5}, "top_k must be an integer >= 1"),
    ({"turns": -1}, "turns must be an integer >= 0"),
    ({"confidence": float("nan")}, "confidence must be a finite number >= 0"),
    ({"objective": "points"}, "objective must be one of"),
    ({"min_prob": -0.1}, "min_prob must be a finite number >= 0"),
    ({"min_prob": 1.5}, "min_prob must be a probability <= 1"),
    ({"rounds": 0}, "rounds must be an integer from 1 to 64"),
    ({"rounds": 2.5}, "rounds must be an integer from 1 to 64"),
    ({"rounds": 65}, "rounds must be an integer from 1 to 64, got 65"),
    ({"preset": "fast"}, "unknown search preset 'fast'"),
    ({"preset": ["person"]}, r"unknown search preset \['person'\]"),
    ({"depth": 3}, r"unknown search settings \['depth'\]"),
    ({"phases": "play"}, "phases must be 'all' or phase names of the dice game"),
    ({"phases": ""}, "phases must be 'all'"),
    ({"reward_scale": 0}, "reward_scale must be a finite number > 0"),
    ({"samples": 9_999_999_999}, "simulate 39999999996 games per decision; at most 65536"),
    ({"samples": MAX_COPIES // 2, "top_k": 3}, "top_k=3 simulate 98304 games"),
])
def test_bad_settings_name_the_setting(kwargs, message):
    with pytest.raises(AgentSpecError, match=message):
        load("search:pretrained:dice-2p", **kwargs)


def test_copies_count_only_candidates_the_game_has():
    actions = SPECS["dice"].num_actions
    agent = load("search:pretrained:dice-2p", samples=MAX_COPIES // actions, top_k=10 ** 6)
    assert agent.samples * actions <= MAX_COPIES
    with pytest.raises(AgentSpecError, match="per decision"):
        load("search:pretrained:dice-2p", samples=MAX_COPIES // actions + 1, top_k=10 ** 6)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_a_large_batch_is_simulated_in_parts(monkeypatch, game):
    """act_batch holds at most MAX_BATCH_COPIES simulated games in one engine (a batch
    of 1,024 decisions at samples * top_k = MAX_COPIES wanted 67 million at once, and
    died in the allocator), and still plays legal actions."""
    monkeypatch.setattr("agents.search.MAX_BATCH_COPIES", 50, raising=False)
    agent = load(f"search:pretrained:{game}-2p", game=game, **SMALL)  # 12 copies a row
    sizes, engine = [], agent._engine
    agent._engine = lambda n, *a, **k: sizes.append(n) or engine(n, *a, **k)
    _, obs, masks = decisions(game, 3, 31)
    agent.reset(seed=0)
    actions = agent.act_batch(obs, masks)
    assert masks[np.arange(len(obs)), actions].all()
    assert sum(sizes) >= 12 * 10 and max(sizes) <= 50


def test_the_evaluators_batches_of_every_preset_fit_one_engine():
    """The recorded matches were played with one engine per batch: the parts leave them
    as they were."""
    for game, presets in PRESETS.items():
        for preset in presets:
            agent = load(f"search[{preset}]:pretrained:{game}-2p", game=game)
            assert agent.samples * agent.top_k * BATCH_GAMES <= MAX_BATCH_COPIES


def test_a_top_k_past_the_games_actions_takes_them_all(capsys):
    """A top_k of more candidates than the game has actions plays (it died at the first
    decision for one past 2**63: numpy's int64 could not hold it), as the whole set."""
    top_k = 10 ** 30
    evaluate_main(["--game", "dice", "--agents", f"search[samples=2,top_k={top_k},turns=1]:"
                   "pretrained:dice-2p,pretrained:dice-2p", "--games", "2", "--quiet"])
    assert f"| search[samples=2,top_k={top_k},turns=1]:pretrained:dice-2p |" \
        in capsys.readouterr().out
    agent = load("search:pretrained:dice-2p", top_k=top_k)
    assert agent.settings()["top_k"] == SPECS["dice"].num_actions


def test_settings_in_the_spec():
    agent = load("search[person,samples=8,phases=play+entry]:pretrained:cards-2p",
                 game="cards")
    assert agent.settings() == {**DEFAULTS, **PRESETS["cards"]["person"], "samples": 8,
                                "phases": "play+entry"}
    assert agent.phases == (0, 1)
    assert agent.name == "search[person,samples=8,phases=play+entry]:pretrained:cards-2p"
    with pytest.raises(AgentSpecError, match="given both in the spec and as keyword"):
        load("search[samples=8]:pretrained:dice-2p", samples=4)
    with pytest.raises(AgentSpecError, match="settings go in brackets"):
        load("search[samples=8:pretrained:dice-2p")
    with pytest.raises(AgentSpecError, match=r"'entry' is a phase: join phases with '\+'"):
        load("search[phases=play,entry]:pretrained:cards-2p", game="cards")
    with pytest.raises(AgentSpecError, match="search plays a checkpoint"):
        load("search:expert")
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        load("search:missing.pt")


def test_the_evaluator_plays_it_from_the_command_line(capsys):
    evaluate_main(["--game", "cards", "--players", "2", "--agents",
                          "search[samples=2,top_k=2,turns=1]:pretrained:cards-2p,"
                          "pretrained:cards-2p", "--games", "4", "--quiet"])
    out = capsys.readouterr().out
    assert "| search[samples=2,top_k=2,turns=1]:pretrained:cards-2p |" in out


def test_a_stray_bracket_is_named_on_the_command_line(capsys):
    """A stray ']' in --agents keeps the comma after it: the error names the setting, not
    a checkpoint made of the next agent's spec."""
    with pytest.raises(SystemExit) as exit_:
        evaluate_main(["--agents", "search[samples=2]]:pretrained:dice-2p,pretrained:dice-2p",
                       "--games", "2", "--quiet"])
    assert exit_.value.code == 2
    assert "search setting samples must be an integer >= 1, got '2]'" \
        in capsys.readouterr().err


def test_a_bad_setting_names_the_agent_it_belongs_to(capsys):
    """Of two search agents on one command line, the error says which has the bad
    setting (it named the setting alone)."""
    agents = "search[samples=2]:pretrained:dice-2p,search[samples=0]:pretrained:dice-2p-v2"
    with pytest.raises(SystemExit) as exit_:
        evaluate_main(["--agents", agents, "--games", "2", "--quiet"])
    assert exit_.value.code == 2
    assert "'search[samples=0]:pretrained:dice-2p-v2': search setting samples must be an " \
           "integer >= 1, got 0" in capsys.readouterr().err
