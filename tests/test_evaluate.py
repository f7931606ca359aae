"""The tournament evaluator: reproducibility, seat rotation, statistics, outputs."""

import csv
import json
import math
import re
import warnings

import numpy as np
import pytest

from agents.evaluate import (EvaluationError, Results, bradley_terry, format_table, main,
                             pairwise_wins, play, ranks, round_robin, seating, summarise,
                             win_shares)
from agents.scripted import GreedyAgent, RandomAgent
from qwinto_env.view import decode


def strip_time(summary):
    return {k: v for k, v in summary.items() if k not in ("seconds", "games_per_second")}


def test_same_seed_same_table():
    a = play(["expert", "random"], games=12, seed=7, progress=False)
    b = play(["expert", "random"], games=12, seed=7, progress=False)
    assert (a.score == b.score).all() and (a.misthrows == b.misthrows).all()
    assert strip_time(a.summary) == strip_time(b.summary)
    assert format_table(a.summary).split("\n")[:4] == format_table(b.summary).split("\n")[:4]
    c = play(["expert", "random"], games=12, seed=8, progress=False)
    assert not (a.score == c.score).all()


def test_workers_do_not_change_results():
    kw = dict(num_players=3, games=9, seed=1, engine="single", progress=False)
    one = play(["greedy", "random", "random"], **kw)
    two = play(["greedy", "random", "random"], workers=2, **kw)
    assert (one.score == two.score).all()
    assert strip_time(one.summary) == strip_time(two.summary)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_batched_workers_do_not_change_results(game, monkeypatch):
    """Batches shared out over processes give the games one process plays."""
    import agents.evaluate as evaluate

    monkeypatch.setattr(evaluate, "BATCH_GAMES", 4)  # 11 games: batches of 4, 4 and 3
    kw = dict(game=game, games=11, seed=2, engine="batched", progress=False)
    one = play(["expert", "random"], **kw)
    two = play(["expert", "random"], workers=2, **kw)
    assert (one.score == two.score).all() and (one.full_rows == two.full_rows).all()
    assert (one.score != 0).all()


def test_fewer_batches_than_workers_is_said(monkeypatch):
    """A match smaller than a batch plays in one process: the caller is told, not left
    to wonder why the second worker idles, and still gets the games."""
    import agents.evaluate as evaluate

    monkeypatch.setattr(evaluate, "BATCH_GAMES", 4)
    with pytest.warns(UserWarning, match=r"3 games are 1 batch.*1 of the 2 workers"):
        few = play(["expert", "random"], games=3, seed=2, workers=2, engine="batched",
                   progress=False)
    assert (few.score != 0).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        play(["expert", "random"], games=8, seed=2, workers=2, engine="batched",
             progress=False)


def test_the_command_says_a_warning_in_one_line(monkeypatch, capsys):
    """On the command line a warning reads like the command's errors, without Python's
    file, line and source; a caller in Python keeps its own warning format."""
    import agents.evaluate as evaluate

    monkeypatch.setattr(evaluate, "BATCH_GAMES", 4)
    before = warnings.showwarning
    main(["--agents", "expert,random", "--games", "3", "--workers", "2", "--engine",
          "batched", "--quiet"], prog="qwinto-evaluate")
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "warning" in line] == [
        "qwinto-evaluate: warning: 3 games are 1 batch(es) of the batched engine (4 games "
        "each), so 1 of the 2 workers play (the single engine shares out single games)"]
    assert warnings.showwarning is before


class CountingAgent(RandomAgent):
    """Random play that counts the decisions it is asked, one at a time or in batches."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.asked = 0

    def act(self, observation, action_mask):
        self.asked += 1
        return super().act(observation, action_mask)

    def act_batch(self, observations, masks):
        self.asked += len(observations)
        return super().act_batch(observations, masks)


@pytest.mark.parametrize("engine", ["single", "batched"])
def test_the_game_loops_report_decisions_before_the_games_end(engine):
    """Games side by side all finish near the end, so the loops report the decisions
    made as they go: every one the agents were asked, most before the first game ends."""
    from agents.evaluate import BATCHED_RUNNERS, _play_games

    agents_ = [CountingAgent(), CountingAgent()]
    games, calls = 6, []
    seat_of = seating(games, 2)
    seeds = np.arange(games * 2).reshape(games, 2)
    if engine == "batched":
        BATCHED_RUNNERS["dice"](agents_, 2, seat_of, 3, seeds,
                                lambda g, d: calls.append((g, d)))
    else:
        _play_games(agents_, "dice", 2, range(games), seat_of, seeds[:, 0], seeds,
                    lambda g, d: calls.append((g, d)))
    finished, decided = np.array(calls).T
    assert finished.sum() == games
    assert decided.sum() == sum(a.asked for a in agents_) > 10 * games
    if engine == "batched":
        before_first_end = decided[:np.flatnonzero(finished)[0]].sum()
        assert before_first_end > decided.sum() / 2


def test_the_progress_bar_shows_the_decisions_made(capsys):
    """The user's bar (the evaluator's stderr) shows the games and the decisions made so
    far, the same count from one process as from worker processes."""
    shown = []
    for workers in (1, 2):
        play(["random", "greedy"], games=4, seed=5, engine="single", workers=workers)
        final = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
        assert "4/4" in final and final.endswith(" decisions]"), final
        shown.append(int(final.split(", ")[-1].split()[0].replace(",", "")))
    assert shown[0] == shown[1] > 40


class StartSpy(RandomAgent):
    """Random play; records, per game, whether it made the game's very first decision."""

    supports_batch = False  # one decision at a time, on the single-game engine

    def __init__(self, **kw):
        super().__init__(**kw)
        self.started = []

    def reset(self, seed=None):
        super().reset(seed)
        self.started.append(None)

    def act(self, observation, action_mask):
        if self.started[-1] is None:
            view = decode(observation)
            self.started[-1] = bool(view.active == 0 and view.cells.sum() == 0
                                    and view.misthrows.sum() == 0)
        return super().act(observation, action_mask)


@pytest.mark.parametrize("players", [2, 4])
def test_seats_rotate(players):
    spies = [StartSpy(num_players=players) for _ in range(players)]
    res = play(spies, num_players=players, games=8 * players, seed=0, progress=False)
    assert (res.seat == seating(res.games, players)).all()
    for e in range(players):
        # seat 0 moves first: entrant e starts exactly in the games where it sits there
        assert spies[e].started == [bool(s == 0) for s in res.seat[:, e]]
        assert np.bincount(res.seat[:, e], minlength=players).tolist() == [8] * players


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_seating_balances_seats_and_neighbours(players):
    n_orders = math.factorial(players - 1)
    seat = seating(players * n_orders * 2, players)
    for g in range(len(seat)):
        assert sorted(seat[g]) == list(range(players))  # a permutation every game
    for e in range(players):
        counts = np.bincount(seat[:, e], minlength=players)
        assert (counts == counts[0]).all()
    # who plays right after whom: every ordered pair equally often
    follows = np.zeros((players, players), dtype=int)
    for g in range(len(seat)):
        entrant_at = np.argsort(seat[g])
        for s in range(players):
            follows[entrant_at[s], entrant_at[(s + 1) % players]] += 1
    off = follows[~np.eye(players, dtype=bool)]
    assert (off == off[0]).all() and np.diag(follows).sum() == 0
    if players == 2:
        assert seat[:, 0].tolist() == [g % 2 for g in range(len(seat))]


def hand_results():
    score = np.array([[10, 5, 5], [3, 3, 3], [0, 7, 2], [8, 8, 1]])
    zeros = np.zeros_like(score)
    return Results(["A", "B", "C"], "dice", 3, 0, score=score, misthrows=zeros + 1,
                   full_rows=zeros, pentagon_columns=zeros, seat=zeros, seconds=2.0)


def test_statistics_hand_computed():
    res = hand_results()
    s = summarise(res)
    a, b, c = s["agents"]
    assert a["mean_score"] == 5.25 and b["mean_score"] == 5.75 and c["mean_score"] == 2.75
    # A's scores 10, 3, 0, 8: squared deviations sum to 62.75
    assert a["score_ci95"] == pytest.approx(1.96 * math.sqrt(62.75 / 3) / 2)
    # wins: game 0 A; game 1 three-way tie; game 2 B; game 3 A and B tie
    assert a["win_rate"] == pytest.approx((1 + 1 / 3 + 0.5) / 4)
    assert b["win_rate"] == pytest.approx((1 / 3 + 1 + 0.5) / 4)
    assert c["win_rate"] == pytest.approx((1 / 3) / 4)
    assert a["mean_rank"] == 1.875 and b["mean_rank"] == 1.75 and c["mean_rank"] == 2.375
    assert a["misthrows"] == 1.0
    assert s["games"] == 4 and s["games_per_second"] == 2.0
    assert pairwise_wins(res.score).tolist() == [[0, 2, 2.5], [2, 0, 3], [1.5, 1, 0]]
    assert win_shares(res.score).sum(axis=1).tolist() == [1, 1, 1, 1]
    assert ranks(res.score)[0].tolist() == [1, 2.5, 2.5]


def test_bradley_terry_two_players_closed_form():
    # 3 wins to 1, plus the one virtual tie: strengths 3.5 : 1.5
    r = bradley_terry(np.array([[0, 3], [1, 0]]))
    assert r[0] - r[1] == pytest.approx(400 * math.log10(3.5 / 1.5))
    assert r.mean() == pytest.approx(1500)
    assert bradley_terry(np.array([[0, 5], [5, 0]])).tolist() == [1500, 1500]


def test_bradley_terry_satisfies_the_likelihood_equations():
    wins = pairwise_wins(hand_results().score) + 0.5 * (1 - np.eye(3))
    gamma = 10 ** ((bradley_terry(pairwise_wins(hand_results().score)) - 1500) / 400)
    n = wins + wins.T
    expected = (n * gamma[:, None] / (gamma[:, None] + gamma[None, :])).sum(axis=1)
    assert expected == pytest.approx(wins.sum(axis=1), rel=1e-8)
    assert np.argsort(-gamma).tolist() == [1, 0, 2]  # B, A, C


def test_command_line_outputs(tmp_path, capsys):
    out = tmp_path / "r"
    res = main(["--game", "cards", "--players", "2", "--agents", "greedy", "--games", "6",
                "--seed", "3", "--quiet", "--json", f"{out}.json", "--csv", f"{out}.csv",
                "--plot", f"{out}.png"])
    text = capsys.readouterr().out
    assert "| greedy |" in text and "| greedy#2 |" in text and "games/s" in text
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["games"] == 6 and data["entrants"] == ["greedy", "greedy#2"]
    assert data["per_game"]["score"] == res.score.tolist()
    assert data["per_game"]["misthrows"] == res.misthrows.tolist()
    assert data["per_game"]["seat"] == res.seat.tolist()
    rows = list(csv.DictReader(open(f"{out}.csv")))
    assert [r["agent"] for r in rows] == ["greedy", "greedy#2"]
    assert float(rows[0]["mean_score"]) == pytest.approx(res.summary["agents"][0]["mean_score"])
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_requests(capsys):
    with pytest.raises(EvaluationError, match="3 agents for 2 players"):
        play(["random"] * 3, games=2)
    with pytest.raises(EvaluationError, match="games: must be a positive integer"):
        play(["random"], games=0)
    with pytest.raises(EvaluationError, match="needs agent specs"):
        play([RandomAgent(), "random"], games=2, workers=2)
    with pytest.raises(SystemExit):
        main(["--agents", "nobody", "--games", "2", "--quiet"])
    assert "unknown agent spec 'nobody'" in capsys.readouterr().err


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_batched_engine_agrees_with_the_single_engine(game):
    kw = dict(game=game, games=1000, seed=2, progress=False)
    batched = play(["random", "random"], engine="batched", **kw)
    again = play(["random", "random"], **kw)  # auto: batched
    assert (batched.score == again.score).all()
    single = play(["random", "random"], engine="single", **kw)
    for key in ("score", "misthrows", "pentagon_columns"):
        b, s = getattr(batched, key), getattr(single, key)
        sd = math.sqrt(b.var() / b.size + s.var() / s.size)
        assert abs(b.mean() - s.mean()) < 5 * sd + 1e-9, key
    # every batched game ended by the rules: 4 misthrows or 2 complete rows somewhere
    assert ((batched.misthrows.max(1) == 4) | (batched.full_rows.max(1) >= 2)).all()
    assert list(batched.seat[:, 0]) == [g % 2 for g in range(1000)]


def test_batched_engine_with_a_checkpoint(tmp_path):
    from agents.policy import PolicyNetwork, save_checkpoint

    net = PolicyNetwork(121, 37, hidden=(16,))
    save_checkpoint(tmp_path / "p.pt", net, "dice", 3, 121, 37)
    res = play([str(tmp_path / "p.pt"), "random", "random"], num_players=3, games=30,
               seed=0, progress=False)
    assert res.entrants[0].endswith("p.pt") and res.games == 30


class DecisionSpy(GreedyAgent):
    """Greedy play, one decision at a time; records the masks it was asked about."""

    supports_batch = False  # the per-row path is what it spies on

    def __init__(self, **kw):
        super().__init__(**kw)
        self.asked = []

    def act(self, observation, action_mask):
        self.asked.append(int(action_mask.sum()))
        return super().act(observation, action_mask)


class BatchSpy(GreedyAgent):
    """Greedy play a batch at a time; records the masks it was asked about."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.asked = []

    def act_batch(self, observations, masks):
        self.asked.extend(int(m.sum()) for m in masks)
        return super().act_batch(observations, masks)


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_batched_engine_asks_a_batch_agent_only_real_decisions(game):
    kw = dict(game=game, games=60, seed=3, progress=False)
    spy = BatchSpy(game=game)
    res = play([spy, "random"], engine="batched", **kw)
    assert spy.asked and min(spy.asked) > 1           # never a forced move
    row = play([DecisionSpy(game=game), "random"], engine="batched", **kw)
    assert (row.score == res.score).all()             # the same games as row by row


@pytest.mark.parametrize("game", ["dice", "cards"])
def test_batched_engine_asks_a_per_row_agent_only_real_decisions(game):
    kw = dict(game=game, games=60, seed=3, progress=False)
    spy = DecisionSpy(game=game)
    res = play([spy, "random"], engine="batched", **kw)
    assert spy.asked and min(spy.asked) > 1           # never a forced move
    assert ((res.misthrows.max(1) == 4) | (res.full_rows.max(1) >= 2)).all()
    again = play([DecisionSpy(game=game), "random"], engine="batched", **kw)
    assert (again.score == res.score).all()          # seeded
    # auto keeps the single engine for a per-row agent (its documented seeds)
    auto = play([DecisionSpy(game=game), "random"], **kw)
    single = play([DecisionSpy(game=game), "random"], engine="single", **kw)
    assert (auto.score == single.score).all()
    # the greedy bot's games on either engine: same strength within noise
    many = dict(kw, games=600)
    b = play(["greedy", "random"], engine="batched", **many).score[:, 0]
    s1 = play(["greedy", "random"], engine="single", **many).score[:, 0]
    assert abs(b.mean() - s1.mean()) < 5 * math.sqrt(b.var() / b.size + s1.var() / s1.size)


def test_round_robin_plays_every_combination_with_seeded_tables():
    rr = round_robin(["random", "greedy", "random"], games=8, seed=4, progress=False)
    assert rr.entrants == ["random", "greedy", "random#2"]
    assert [t.entrants for t in rr.tables] == [["random", "greedy"], ["random", "random#2"],
                                               ["greedy", "random#2"]]
    seeds = np.random.default_rng(4).integers(0, 2 ** 62, size=3)
    for table, seed, pair in zip(rr.tables, seeds, [("random", "greedy"), ("random", "random"),
                                                    ("greedy", "random")]):
        alone = play(list(pair), games=8, seed=int(seed), progress=False)
        assert table.seed == seed and (table.score == alone.score).all()
    s = rr.summary
    assert s["games"] == 24 and s["tables"] == 3 and rr.games == 24
    greedy = s["agents"][1]
    both = np.concatenate([rr.tables[0].score[:, 1], rr.tables[2].score[:, 0]])
    assert greedy["games_played"] == 16 and greedy["mean_score"] == pytest.approx(both.mean())
    wins = np.zeros((3, 3))
    for table, ids in zip(rr.tables, [(0, 1), (0, 2), (1, 2)]):
        wins[np.ix_(ids, ids)] += pairwise_wins(table.score)
    assert [a["rating"] for a in s["agents"]] == pytest.approx(list(bradley_terry(wins)))
    assert "24 games (dice, 2 players, 3 tables, seed 4)" in format_table(s)


def test_round_robin_with_more_seats():
    rr = round_robin(["random", "greedy", "random", "greedy"], game="cards", num_players=3,
                     games=3, seed=1, progress=False)
    assert len(rr.tables) == 4 and all(t.num_players == 3 for t in rr.tables)
    assert [a["games_played"] for a in rr.summary["agents"]] == [9, 9, 9, 9]


def test_round_robin_workers_do_not_change_results():
    kw = dict(game="cards", games=3, seed=1, engine="single", progress=False)
    one = round_robin(["random", "greedy", "random"], **kw)
    two = round_robin(["random", "greedy", "random"], workers=2, **kw)
    assert all((a.score == b.score).all() for a, b in zip(one.tables, two.tables))
    assert strip_time(one.summary) == strip_time(two.summary)


def test_round_robin_command_line(tmp_path, capsys):
    out = tmp_path / "rr"
    res = main(["--round-robin", "--agents", "random,greedy,expert", "--players", "2",
                "--games", "4", "--seed", "2", "--quiet", "--json", f"{out}.json",
                "--csv", f"{out}.csv", "--plot", f"{out}.png"])
    text = capsys.readouterr().out
    assert all(f"| {name} |" in text for name in ("random", "greedy", "expert"))
    assert "12 games (dice, 2 players, 3 tables, seed 2)" in text
    data = json.loads((tmp_path / "rr.json").read_text())
    assert data["entrants"] == ["random", "greedy", "expert"] and data["tables"] == 3
    assert [t["entrants"] for t in data["per_table"]] == [t.entrants for t in res.tables]
    assert data["per_table"][2]["per_game"]["score"] == res.tables[2].score.tolist()
    rows = list(csv.DictReader(open(f"{out}.csv")))
    assert [(r["agent"], r["games_played"]) for r in rows] == [
        ("random", "8"), ("greedy", "8"), ("expert", "8")]
    assert (tmp_path / "rr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("answer, message", [
    (lambda obs, masks: masks.argmax(1) + 0.7, "dtype float64, not integers"),
    (lambda obs, masks: None, "() actions for"),
    (lambda obs, masks: masks.argmax(1)[:1], "(1,) actions for"),
    (lambda obs, masks: (masks == 0).argmax(1), "the illegal action"),
])
def test_a_batch_agent_giving_bad_actions_is_named(answer, message):
    """On the batched engine a float was truncated, a short answer broadcast over every
    game, and None a bare TypeError; the single engine refuses each, naming the seats."""
    class Broken(RandomAgent):
        name = "broken"

        def act_batch(self, obs, masks):
            return answer(obs, masks)

    with pytest.raises(EvaluationError,
                       match=re.escape(f"agent 'broken': act_batch returned ") + ".*" +
                       re.escape(message)):
        play([Broken("dice", 2), "random"], games=8, seed=0, engine="batched", progress=False)
