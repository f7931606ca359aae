"""Tournament evaluator: play N games among any agents and summarise who is stronger.

Command line::

    python -m agents.evaluate --game dice --players 2 --agents expert,greedy \\
        --games 10000 --seed 0 [--workers 2] [--json out.json] [--csv out.csv] \\
        [--plot scores.png]

``--agents`` takes one spec per seat (anything :func:`agents.load` accepts: ``random``,
``greedy``, ``expert``, a checkpoint path, ``module:Class``), or a single spec for
self-play in every seat.
Each spec is an *entrant*; duplicates are numbered (``expert``, ``expert#2``).

With ``--round-robin`` (:func:`round_robin`), ``--agents`` lists at least ``--players``
entrants and every combination of ``--players`` of them plays a table of ``--games``
games (``python -m agents.evaluate --round-robin --agents random,greedy,expert,
pretrained:dice-2p --players 2 --games 1000``: 6 tables). The table then covers every
entrant over all its games, with one rating fitted on all tables' pairwise outcomes. Every
option is checked before the first game (the specs loaded, the output folders looked
at): a bad one is an argparse error naming it (exit status 2). The outputs are written
atomically (:mod:`qwinto_env.fileio`); ``--plot`` takes its image format from the extension.

Fairness and reproducibility
----------------------------
* **Seating** (:func:`seating`): the entrants sit in a circular order that rotates by
  one seat every game (seat 0 starts); after ``n`` games the next of the ``(n-1)!``
  circular orders is used. With a number of games divisible by ``n`` every entrant
  plays every seat (and so starts) equally often; over ``n!`` games every entrant also
  follows every other equally often (in a 4-player game the one who plays right after
  a strong player, or reaches a fourth misthrow first, is not always the same).
* **Seeds**: one ``numpy`` generator seeded with ``--seed`` draws, up front, a game seed
  and one seed per entrant for every game; each game reseeds the engine and every
  agent from them (``agent.reset(seed=...)``, entrants in order, before the game's
  first decision; the batched engine resets each agent once per batch, with its first
  game's seed). The results are therefore identical for any ``--workers``. An agent
  that keeps state between calls of one game plays on the single engine (``auto`` picks
  it for an agent without ``supports_batch``) and, for self-play, is given as a spec or
  as one object per seat: one object given once sits in every seat.

The table
---------
Per entrant: mean score with a 95% confidence interval (normal approximation,
``1.96 * sd / sqrt(games)``), win rate with its 95% CI (tied winners share a win:
each of ``k`` tied best scores gets ``1/k``), mean rank (1 = best; ties share the
average rank), mean misthrows, complete rows and complete 3-field (pentagon) columns
per game, and a **Bradley-Terry rating** on the Elo scale: every game gives every
pair of entrants a win/loss (ties half each); the strengths are fitted by Hunter's
MM algorithm with one virtual tie per pair (keeps strengths finite when one side
never loses) and reported as ``1500 + 400 * log10(strength)``, centred on 1500.

Engines
-------
``engine="single"`` plays on the single-game engine (``qwinto_env.parallel.GAMES``), one
decision at a time; a seat whose mask has a single legal action (nothing to decide)
plays it without calling its agent. ``engine="batched"`` plays all games at once on the
batched engine (``qwinto_env.batched``: ``BatchedDiceGame``, ``BatchedCardGame``;
numpy backend), asking
each agent once per step for all its seats that have a real decision in a game not yet
finished (``act_batch``; an agent that does not ``supports_batch`` answers row by row).
``engine="auto"`` (default) picks the batched engine when every agent
``supports_batch`` (``random``, ``greedy``, ``expert``, checkpoints). The two engines
draw their dice from different generators, so a seed reproduces a table on the same
engine only.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import itertools
import math
import numbers
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from qwinto_env import rules
from qwinto_env.batched.backend import SEED_LIMIT
from qwinto_env.console import command_exits, warnings_as_lines
from qwinto_env.fileio import (atomic_write, atomic_write_json, atomic_write_text,
                               output_problem)
from qwinto_env.opponents import BotActionError, bot_action, split_specs
from qwinto_env.parallel import GAMES
from qwinto_env.spec import SPECS

from .base import Agent
from .load import load
from .processes import bar_progress, common, count_finished, in_processes

__all__ = ["Results", "RoundRobin", "play", "round_robin", "seating", "summarise",
           "summarise_round_robin", "bradley_terry", "format_table", "main", "BATCHED_RUNNERS",
           "MAX_GAMES"]

#: Game name -> function(agents, num_players, seat_of, seed, agent_seeds, progress) ->
#: per-game arrays (``STATS`` keys, ``[game, entrant]``), for agents that support batches.
BATCHED_RUNNERS: dict[str, Callable[..., dict[str, np.ndarray]]] = {}
ENGINES = ("auto", "single", "batched")
#: Games per batch of the batched engine (bounds memory, keeps the progress bar moving).
BATCH_GAMES = 1024

STATS = ("score", "misthrows", "full_rows", "pentagon_columns")
#: The per-game arrays of one entrant's table line, in :func:`_agent_row`'s order.
ROW_ARRAYS = ("score", "shares", "rank", "misthrows", "full_rows", "pentagon_columns")


#: :func:`play`'s arguments -> the command line's options.
OPTIONS = {"agents": "--agents", "game": "--game", "num_players": "--players",
           "games": "--games", "seed": "--seed", "workers": "--workers", "engine": "--engine"}


#: The most games one evaluation plays: the evaluator keeps every game's outcome in memory.
MAX_GAMES = 1_000_000


class EvaluationError(ValueError):
    """A tournament that cannot be played as asked. ``argument`` names the :func:`play`
    argument at fault (the message starts with it), None for a failure during play."""

    def __init__(self, problem: str, argument: str | None = None):
        super().__init__(problem if argument is None else f"{argument}: {problem}")
        self.problem, self.argument = problem, argument


@dataclass
class Results:
    """Per-game outcomes of a tournament, indexed ``[game, entrant]``."""

    entrants: list[str]
    game: str
    num_players: int
    seed: int
    score: np.ndarray
    misthrows: np.ndarray
    full_rows: np.ndarray
    pentagon_columns: np.ndarray
    seat: np.ndarray                 # seat of each entrant in each game
    seconds: float = 0.0
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return int(self.score.shape[0])

    @property
    def games_per_second(self) -> float:
        return self.games / self.seconds if self.seconds > 0 else math.inf

    def scores_by_entrant(self) -> dict[str, np.ndarray]:
        """Each entrant's final scores, game by game."""
        return {name: self.score[:, e] for e, name in enumerate(self.entrants)}


@dataclass
class RoundRobin:
    """A round robin (:func:`round_robin`): one table per combination of ``num_players``
    distinct entrants, each a :class:`Results` whose ``entrants`` are the round robin's
    names for them."""

    entrants: list[str]
    game: str
    num_players: int
    seed: int
    tables: list[Results]
    seconds: float = 0.0
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return sum(t.games for t in self.tables)

    @property
    def games_per_second(self) -> float:
        return self.games / self.seconds if self.seconds > 0 else math.inf

    def scores_by_entrant(self) -> dict[str, np.ndarray]:
        """Each entrant's final scores over all its tables' games."""
        parts: dict[str, list[np.ndarray]] = {name: [] for name in self.entrants}
        for table in self.tables:
            for name, score in table.scores_by_entrant().items():
                parts[name].append(score)
        return {name: np.concatenate(p) for name, p in parts.items()}


# -- playing --------------------------------------------------------------------

def _entrant_names(specs: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for spec in specs:
        seen[spec] = seen.get(spec, 0) + 1
        names.append(spec if seen[spec] == 1 else f"{spec}#{seen[spec]}")
    return names


def seating(games: int, num_players: int) -> np.ndarray:
    """``seat[g, e]``: the seat of entrant ``e`` in game ``g`` (see the module docstring)."""
    orders = [(0,) + p for p in itertools.permutations(range(1, num_players))]
    seat = np.empty((games, num_players), dtype=np.int64)
    for g in range(games):
        order = orders[(g // num_players) % len(orders)]
        for i, e in enumerate(order):
            seat[g, e] = (i + g) % num_players
    return seat


def _play_games(agents: Sequence[Agent], game_name: str, num_players: int,
                game_ids: Sequence[int], seat_of: np.ndarray, game_seeds: np.ndarray,
                agent_seeds: np.ndarray,
                progress: Callable[[int, int], None] | None = None) -> dict[str, np.ndarray]:
    """Play the games ``game_ids`` on the single-game engine; per-game outcome arrays
    (``progress(games, decisions)``: :mod:`agents.processes`)."""
    engine = GAMES[game_name](num_players=num_players)
    n_actions = engine.num_actions
    index = [engine.observation_index(s) for s in range(num_players)]
    out = {k: np.zeros((len(game_ids), num_players), dtype=np.int64) for k in STATS}
    mask = np.zeros(n_actions, dtype=np.int8)
    for row, g in enumerate(game_ids):
        seat_agent = [agents[0]] * num_players
        for e, s in enumerate(seat_of[g]):
            seat_agent[s] = agents[e]
        for e, agent in enumerate(agents):
            agent.reset(seed=int(agent_seeds[g, e]))
        engine.reset(seed=int(game_seeds[g]))
        decisions = 0
        while not engine.done:
            feats = None
            actions = []
            for s in range(num_players):
                legal = engine.legal_actions(s)
                if len(legal) == 1:
                    actions.append(legal[0])
                    continue
                if feats is None:
                    feats = engine.features()
                mask[:] = 0
                mask[legal] = 1
                try:
                    actions.append(bot_action(seat_agent[s], feats[index[s]], mask))
                except BotActionError as exc:
                    raise EvaluationError(f"game {g}, seat {s}: {exc}") from exc
                decisions += 1
            engine.step(actions)
        scores = engine.scores()
        for e in range(num_players):
            s = seat_of[g, e]
            cells = engine.cells[s]
            out["score"][row, e] = scores[s]
            out["misthrows"][row, e] = engine.misthrows[s]
            out["full_rows"][row, e] = rules.cells_full_rows(cells)
            out["pentagon_columns"][row, e] = rules.cells_pentagon_columns(cells)
        if progress is not None:
            progress(1, decisions)
    return out


def _play_batched(game: str, agents: Sequence[Agent], num_players: int, seat_of: np.ndarray,
                  seed: int, agent_seeds: np.ndarray,
                  progress: Callable[[int, int], None] | None = None,
                  starts: Sequence[int] | None = None,
                  batch_games: int | None = None) -> dict[str, np.ndarray]:
    """Play the games on the batched engine, in batches of ``batch_games`` (by default
    ``BATCH_GAMES``): those that begin at ``starts``, by default all; the rows of the
    others stay 0, so the parts that workers play add up.

    Slot ``g`` of the batch is game ``g``, seated like the single engine's game ``g``;
    each slot's first finished game is recorded (the engine restarts finished games,
    their successors are ignored). Each batch has its own engine seed and agent seeds, so
    the games do not depend on which process plays which batch.
    """
    from qwinto_env import batched

    engine_class = batched.BATCHED_GAMES[game]
    P = num_players
    games = len(seat_of)
    out = {k: np.zeros((games, P), dtype=np.int64) for k in STATS}
    batch_games = batch_games or BATCH_GAMES
    for start in range(0, games, batch_games) if starts is None else starts:
        for e, agent in enumerate(agents):
            agent.reset(seed=int(agent_seeds[start, e]))
        n = min(batch_games, games - start)
        ids = np.arange(start, start + n)
        engine = engine_class(n, P, backend="numpy", seed=seed + start,
                              final_observations=True)
        seat_here = seat_of[ids]
        # (game, seat) pairs of each entrant, in this batch
        where = [(np.arange(n), seat_here[:, e]) for e in range(P)]
        finished = np.zeros(n, dtype=bool)
        while not finished.all():
            obs, masks = engine.observations(), engine.action_masks()
            actions = np.empty((n, P), dtype=np.int64)
            decisions = 0
            for e, agent in enumerate(agents):
                # Each agent is asked only for the real decisions of unfinished games
                # (as on the single engine); elsewhere any legal action does (the first).
                g, s = where[e]
                mask = masks[g, s]
                chosen = mask.argmax(axis=1)
                ask = ((mask > 0).sum(axis=1) > 1) & ~finished
                if ask.any():
                    chosen[ask] = _batch_actions(agent, obs[g[ask], s[ask]], mask[ask])
                    decisions += int(ask.sum())
                actions[g, s] = chosen
            result = engine.step(actions)
            done = np.asarray(result.done_index)
            first = ~finished[done]
            if first.any():
                _record_finished(out, game, result, first, ids[done[first]],
                                 seat_here[done[first]])
            finished[done] = True
            if progress is not None:
                progress(int(first.sum()), decisions)
    return out


def _batch_actions(agent: Agent, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``agent.act_batch`` of the rows, checked as the single engine checks an action:
    :class:`EvaluationError` naming the agent unless it gives one legal integer action
    per row (numpy would truncate floats and broadcast a short answer without a word)."""
    try:
        got = agent.act_batch(obs, masks)
    except BotActionError as exc:  # a row-by-row agent's answer to act
        raise EvaluationError(str(exc)) from exc
    actions = np.asarray(got.cpu() if hasattr(got, "cpu") else got)
    problem = None
    if actions.shape != (len(obs),):
        problem = f"{actions.shape} actions for {len(obs)} decisions"
    elif actions.dtype.kind not in "iu":
        problem = f"actions of dtype {actions.dtype}, not integers"
    else:
        bad = (actions < 0) | (actions >= masks.shape[1])
        bad[~bad] = masks[np.flatnonzero(~bad), actions[~bad]] == 0
        if bad.any():
            row = int(bad.argmax())
            problem = (f"the illegal action {int(actions[row])} (legal: "
                       f"{np.flatnonzero(masks[row]).tolist()})")
    if problem is not None:
        raise EvaluationError(f"agent {getattr(agent, 'name', agent)!r}: act_batch returned "
                              f"{problem}")
    return actions


def _record_finished(out: dict[str, np.ndarray], game: str, result: Any, first: np.ndarray,
                     rows: np.ndarray, seats: np.ndarray) -> None:
    """Write the outcome of the games that ended in ``result`` for the first time
    (``first``, over its listed games) to ``out``'s ``rows``; ``seats`` (K, P): each
    entrant's seat."""
    from qwinto_env.view import decode_sheets

    # seat 0's observation lists the seats in absolute order
    cells, misthrows = decode_sheets(np.asarray(result.final_observation)[first, 0], game)
    pick = np.arange(len(rows))[:, None]
    out["score"][rows] = np.asarray(result.final_scores)[first][pick, seats]
    out["misthrows"][rows] = misthrows[pick, seats]
    sheets = cells.reshape(len(rows), -1, rules.NUM_ROWS, rules.NUM_FIELDS) > 0
    out["full_rows"][rows] = sheets.all(-1).sum(-1)[pick, seats]
    pent = sum((cells[:, :, list(col)] > 0).all(-1) for col, _ in rules.PENTAGON_COLUMNS)
    out["pentagon_columns"][rows] = pent[pick, seats]


BATCHED_RUNNERS["dice"] = functools.partial(_play_batched, "dice")
BATCHED_RUNNERS["cards"] = functools.partial(_play_batched, "cards")


def _worker_agents(specs: Sequence[str], game_name: str, num_players: int) -> list[Agent]:
    return [load(s, game=game_name, num_players=num_players) for s in specs]


def _worker(game_ids: range) -> dict[str, np.ndarray]:
    specs, game_name, num_players, seat_of, game_seeds, agent_seeds = common()
    return _play_games(_worker_agents(specs, game_name, num_players), game_name, num_players,
                       game_ids, seat_of, game_seeds, agent_seeds, count_finished)


def _batched_worker(starts: list[int]) -> dict[str, np.ndarray]:
    specs, game_name, num_players, seat_of, seed, agent_seeds, batch_games = common()
    return BATCHED_RUNNERS[game_name](_worker_agents(specs, game_name, num_players),
                                      num_players, seat_of, seed, agent_seeds, count_finished,
                                      starts=starts, batch_games=batch_games)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_settings(game: Any, num_players: Any, games: Any, seed: Any, workers: Any,
                    engine: Any) -> None:
    """Raise :class:`EvaluationError` for the first of :func:`play`'s settings that is bad."""
    if not (isinstance(engine, str) and engine in ENGINES):
        raise EvaluationError(f"unknown engine {engine!r}; choose one of {ENGINES}", "engine")
    if not (isinstance(game, str) and game in GAMES):
        raise EvaluationError(f"unknown game {game!r}; choose one of {sorted(GAMES)}", "game")
    if engine == "batched" and game not in BATCHED_RUNNERS:
        raise EvaluationError(f"the {game} game has no batched engine runner", "engine")
    problem = SPECS[game].player_count_problem(num_players)
    if problem is not None:
        raise EvaluationError(problem, "num_players")
    for argument, value, least in (("games", games, 1), ("seed", seed, 0),
                                   ("workers", workers, 1)):
        if not (_is_int(value) and value >= least):
            kind = "a positive" if least else "a non-negative"
            raise EvaluationError(f"must be {kind} integer, got {value!r}", argument)
    if games > MAX_GAMES:
        raise EvaluationError(f"must be at most {MAX_GAMES:,} (the evaluator keeps every "
                              f"game's outcome in memory), got {games!r}", "games")
    if seed >= SEED_LIMIT:  # the engines' generators take 64 bits
        raise EvaluationError(f"must be an integer in 0..2**64-1, got {seed!r}", "seed")


def _seat_entries(agents: Any, game: str, num_players: int,
                  workers: int) -> list[str | Agent]:
    """One spec or :class:`Agent` per seat, each checked to fit the game and player count."""
    entries = _agent_list(agents)
    if len(entries) == 1:
        entries *= num_players
    if len(entries) != num_players:
        raise EvaluationError(f"{len(entries)} agents for {num_players} players: give one "
                              f"agent per seat, or one agent for self-play (more agents "
                              f"than seats: a round robin)", "agents")
    return _check_entries(entries, game, num_players, workers)


def _pool_entries(agents: Any, game: str, num_players: int,
                  workers: int) -> list[str | Agent]:
    """A round robin's specs or :class:`Agent` objects: at least one per seat, checked."""
    entries = _agent_list(agents)
    if num_players == 1:  # solo games meet no one: there is nothing to rate across them
        raise EvaluationError("a round robin needs tables of at least 2 players; solo "
                              "agents play alone: evaluate each on its own", "num_players")
    if len(entries) < num_players:
        raise EvaluationError(f"a round robin of {num_players}-player tables needs at least "
                              f"{num_players} agents, got {len(entries)}", "agents")
    return _check_entries(entries, game, num_players, workers)


def _agent_list(agents: Any) -> list[Any]:
    if isinstance(agents, (str, bytes, os.PathLike, Agent)) \
            or not isinstance(agents, Iterable):
        raise EvaluationError(f"must be a list with one spec or Agent per seat (or one for "
                              f"self-play), got {agents!r}", "agents")
    return [os.fspath(a) if isinstance(a, os.PathLike) else a for a in agents]


def _check_entries(entries: list[Any], game: str, num_players: int,
                   workers: int) -> list[str | Agent]:
    """``entries`` if each is a spec or an :class:`Agent` of this game and player count
    (only specs with ``workers > 1``); an :class:`EvaluationError` otherwise."""
    for i, entry in enumerate(entries):
        if isinstance(entry, Agent) and (entry.game, entry.num_players) != (game, num_players):
            raise EvaluationError(f"agents[{i}] {entry!r} does not play the {game} game with "
                                  f"{num_players} players", "agents")
        if not isinstance(entry, (str, Agent)):
            raise EvaluationError(f"agents[{i}] is {entry!r}, neither a spec (a name or a "
                                  f"path) nor an Agent", "agents")
    if workers > 1 and not all(isinstance(a, str) for a in entries):
        raise EvaluationError("above 1 needs agent specs (strings), not Agent objects "
                              "(each worker process loads its own agents; your own class "
                              "is the spec 'module:Class')", "workers")
    return entries


def _load_spec(spec: str, game: str, num_players: int) -> Agent:
    try:
        return load(spec, game=game, num_players=num_players)
    except ValueError as exc:  # every load error: a bad spec or a bad checkpoint
        raise EvaluationError(str(exc), "agents") from exc


def play(agents: Sequence[str | os.PathLike | Agent], game: str = "dice", num_players: int = 2,
         games: int = 1000, seed: int = 0, workers: int = 1,
         progress: bool = True, engine: str = "auto") -> Results:
    """Play ``games`` games with seat rotation; see the module docstring.

    ``agents`` holds one spec (a name or a path) or :class:`Agent` per seat (or a single
    one for self-play). ``workers > 1`` splits the games over processes (specs only):
    single games on the single engine, batches of :data:`BATCH_GAMES` on the batched one
    (a warning says when there are fewer batches than workers). ``engine`` is
    ``"auto"``, ``"single"`` or ``"batched"``. Every argument is checked, and every spec
    loaded, before the first game: a bad one raises :class:`EvaluationError` naming it.
    """
    _check_settings(game, num_players, games, seed, workers, engine)
    num_players, games, seed, workers = int(num_players), int(games), int(seed), int(workers)
    entries = _seat_entries(agents, game, num_players, workers)
    specs = [a if isinstance(a, str) else None for a in entries]
    names = _entrant_names([a if isinstance(a, str) else a.name for a in entries])
    objs = [_load_spec(a, game, num_players) if isinstance(a, str) else a for a in entries]
    rng = np.random.default_rng(seed)
    game_seeds = rng.integers(0, 2 ** 62, size=games)
    seat_of = seating(games, num_players)
    agent_seeds = rng.integers(0, 2 ** 62, size=(games, num_players))
    from tqdm import tqdm

    runner = BATCHED_RUNNERS.get(game)
    use_batched = engine == "batched" or (
        engine == "auto" and runner is not None and all(a.supports_batch for a in objs))
    start = time.perf_counter()
    if use_batched and workers == 1:
        with tqdm(total=games, desc=f"{game} {num_players}p batched", unit="game",
                  disable=not progress, file=sys.stderr) as bar:
            out = runner(objs, num_players, seat_of, seed, agent_seeds, bar_progress(bar))
    elif use_batched:
        starts = list(range(0, games, BATCH_GAMES))
        if len(starts) < workers:
            warnings.warn(f"{games} games are {len(starts)} batch(es) of the batched engine "
                          f"({BATCH_GAMES} games each), so {len(starts)} of the {workers} "
                          "workers play (the single engine shares out single games)",
                          stacklevel=2)
        jobs = [starts[i::workers] for i in range(min(workers, len(starts)))]
        out = _in_processes(_batched_worker, jobs, [sum(min(BATCH_GAMES, games - s)
                                                        for s in job) for job in jobs],
                            workers, f"{game} {num_players}p batched", progress,
                            functools.partial(np.sum, axis=0),
                            (specs, game, num_players, seat_of, seed, agent_seeds, BATCH_GAMES))
    elif workers == 1:
        with tqdm(total=games, desc=f"{game} {num_players}p", unit="game",
                  disable=not progress, file=sys.stderr) as bar:
            out = _play_games(objs, game, num_players, range(games), seat_of, game_seeds,
                              agent_seeds, bar_progress(bar))
    else:
        bounds = np.linspace(0, games, min(games, workers * 8) + 1).astype(int)
        jobs = [range(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        out = _in_processes(_worker, jobs, [len(c) for c in jobs], workers,
                            f"{game} {num_players}p", progress, np.concatenate,
                            (specs, game, num_players, seat_of, game_seeds, agent_seeds))
    seconds = time.perf_counter() - start
    res = Results(names, game, num_players, seed, seconds=seconds, seat=seat_of,
                  **{k: out[k] for k in STATS})
    res.summary = summarise(res)
    return res


def round_robin(agents: Sequence[str | os.PathLike | Agent], game: str = "dice",
                num_players: int = 2, games: int = 1000, seed: int = 0, workers: int = 1,
                progress: bool = True, engine: str = "auto") -> RoundRobin:
    """More agents than seats: every combination of ``num_players`` of ``agents`` plays
    ``games`` games (a :func:`play` table each: seats rotated, ``workers`` and ``engine``
    as there).

    Table ``k`` (in ``itertools.combinations`` order) is played with the ``k``-th seed
    that a ``numpy`` generator seeded with ``seed`` draws, so the results do not depend
    on ``workers``. Duplicate specs are numbered as in :func:`play`. The summary
    (:func:`summarise_round_robin`) covers every agent over all its games. Every argument
    is checked, and every spec loaded, before the first game.
    """
    _check_settings(game, num_players, games, seed, workers, engine)
    entries = _pool_entries(agents, game, int(num_players), int(workers))
    names = _entrant_names([a if isinstance(a, str) else a.name for a in entries])
    objs = [_load_spec(a, game, int(num_players)) if isinstance(a, str) else a
            for a in entries]
    members = list(itertools.combinations(range(len(entries)), int(num_players)))
    table_seeds = np.random.default_rng(int(seed)).integers(0, 2 ** 62, size=len(members))
    seated = entries if workers > 1 else objs  # worker processes load specs themselves
    start = time.perf_counter()
    tables = []
    for ids, table_seed in zip(members, table_seeds):
        res = play([seated[i] for i in ids], game, num_players, games, int(table_seed),
                   workers, progress, engine)
        res.entrants = [names[i] for i in ids]
        res.summary = summarise(res)
        tables.append(res)
    rr = RoundRobin(names, game, int(num_players), int(seed), tables,
                    seconds=time.perf_counter() - start)
    rr.summary = summarise_round_robin(rr)
    return rr


def _in_processes(worker: Callable[[Any], dict[str, np.ndarray]], jobs: list[Any],
                  sizes: list[int], workers: int, desc: str, progress: bool,
                  join: Callable[[list[np.ndarray]], np.ndarray],
                  common: tuple) -> dict[str, np.ndarray]:
    """``worker`` on each job in ``workers`` processes (``sizes``: games per job, for the
    progress bar; ``common``: what every job reads, given to each worker once); the parts'
    arrays joined by ``join`` (concatenated, or summed)."""
    parts = in_processes(worker, jobs, workers, sum(sizes), desc, progress, common)
    return {k: join([p[k] for p in parts]) for k in STATS}


# -- statistics -------------------------------------------------------------------

def _mean_ci(x: np.ndarray) -> tuple[float, float]:
    """Mean and 95% CI half-width (normal approximation) of a sample."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        return float(x.mean()), math.nan
    return float(x.mean()), float(1.96 * x.std(ddof=1) / math.sqrt(x.size))


def win_shares(score: np.ndarray) -> np.ndarray:
    """Per game and entrant, the share of the win: ``1/k`` for each of ``k`` best scores."""
    best = score.max(axis=1, keepdims=True)
    top = score == best
    return top / top.sum(axis=1, keepdims=True)


def ranks(score: np.ndarray) -> np.ndarray:
    """Per game and entrant, the rank (1 = best); tied entrants share the average rank."""
    better = (score[:, None, :] > score[:, :, None]).sum(axis=2)
    tied = (score[:, None, :] == score[:, :, None]).sum(axis=2) - 1
    return 1.0 + better + tied / 2.0


def pairwise_wins(score: np.ndarray) -> np.ndarray:
    """``W[i, j]``: games in which entrant ``i`` beat ``j``, ties counting one half."""
    s_i, s_j = score[:, :, None], score[:, None, :]
    return (s_i > s_j).sum(axis=0) + 0.5 * (s_i == s_j).sum(axis=0) * (
        1 - np.eye(score.shape[1]))


def bradley_terry(wins: np.ndarray, prior_ties: float = 1.0, iterations: int = 10000,
                  tol: float = 1e-12) -> np.ndarray:
    """Bradley-Terry strengths from a pairwise win matrix, as Elo-scale ratings.

    ``wins[i, j]`` counts wins of ``i`` over ``j`` (ties as halves). ``prior_ties``
    virtual ties are added to every pair. Fitted with Hunter's MM updates; returned as
    ``1500 + 400 log10(strength)`` with the mean rating 1500.
    """
    w = np.asarray(wins, dtype=np.float64) + 0.5 * prior_ties * (1 - np.eye(len(wins)))
    n = w + w.T
    gamma = np.ones(len(w))
    total = w.sum(axis=1)
    for _ in range(iterations):
        denom = (n / (gamma[:, None] + gamma[None, :])).sum(axis=1)
        new = total / denom
        new /= math.exp(np.log(new).mean())
        if np.max(np.abs(new - gamma)) < tol:
            gamma = new
            break
        gamma = new
    return 1500.0 + 400.0 * np.log10(gamma)


def _agent_row(name: str, score: np.ndarray, shares: np.ndarray, rank: np.ndarray,
               misthrows: np.ndarray, full_rows: np.ndarray, pentagon_columns: np.ndarray,
               rating: float) -> dict[str, Any]:
    """One entrant's line of the table, from its per-game outcomes."""
    mean, ci = _mean_ci(score)
    win, win_ci = _mean_ci(shares)
    return {"agent": name, "mean_score": mean, "score_ci95": ci,
            "win_rate": win, "win_ci95": win_ci, "mean_rank": float(rank.mean()),
            "misthrows": float(misthrows.mean()), "full_rows": float(full_rows.mean()),
            "pentagon_columns": float(pentagon_columns.mean()), "rating": float(rating)}


def _table_arrays(res: Results) -> dict[str, np.ndarray]:
    """A table's per-game arrays ``[game, entrant]``: the ``STATS``, win shares, ranks."""
    return {**{k: getattr(res, k) for k in STATS}, "shares": win_shares(res.score),
            "rank": ranks(res.score)}


def summarise(res: Results) -> dict[str, Any]:
    """The evaluator's table as a dict: per entrant statistics plus run facts."""
    rating = (bradley_terry(pairwise_wins(res.score)) if len(res.entrants) > 1
              else np.full(1, math.nan))
    cols = _table_arrays(res)
    per = [_agent_row(name, *(cols[k][:, e] for k in ROW_ARRAYS), rating[e])
           for e, name in enumerate(res.entrants)]
    return {"game": res.game, "players": res.num_players, "games": res.games,
            "seed": res.seed, "seconds": res.seconds,
            "games_per_second": res.games_per_second, "agents": per}


def summarise_round_robin(rr: RoundRobin) -> dict[str, Any]:
    """:func:`summarise` for a round robin: each entrant's statistics over all its games
    (``games_played`` of them), and one Bradley-Terry rating fitted on the pairwise
    outcomes of all tables together."""
    index = {name: i for i, name in enumerate(rr.entrants)}
    wins = np.zeros((len(index), len(index)))
    parts: list[list[dict[str, np.ndarray]]] = [[] for _ in index]
    for table in rr.tables:
        ids = [index[name] for name in table.entrants]
        wins[np.ix_(ids, ids)] += pairwise_wins(table.score)
        cols = _table_arrays(table)
        for e, i in enumerate(ids):
            parts[i].append({k: cols[k][:, e] for k in ROW_ARRAYS})
    rating = bradley_terry(wins)
    per = []
    for i, name in enumerate(rr.entrants):
        arrays = [np.concatenate([p[k] for p in parts[i]]) for k in ROW_ARRAYS]
        per.append({**_agent_row(name, *arrays, rating[i]), "games_played": len(arrays[0])})
    return {"game": rr.game, "players": rr.num_players, "games": rr.games,
            "seed": rr.seed, "seconds": rr.seconds, "games_per_second": rr.games_per_second,
            "tables": len(rr.tables), "agents": per}


def format_table(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table (readable in a terminal too)."""
    head = ("| agent | mean score | win rate | mean rank | misthrows | full rows "
            "| pentagon cols | rating |")
    lines = [head, "|" + "---|" * 8]
    for a in summary["agents"]:
        lines.append(
            f"| {a['agent']} | {a['mean_score']:.2f} ± {a['score_ci95']:.2f} "
            f"| {100 * a['win_rate']:.1f}% ± {100 * a['win_ci95']:.1f} "
            f"| {a['mean_rank']:.3f} | {a['misthrows']:.2f} | {a['full_rows']:.2f} "
            f"| {a['pentagon_columns']:.2f} | {a['rating']:.0f} |")
    tables = f", {summary['tables']} tables" if "tables" in summary else ""
    lines.append(f"\n{summary['games']} games ({summary['game']}, {summary['players']} "
                 f"players{tables}, seed {summary['seed']}) in {summary['seconds']:.1f} s: "
                 f"{summary['games_per_second']:.1f} games/s")
    return "\n".join(lines)


def write_csv(summary: dict[str, Any], path: str) -> None:
    """One row per entrant with every statistic of the table."""
    rows = summary["agents"]
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=["game", "players", "games", "seed", *rows[0]])
    writer.writeheader()
    for row in rows:
        writer.writerow({"game": summary["game"], "players": summary["players"],
                         "games": summary["games"], "seed": summary["seed"], **row})
    atomic_write_text(path, text.getvalue())


def write_json(res: Results | RoundRobin, path: str) -> None:
    """The summary plus every per-game array (``[game][entrant]``: the ``STATS`` and
    ``seat``); for a round robin, each table's (``per_table``: its ``entrants``, ``seed``
    and ``per_game``)."""
    def per_game(table: Results) -> dict[str, list]:
        return {k: getattr(table, k).tolist() for k in (*STATS, "seat")}

    data = {**res.summary, "entrants": res.entrants}
    if isinstance(res, RoundRobin):
        data["per_table"] = [{"entrants": t.entrants, "seed": t.seed, "per_game": per_game(t)}
                             for t in res.tables]
    else:
        data["per_game"] = per_game(res)
    atomic_write_json(path, data, indent=1)


def plot_format(path: str) -> str:
    """The image format of a plot file: its extension, PNG without one."""
    return os.path.splitext(path)[1][1:].lower() or "png"


def plot_scores(res: Results | RoundRobin, path: str) -> None:
    """An image (format: :func:`plot_format`) of each entrant's score distribution (step
    histograms, one per entrant)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    scores = res.scores_by_entrant()
    lo = int(min(x.min() for x in scores.values()))
    hi = int(max(x.max() for x in scores.values()))
    bins = np.arange(lo, hi + 2) - 0.5 if hi - lo < 120 else 60
    for name, score in scores.items():
        ax.hist(score, bins=bins, histtype="step", linewidth=1.5,
                label=f"{name} (mean {score.mean():.1f})")
    ax.set_xlabel("final score")
    ax.set_ylabel("games")
    ax.set_title(f"Qwinto {res.game}, {res.num_players} players, {res.games} games")
    ax.legend()
    fig.tight_layout()
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format=plot_format(path), dpi=100))
    finally:
        plt.close(fig)


# -- command line -------------------------------------------------------------------

def _check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit with an argparse error for an output file that could not be written."""
    seen: dict[str, str] = {}
    for option in ("--json", "--csv", "--plot"):
        path = getattr(args, option[2:])
        if path is None:
            continue
        problem = output_problem(path)
        if problem is None and option == "--plot":
            problem = _plot_problem(path)
        if problem is None and os.path.realpath(path) in seen:
            problem = f"is the file {seen[os.path.realpath(path)]} writes too"
        if problem:
            parser.error(f"argument {option}: {path!r} {problem}")
        seen[os.path.realpath(path)] = option


def _plot_problem(path: str) -> str | None:
    """Why matplotlib could not write a plot to ``path``."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return "needs matplotlib, which is not installed"
    formats = FigureCanvasBase.get_supported_filetypes()
    if plot_format(path) not in formats:
        return f"has format {plot_format(path)!r}; matplotlib writes {sorted(formats)}"
    return None


def main(argv: Sequence[str] | None = None,
         prog: str = "python -m agents.evaluate") -> Results | RoundRobin:
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Play a Qwinto tournament and print the table.")
    parser.add_argument("--game", default="dice", choices=sorted(GAMES))
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--agents", default="expert,greedy",
                        help="comma-separated specs, one per seat (or one for self-play)")
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--engine", default="auto", choices=ENGINES,
                        help="batched engine when every agent supports batches (auto)")
    parser.add_argument("--json", help="write the summary and the per-game results as JSON")
    parser.add_argument("--csv", help="write the per-agent table as CSV")
    parser.add_argument("--plot", help="write an image of the score distributions (format "
                                       "from the extension, PNG without one)")
    parser.add_argument("--round-robin", action="store_true",
                        help="more agents than seats: every combination of --players of "
                             "them plays --games games")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    _check_outputs(parser, args)
    with command_exits(prog):
        res = _tournament(parser, args, prog)
        print(format_table(res.summary))
    if args.json:
        write_json(res, args.json)
    if args.csv:
        write_csv(res.summary, args.csv)
    if args.plot:
        plot_scores(res, args.plot)
    return res


def _tournament(parser: argparse.ArgumentParser, args: argparse.Namespace,
                prog: str) -> Results | RoundRobin:
    """The command line's tournament; a bad argument exits with its argparse error."""
    tournament = round_robin if args.round_robin else play
    try:
        with warnings_as_lines(prog):
            return tournament(split_specs(args.agents), game=args.game,
                              num_players=args.players, games=args.games, seed=args.seed,
                              workers=args.workers, progress=not args.quiet,
                              engine=args.engine)
    except ValueError as exc:
        argument = getattr(exc, "argument", None)
        if argument is None:  # a failure during play
            parser.exit(2, f"error: {exc}\n")
        parser.error(f"argument {OPTIONS[argument]}: {exc.problem}")


def cli() -> int:
    """The ``qwinto-evaluate`` console script: :func:`main`, then exit status 0 (a console
    script exits with what its function returns, and :func:`main` returns the results)."""
    main(prog="qwinto-evaluate")
    return 0


if __name__ == "__main__":
    main()
