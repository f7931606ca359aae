"""The frozen rating ladders: the fits recover known strengths within their intervals, the
intervals cover as often as they say, and the shipped ladder file holds every pool.

Synthetic tournaments: each entrant's score in a game is its strength (natural-log scale)
plus standard Gumbel noise, so every pair's win probability is exactly Bradley-Terry's
(the difference of two Gumbels is logistic) and the outcomes of one game of more than two
players hang together as in a real game.
"""

import math

import numpy as np
import pytest

from agents.benchmark.ladder import (ANCHOR, ANCHOR_RATING, ELO, LADDERS, Ladder, Rating,
                                     fit_ladder, fit_pool, get_ladder)
from agents.evaluate import Results, play

TRUE = {"random": 700.0, "greedy": 1200.0, "expert": 1500.0, "net": 1600.0, "new": 1350.0}
POOL_2P = ("random", "greedy", "expert", "net")
POOL_4P = ("random", "greedy", "expert")


def simulate(seats, games, rng, strengths=TRUE):
    """A tournament of ``seats`` (names of ``strengths``; a repeated name is numbered as
    the evaluator numbers it) with Gumbel-noise scores."""
    names = [s if seats[:i].count(s) == 0 else f"{s}#{seats[:i].count(s) + 1}"
             for i, s in enumerate(seats)]
    beta = ELO * np.array([strengths[s] for s in seats])
    score = beta + rng.gumbel(size=(games, len(seats)))
    zeros = np.zeros(score.shape, dtype=np.int64)
    return Results(names, "dice", len(seats), 0, score=score, misthrows=zeros,
                   full_rows=zeros, pentagon_columns=zeros, seat=zeros)


def frozen(pool, players):
    """A synthetic ladder whose pool ratings are the true strengths."""
    return Ladder("synthetic", "dice", players, pool,
                  {m: Rating(TRUE[m], TRUE[m], TRUE[m], 0) for m in pool})


def pool_fit(pool, players, games, rng, bootstrap=200):
    tables = frozen(pool, players).tables()
    results = [simulate(t, games, rng) for t in tables]
    return fit_pool(pool, results, bootstrap=bootstrap, seed=int(rng.integers(1 << 30)))[0]


@pytest.mark.parametrize("pool, players", [(POOL_2P, 2), (POOL_4P, 4)])
def test_pool_fit_recovers_known_strengths(pool, players):
    ratings = pool_fit(pool, players, 2000, np.random.default_rng(1))
    assert ratings[ANCHOR] == Rating(ANCHOR_RATING, ANCHOR_RATING, ANCHOR_RATING,
                                     ratings[ANCHOR].games)
    for member in pool:
        r = ratings[member]
        assert r.low <= TRUE[member] <= r.high, (member, r)
        assert r.high - r.low < 150, (member, r)  # 2,000 games a table pin it down


@pytest.mark.parametrize("pool, players", [(POOL_2P, 2), (POOL_4P, 4)])
def test_pool_intervals_cover_about_95_percent(pool, players):
    rng = np.random.default_rng(2)
    hits = [r.low <= TRUE[m] <= r.high for _ in range(40)
            for m, r in pool_fit(pool, players, 400, rng).items() if m != ANCHOR]
    assert 0.87 <= np.mean(hits) <= 1.0, np.mean(hits)


def rate_new(players, games, rng, strength=TRUE["new"]):
    """Rate an entrant of known ``strength`` with the benchmark's protocol: one table
    against each reference (2 players) or one table with the whole pool (4 players)."""
    strengths = {**TRUE, "new": strength}
    if players == 2:
        results = [simulate(["new", ref], games, rng, strengths) for ref in POOL_2P]
        return frozen(POOL_2P, 2).rate("new", results)
    return frozen(POOL_4P, 4).rate("new", [simulate(["new", *POOL_4P], games, rng, strengths)])


@pytest.mark.parametrize("players", [2, 4])
def test_new_agent_lands_within_its_interval(players):
    r = rate_new(players, 2000, np.random.default_rng(3))
    assert r.low <= TRUE["new"] <= r.high and r.low < r.rating < r.high
    assert r.games == (4 * 2000 if players == 2 else 2000)
    assert r.high - r.low < 60


@pytest.mark.parametrize("players", [2, 4])
def test_new_agent_intervals_cover_about_95_percent(players):
    rng = np.random.default_rng(4)
    strengths = rng.uniform(800, 1800, size=100)
    rated = [rate_new(players, 200, rng, s) for s in strengths]
    hits = [r.low <= s <= r.high for r, s in zip(rated, strengths)]
    assert 0.90 <= np.mean(hits) <= 0.99, np.mean(hits)


def test_an_agent_that_always_wins_has_an_open_interval():
    rng = np.random.default_rng(5)
    r = rate_new(2, 100, rng, strength=4000)
    assert r.rating == r.high == math.inf
    assert TRUE["net"] < r.low < math.inf  # 400 straight wins: well above the best member
    r = rate_new(2, 100, rng, strength=-3000)
    assert r.rating == r.low == -math.inf and -math.inf < r.high < TRUE["random"]


def test_duplicates_and_pool_members_as_entrants():
    """The rated entrant may be a pool member's own spec: ``expert`` rated against a pool
    that holds ``expert`` (the evaluator numbers the second one ``expert#2``)."""
    rng = np.random.default_rng(6)
    results = [simulate(["expert", *POOL_4P], 2000, rng)]
    assert results[0].entrants == ["expert", "random", "greedy", "expert#2"]
    r = frozen(POOL_4P, 4).rate("expert", results)
    assert r.low <= TRUE["expert"] <= r.high


BAD_RATE = [
    (lambda rng: [], "non-empty list"),
    (lambda rng: simulate(["new", "random"], 5, rng), "non-empty list"),
    (lambda rng: [simulate(["greedy", "random"], 5, rng)], "rated entrant 'new' must be"),
    (lambda rng: [simulate(["new", "new"], 5, rng)], "'new#2' is not in the pool"),
    (lambda rng: [simulate(["new", "stranger"], 5, rng, {**TRUE, "stranger": 0})],
     "'stranger' is not in the pool"),
    (lambda rng: [simulate(["new", "random", "greedy"], 5, rng)], "3-player dice"),
]


@pytest.mark.parametrize("make, message", BAD_RATE)
def test_bad_results_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        frozen(POOL_2P, 2).rate("new", make(np.random.default_rng(0)))


def test_unknown_and_unfitted_ladders(tmp_path):
    with pytest.raises(KeyError, match="unknown ladder 'chess'.*dice-2p"):
        get_ladder("chess")
    empty = get_ladder("dice-2p", path=tmp_path / "none.json")
    assert empty.ratings == {}
    with pytest.raises(ValueError, match="fit_ladder.py --ladder dice-2p"):
        empty.rate("new", [simulate(["new", "random"], 5, np.random.default_rng(0))])


def test_tables_of_each_ladder():
    assert len(get_ladder("dice-2p").tables()) == 6
    assert get_ladder("dice-4p").tables() == [
        ("random", "greedy", "expert", extra) for extra in ("random", "greedy", "expert")]


@pytest.mark.parametrize("name", list(LADDERS))
def test_the_shipped_ladder_file_holds_every_pool(name):
    ladder = get_ladder(name)
    assert set(ladder.ratings) == set(LADDERS[name][2])
    assert ladder.ratings[ANCHOR].rating == ANCHOR_RATING
    for member, r in ladder.ratings.items():
        assert r.low <= r.rating <= r.high and r.games >= 10_000, (member, r)
    fit = ladder.fit
    assert fit["games_per_table"] >= 10_000 and fit["date"] and fit["code"]["commit"]
    assert fit["tables"] == [list(t) for t in ladder.tables()]
    assert {m for pair in fit["pairs"] for m in pair["pair"]} == set(ladder.pool)


def test_the_protocol_path_on_the_shipped_ladder():
    """What the benchmark runs: a few games of an agent against each reference, rated."""
    ladder = get_ladder("dice-2p")
    results = [play(["greedy", ref], game="dice", games=20, seed=0, progress=False)
               for ref in ("random", "greedy", "expert")]
    r = ladder.rate("greedy", results)
    assert r.low < ladder.ratings["greedy"].rating < r.high and r.games == 60


def test_save_fit_keeps_the_other_ladders(tmp_path):
    from agents.benchmark.ladder import save_fit

    path = tmp_path / "ladder.json"
    for name in ("dice-2p", "cards-2p"):
        base = get_ladder(name)
        save_fit(Ladder(name, base.game, base.num_players, base.pool,
                        {m: Rating(1500.0, 1490.0, 1510.0, 7) for m in base.pool},
                        {"seed": 1}), path)
    assert get_ladder("dice-2p", path).ratings["random"] == Rating(1500.0, 1490.0, 1510.0, 7)
    assert get_ladder("cards-2p", path).fit["seed"] == 1
    assert get_ladder("dice-4p", path).ratings == {}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LADDERS))
def test_a_fresh_round_robin_matches_the_frozen_ratings(name, capsys):
    """The done criterion: another seed's 10,000-game round robin rates every member as
    the frozen fit does, within the two fits' intervals combined."""
    ladder = get_ladder(name)
    fresh = fit_ladder(name, 10_000, seed=ladder.fit["seed"] + 1, bootstrap=500,
                       progress=False)
    with capsys.disabled():
        for member, old in ladder.ratings.items():
            new = fresh.ratings[member]
            print(f"\n{name} {member}: frozen {old.rating:.1f} [{old.low:.1f}, {old.high:.1f}]"
                  f" fresh {new.rating:.1f} [{new.low:.1f}, {new.high:.1f}]")
    for member, old in ladder.ratings.items():
        new = fresh.ratings[member]
        half = math.hypot((old.high - old.low) / 2, (new.high - new.low) / 2)
        assert abs(new.rating - old.rating) <= half, (member, old, new)
