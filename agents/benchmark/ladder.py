"""The frozen rating ladders: a fixed pool of reference agents per ladder, rated once on a
large round robin, and a new agent rated against them with the pool held fixed.

============  =====  =====  ===============================================
ladder        game   seats  reference pool
============  =====  =====  ===============================================
``dice-2p``   dice   2      random, greedy, expert, pretrained:dice-2p
``cards-2p``  cards  2      random, greedy, expert, pretrained:cards-2p
``dice-4p``   dice   4      random, greedy, expert
============  =====  =====  ===============================================

The model is Bradley-Terry on the pairwise outcomes of the games: in every game each pair
of entrants gives one win (ties half each), and ``P(a beats b) = 1 / (1 + 10 ** ((R_b -
R_a) / 400))`` on the Elo scale. The scale is **anchored** at ``expert = 1500`` in every
ladder, so it does not drift when a ladder is refitted: the expert's rating is 1500 by
definition (its interval is the point) and every other interval says how well a rating
is known *relative to the expert*.

The pool (:func:`fit_pool`, run by ``benchmarks/fit_ladder.py``): maximum likelihood over
all tables' pairwise outcomes (Newton's method on log strengths), the 95% intervals by a
percentile bootstrap that resamples each table's games (so the outcomes of one game, which
hang together in a game of more than 2 players, stay together). The tables
(:meth:`Ladder.tables`): every combination of distinct pool members when the pool has at
least as many members as seats, else the whole pool plus every way of filling the free
seats from it (``dice-4p``: ``random, greedy, expert`` with a second ``random``,
``greedy`` or ``expert``). The fit is frozen in ``agents/benchmark/ladder.json`` with its
games, seed, date, code version and the observed against the fitted win rate of every
pair (how well Bradley-Terry fits).

A new agent (:meth:`Ladder.rate`): the pool's ratings held fixed, only the agent's rating
``R`` is fitted, by maximum likelihood on its pairwise outcomes against the pool members
it met. Its interval is the profile-likelihood interval ``{R: 2 (l(R_hat) - l(R)) <=
c * chi2_1(95%)}``; ``c`` is the design effect (robust over model-based variance of the
score, clustered by game, at least 1): 1 in 2-player games, larger in a 4-player game,
where the agent's three outcomes of one game hang together. The interval stays honest at
the edges: an agent that wins every pairwise outcome gets ``rating = high = inf`` and a
finite ``low``. It leaves out the uncertainty of the pool's own ratings, which shifts
every agent rated on the ladder alike (it is in :attr:`Ladder.ratings`).
"""

from __future__ import annotations

import datetime
import functools
import itertools
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from qwinto_env.fileio import atomic_write_text, output_problem

from ..evaluate import Results, play

__all__ = ["Rating", "Ladder", "LADDERS", "LADDER_FILE", "ANCHOR", "ANCHOR_RATING",
           "get_ladder", "ladder_names", "fit_pool", "fit_ladder", "save_fit"]

#: Where the frozen fits live (package data).
LADDER_FILE = Path(__file__).resolve().parent / "ladder.json"
#: The agent whose rating is fixed in every ladder, and its rating.
ANCHOR, ANCHOR_RATING = "expert", 1500.0
#: Natural-log strength per Elo point.
ELO = math.log(10) / 400
_SCRIPTED = ("random", "greedy", "expert")
#: Ladder name -> (game, players, reference pool).
LADDERS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "dice-2p": ("dice", 2, _SCRIPTED + ("pretrained:dice-2p",)),
    "cards-2p": ("cards", 2, _SCRIPTED + ("pretrained:cards-2p",)),
    "dice-4p": ("dice", 4, _SCRIPTED),
}


@dataclass(frozen=True)
class Rating:
    """A rating on a ladder's Elo scale, its 95% interval ``[low, high]``, and the number of
    games it rests on (games the agent played)."""

    rating: float
    low: float
    high: float
    games: int


@dataclass(frozen=True)
class Ladder:
    """One ladder: its game, player count, reference pool and the pool's frozen ratings
    (empty before a fit); ``fit`` holds the rest of the frozen record."""

    name: str
    game: str
    num_players: int
    pool: tuple[str, ...]
    ratings: dict[str, Rating] = field(default_factory=dict)
    fit: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> list[tuple[str, ...]]:
        """The seatings of the round robin that rates the pool (see the module docstring)."""
        if len(self.pool) >= self.num_players:
            return list(itertools.combinations(self.pool, self.num_players))
        free = self.num_players - len(self.pool)
        return [self.pool + extra
                for extra in itertools.combinations_with_replacement(self.pool, free)]

    def rate(self, name: str, results: Sequence[Results], level: float = 0.95) -> Rating:
        """The rating of entrant ``name`` from tournaments (:class:`Results`) between it and
        pool members (every other entrant is one, duplicates numbered ``expert#2``), the
        pool's frozen ratings held fixed, with its ``level`` interval; see the module
        docstring."""
        missing = [m for m in self.pool if m not in self.ratings]
        if missing:
            raise ValueError(f"ladder {self.name!r} has no frozen rating for {missing}: run "
                             f"benchmarks/fit_ladder.py --ladder {self.name}")
        cluster, opponent, outcome = _entrant_outcomes(self, name, results)
        return _rate_one(cluster, opponent, outcome, self._pool_ratings(), level)

    def _pool_ratings(self) -> np.ndarray:
        return np.array([self.ratings[m].rating for m in self.pool])


def ladder_names() -> list[str]:
    return list(LADDERS)


def get_ladder(name: str, path: str | Path | None = None) -> Ladder:
    """The ladder ``name`` with its frozen ratings (from ``path``, by default the shipped
    :data:`LADDER_FILE`); a ``KeyError`` naming the known ladders otherwise."""
    if name not in LADDERS:
        raise KeyError(f"unknown ladder {name!r}; known ladders: {', '.join(LADDERS)}")
    game, players, pool = LADDERS[name]
    entry = _load_file(str(path or LADDER_FILE)).get(name)
    if entry is None:
        return Ladder(name, game, players, pool)
    ratings = {m: Rating(**r) for m, r in entry["ratings"].items()}
    fit = {k: v for k, v in entry.items() if k != "ratings"}
    return Ladder(name, game, players, pool, ratings, fit)


@functools.lru_cache(maxsize=4)
def _load_file(path: str) -> dict[str, Any]:
    if not Path(path).exists():
        return {}
    return json.loads(Path(path).read_text())["ladders"]


def ladders_kept(path: str | Path) -> dict[str, Any]:
    """The ladders of the ladder file at ``path`` that a fit written there keeps (none
    where it does not exist yet); ValueError naming the file unless it can be written and
    is a ladder file: for a check before a fit, which takes hours to play."""
    if (problem := output_problem(path)) is not None:
        raise ValueError(f"{str(path)!r} {problem}")
    if not Path(path).exists():
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{str(path)!r} is not a ladder file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("ladders", {}), dict):
        raise ValueError(f"{str(path)!r} is not a ladder file (no \"ladders\" object)")
    return data.get("ladders", {})


def save_fit(ladder: Ladder, path: str | Path | None = None) -> None:
    """Write ``ladder``'s ratings and fit record into the ladder file (atomically), keeping
    the other ladders' entries."""
    path = Path(path or LADDER_FILE)
    ladders = ladders_kept(path)
    ladders[ladder.name] = {**ladder.fit, "game": ladder.game, "players": ladder.num_players,
                            "pool": list(ladder.pool),
                            "ratings": {m: asdict(r) for m, r in ladder.ratings.items()}}
    data = {"format": 1, "anchor": {"agent": ANCHOR, "rating": ANCHOR_RATING},
            "ladders": {k: ladders[k] for k in sorted(ladders)}}
    atomic_write_text(path, json.dumps(data, indent=1) + "\n")
    _load_file.cache_clear()


# -- the pool's fit ---------------------------------------------------------------------

def fit_pool(pool: Sequence[str], results: Sequence[Results], bootstrap: int = 1000,
             seed: int = 0, anchor: str = ANCHOR) -> tuple[dict[str, Rating], np.ndarray]:
    """The pool's Bradley-Terry ratings from its round robin (``results``: tables whose
    entrants are all pool members, duplicates numbered), ``anchor`` at
    :data:`ANCHOR_RATING`, 95% percentile-bootstrap intervals (``bootstrap`` resamples of
    each table's games, drawn from ``seed``). Also returns the win matrix ``W[i, j]``
    (wins of ``pool[i]`` over ``pool[j]``, ties as halves)."""
    pool = list(pool)
    if anchor not in pool:
        raise ValueError(f"the anchor {anchor!r} is not in the pool {pool}")
    rng = np.random.default_rng(seed)
    tables = [_table_outcomes(pool, res) for res in results]
    wins = sum(per_game.sum(axis=0) for per_game in tables)
    resampled = sum(_resample(per_game, bootstrap, rng) for per_game in tables)
    a = pool.index(anchor)
    point = _fit_bt(wins[None], a)[0]
    draws = _fit_bt(resampled, a)
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    played = np.zeros(len(pool), dtype=np.int64)
    for res in results:
        played[[pool.index(m) for m in set(_members(pool, res.entrants))]] += res.games
    ratings = {m: Rating(float(point[i]), float(low[i]), float(high[i]), int(played[i]))
               for i, m in enumerate(pool)}
    return ratings, wins


def fit_ladder(name: str, games: int, seed: int, workers: int = 1, bootstrap: int = 1000,
               progress: bool = True) -> Ladder:
    """Play ladder ``name``'s round robin (:meth:`Ladder.tables`, ``games`` games each;
    table ``k`` seeded with the ``k``-th draw of a generator seeded with ``seed``, as
    :func:`agents.evaluate.round_robin` does) and fit its pool (:func:`fit_pool`). The
    returned ladder's ``fit`` records the games, seed, bootstrap, tables, date, seconds and
    every pair's observed and fitted win rate."""
    base = get_ladder(name)
    tables = base.tables()
    seeds = np.random.default_rng(seed).integers(0, 2 ** 62, size=len(tables))
    start = time.perf_counter()
    results = [play(list(t), base.game, base.num_players, games, int(s), workers, progress)
               for t, s in zip(tables, seeds)]
    ratings, wins = fit_pool(base.pool, results, bootstrap, seed)
    fit = {"games_per_table": games, "seed": seed, "bootstrap": bootstrap,
           "tables": [list(t) for t in tables],
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "seconds": round(time.perf_counter() - start, 1),
           "pairs": _pair_fit(list(base.pool), wins, ratings)}
    return Ladder(name, base.game, base.num_players, base.pool, ratings, fit)


def _pair_fit(pool: list[str], wins: np.ndarray,
              ratings: dict[str, Rating]) -> list[dict[str, Any]]:
    """Per pair of members that met: games, observed and Bradley-Terry win rate of the
    first (how well the model fits)."""
    out = []
    for i, j in itertools.combinations(range(len(pool)), 2):
        n = wins[i, j] + wins[j, i]
        if n:
            gap = ratings[pool[i]].rating - ratings[pool[j]].rating
            out.append({"pair": [pool[i], pool[j]], "games": int(round(n)),
                        "observed": float(wins[i, j] / n),
                        "fitted": float(1 / (1 + math.exp(-ELO * gap)))})
    return out


def _members(pool: list[str], entrants: Sequence[str], new: str | None = None) -> list[str]:
    """Each entrant's pool member (``expert#2`` is ``expert``), or ``new`` for the rated
    entrant; a ``ValueError`` for any other entrant."""
    out = []
    for entrant in entrants:
        base = entrant if entrant == new or entrant in pool else entrant.rsplit("#", 1)[0]
        if entrant != new and base not in pool:
            raise ValueError(f"entrant {entrant!r} is not in the pool {pool}"
                             + (f" and is not the rated entrant {new!r}" if new else ""))
        out.append(base)
    return out


def _table_outcomes(pool: list[str], res: Results) -> np.ndarray:
    """``[game, i, j]``: per game, the wins of ``pool[i]`` over ``pool[j]`` (ties halves;
    a member seated twice does not play itself)."""
    idx = np.array([pool.index(m) for m in _members(pool, res.entrants)])
    s = np.asarray(res.score, dtype=np.float64)
    beat = (s[:, :, None] > s[:, None, :]) + 0.5 * (s[:, :, None] == s[:, None, :])
    beat = beat * (idx[:, None] != idx[None, :])
    out = np.zeros((len(s), len(pool), len(pool)))
    for e, f in itertools.product(range(len(idx)), repeat=2):
        out[:, idx[e], idx[f]] += beat[:, e, f]
    return out


def _resample(per_game: np.ndarray, draws: int, rng: np.random.Generator,
              chunk: int = 100) -> np.ndarray:
    """``draws`` bootstrap win matrices: the games resampled with replacement."""
    games, m = per_game.shape[0], per_game.shape[1]
    flat = per_game.reshape(games, m * m)
    out = []
    for start in range(0, draws, chunk):
        rows = min(chunk, draws - start)
        picks = rng.integers(0, games, size=(rows, games)) + games * np.arange(rows)[:, None]
        counts = np.bincount(picks.ravel(), minlength=rows * games).reshape(rows, games)
        # not ``@``: on a busy machine BLAS's threads make this small product slow
        out.append(np.einsum("bg,gk->bk", counts, flat))
    return np.concatenate(out).reshape(draws, m, m)


def _fit_bt(wins: np.ndarray, anchor: int, iterations: int = 200) -> np.ndarray:
    """Bradley-Terry maximum likelihood for a stack of win matrices ``(..., M, M)``:
    Elo-scale ratings with ``anchor`` at :data:`ANCHOR_RATING`. Newton's method on log
    strengths (the log-likelihood is concave), steps capped at one nat. A ``ValueError``
    when a maximum does not exist (a group of members never loses to the rest)."""
    wins = np.asarray(wins, dtype=np.float64)
    m = wins.shape[-1]
    free = [i for i in range(m) if i != anchor]
    n = wins + np.swapaxes(wins, -1, -2)
    beta = np.zeros(wins.shape[:-1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(beta[..., None, :] - beta[..., :, None]))
        grad = wins.sum(-1) - (n * p).sum(-1)
        h = n * p * (1 - p)
        hess = h - np.eye(m) * h.sum(-1)[..., None]
        sub = hess[..., free, :][..., :, free]
        step = np.linalg.solve(-sub, grad[..., free, None])[..., 0]
        beta[..., free] += np.clip(step, -1.0, 1.0)
        if np.abs(step).max() < 1e-10:
            return ANCHOR_RATING + beta / ELO
    raise ValueError("the Bradley-Terry fit did not converge: the pairwise outcomes have no "
                     "maximum likelihood (some members never lose, or never win, against "
                     "the others)")


# -- a new agent against the frozen pool ----------------------------------------------------

def _entrant_outcomes(ladder: Ladder, name: str, results: Sequence[Results]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pairwise outcome of entrant ``name`` against a pool member, flat: the game it
    belongs to (numbered across ``results``), the member's pool index, the outcome (1 a
    win, 0.5 a tie, 0 a loss)."""
    if isinstance(results, Results) or not results:
        raise ValueError(f"results must be a non-empty list of Results, got {results!r}")
    pool = list(ladder.pool)
    clusters, opponents, outcomes = [], [], []
    offset = 0
    for k, res in enumerate(results):
        if (res.game, res.num_players) != (ladder.game, ladder.num_players):
            raise ValueError(f"results[{k}] is a {res.num_players}-player {res.game} game; "
                             f"ladder {ladder.name!r} rates {ladder.num_players}-player "
                             f"{ladder.game} games")
        if res.entrants.count(name) != 1:
            raise ValueError(f"results[{k}] has entrants {res.entrants}: the rated entrant "
                             f"{name!r} must be one of them, once")
        members = _members(pool, res.entrants, new=name)
        e = res.entrants.index(name)
        s = np.asarray(res.score, dtype=np.float64)
        for f, member in enumerate(members):
            if f == e:
                continue
            clusters.append(offset + np.arange(res.games))
            opponents.append(np.full(res.games, pool.index(member)))
            outcomes.append((s[:, e] > s[:, f]) + 0.5 * (s[:, e] == s[:, f]))
        offset += res.games
    return np.concatenate(clusters), np.concatenate(opponents), np.concatenate(outcomes)


def _rate_one(cluster: np.ndarray, opponent: np.ndarray, outcome: np.ndarray,
              pool_ratings: np.ndarray, level: float) -> Rating:
    """One rating by maximum likelihood, its profile-likelihood interval widened by the
    design effect (see the module docstring)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    ref = pool_ratings[opponent]

    def loglik(r: float) -> float:
        x = ELO * (r - ref)  # log-odds of a win
        return float(-(outcome * np.logaddexp(0, -x) + (1 - outcome) * np.logaddexp(0, x)).sum())

    def score(r: float) -> float:
        return float((outcome - 1 / (1 + np.exp(-ELO * (r - ref)))).sum())

    lo, hi = float(ref.min()) - 4000, float(ref.max()) + 4000
    if outcome.sum() == 0:
        best, top = -math.inf, 0.0
    elif outcome.sum() == outcome.size:
        best, top = math.inf, 0.0
    else:
        best = _bisect(score, lo, hi)  # the score falls as the rating rises
        top = loglik(best)
    crit = statistics.NormalDist().inv_cdf((1 + level) / 2) ** 2 * _design_effect(
        cluster, outcome, ref, best)

    def excess(r: float) -> float:
        return 2 * (top - loglik(r)) - crit

    low = -math.inf if best == -math.inf or excess(lo) < 0 else _bisect(
        excess, lo, min(best, hi))
    high = math.inf if best == math.inf or excess(hi) < 0 else _bisect(
        excess, max(best, lo), hi)
    games = len(np.unique(cluster))
    return Rating(float(best), float(low), float(high), games)


def _design_effect(cluster: np.ndarray, outcome: np.ndarray, ref: np.ndarray,
                   best: float) -> float:
    """Robust (outcomes clustered by game) over model-based variance of the score at the
    fitted rating; at least 1 (ties make it a little less), 1 for an infinite rating."""
    if not math.isfinite(best):
        return 1.0
    p = 1 / (1 + np.exp(-ELO * (best - ref)))
    per_game = np.bincount(cluster, weights=outcome - p)
    return max(1.0, float((per_game ** 2).sum() / (p * (1 - p)).sum()))


def _bisect(f: Any, lo: float, hi: float, steps: int = 60) -> float:
    """The root of ``f`` between ``lo`` and ``hi``, where ``f`` changes sign once."""
    left = f(lo) > 0
    for _ in range(steps):
        mid = (lo + hi) / 2
        if (f(mid) > 0) == left:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
