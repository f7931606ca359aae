"""Search at play time: plan each decision by simulating the game with the batched engine.

:class:`SearchAgent` plays a checkpoint (``agents.load("search:<checkpoint>")``, a path
or ``pretrained:<name>``, both games). For a decision with several legal actions it

1. takes the ``top_k`` legal actions the policy head likes most as candidates, leaving
   out those it gives less than ``min_prob`` (the favourite always stays; a decision
   left with one candidate is not searched);
2. puts ``samples`` copies of the position per candidate into one batched engine
   (:meth:`~qwinto_env.batched.BatchedDiceGame.set_positions`), plays the candidate in
   each, and every other decision, of every seat, by the policy (deterministic);
3. stops after ``turns`` turn ends (the current turn's end is the first; 0: at the end of
   the game) and scores each copy by the objective: ``"score"``, the searching seat's
   points now plus what its value head expects to come; ``"margin"``, that minus the
   same for the best other seat; ``"win"``, 1 when that margin is positive, 1/2 when it
   is 0, else 0 (a finished copy: by its final scores; solo play: always ``"score"``);
4. plays the policy's favourite unless another candidate's mean gain over it (paired over
   the copies) exceeds ``confidence`` standard errors; then the one with the best mean.

**Chance.** The copies of a candidate differ only in chance, and candidate ``k``'s
copy ``m`` sees the same chance as every other candidate's copy ``m`` (common random
numbers): the same dice in the dice game; in the card game the same deal of the cards
the player cannot see (other hands and the draw-pile order, drawn uniformly from the
cards that are neither in the own hand, nor on the stacks, nor covered). The agent reads
nothing but its observation, so it cannot see the real hidden order, and all its
randomness comes from its generator (``reset(seed=...)``).

**Cost.** One decision simulates ``top_k * samples`` games for about ``turns`` turns:
the network's forward passes dominate (``docs/search.md`` has the measured times).
``act_batch`` searches a whole batch of decisions in one engine (how the evaluator
plays it), in parts of at most :data:`MAX_BATCH_COPIES` simulated games.

Settings (keyword arguments of ``agents.load``, or in the spec:
``"search[person,samples=32]:pretrained:cards-2p"``); a ``preset`` of :data:`PRESETS`
names a set of them per game, :data:`DEFAULTS` fills the rest:

==============  ========  ==============================================================
setting         default   meaning
==============  ========  ==============================================================
``samples``     16        simulated games per candidate (times the candidates: at most
                          :data:`MAX_COPIES`)
``top_k``       4         candidates (the policy's most likely legal actions; more
                          than the game's actions: all of them)
``turns``       2         turn ends simulated before the value head scores (0: to the end)
``confidence``  1.0       standard errors by which a candidate's paired gain must exceed
                          0 for the agent to leave the policy's favourite
``min_prob``    0.0       policy probability below which a legal action is no candidate
``rounds``      1         most rounds (up to 64) of ``samples`` copies per candidate:
                          a decision gets another round while a candidate leads the
                          favourite by less than ``confidence`` standard errors (all
                          rounds pooled)
``phases``      "all"     the phases searched, e.g. ``"play"``; the policy decides the rest
``objective``   "score"   ``"score"``, ``"margin"`` or ``"win"`` (see above)
==============  ========  ==============================================================
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple

import numpy as np
import torch

from qwinto_env import batched, rules
from qwinto_env.spec import SPECS
from qwinto_env.spec import cards as card_spec
from qwinto_env.spec.dice import DIE_FACES
from qwinto_env.view import decode_batch, decode_cards_public

from .base import Agent, AgentSpecError, check_integer, check_number, legal_rows
from .lookahead import value_units
from .policy import PolicyNetwork

__all__ = ["SearchAgent", "Searched", "OBJECTIVES", "DEFAULTS", "PRESETS", "MAX_COPIES",
           "MAX_BATCH_COPIES", "MAX_ROUNDS", "deal_hidden", "paired_gains"]

OBJECTIVES = ("score", "margin", "win")
#: The settings (keyword arguments) and their values when neither they nor a preset say.
DEFAULTS: dict[str, Any] = {"samples": 16, "top_k": 4, "turns": 2, "confidence": 1.0,
                            "min_prob": 0.0, "rounds": 1, "phases": "all",
                            "objective": "score"}
#: Named settings per game (the rest from :data:`DEFAULTS`): ``"evaluate"`` (used when no
#: preset is named) for the batched evaluator's thousands of games, ``"person"`` answers a
#: person within about a second per decision on one core. Chosen, and timed, by
#: measurement: ``docs/search.md``.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "dice": {"evaluate": {"turns": 0, "samples": 32, "confidence": 2.0, "objective": "win",
                          "min_prob": 0.01},
             "person": {"turns": 0, "samples": 64, "confidence": 2.0, "objective": "win",
                        "min_prob": 0.01, "rounds": 4}},
    "cards": {"evaluate": {"phases": "play", "turns": 4},
              "person": {"phases": "play", "turns": 8, "samples": 128}},
}

#: Most simulated games one decision's round may take (``samples`` times the candidates):
#: the engine holds them all at once, about 1.4 (dice) and 3.4 (cards) kB each at its peak,
#: so a setting past this is refused at load, not by the allocator at the first decision.
MAX_COPIES = 1 << 16
#: Most simulated games one engine holds (about 1.8 GB of card games): a batch of
#: decisions past it is simulated in parts (a search's random draws then differ from one
#: engine's). Every preset's copies for the evaluator's 1,024-game batches fit in one
#: engine, as the matches of ``docs/search.md`` were played.
MAX_BATCH_COPIES = 1 << 19
#: Most rounds: a decision that stays close takes round after round, its time and pooled
#: values growing with each (``docs/search.md``: what more rounds bought).
MAX_ROUNDS = 64


def _check_phases(value: Any, game: str) -> tuple[int, ...]:
    """Phase numbers from ``"all"``, ``"play+entry"`` or a sequence of phase names."""
    names = SPECS[game].phases[:-1]  # the last phase is the game's end: nothing to decide
    given = names if value == "all" else value.split("+") if isinstance(value, str) else value
    try:
        picked = tuple(sorted({names.index(name) for name in given}))
    except (TypeError, ValueError):
        picked = ()
    if not picked:
        raise AgentSpecError(f"search setting phases must be 'all' or phase names of the "
                             f"{game} game joined by '+' ({'+'.join(names)}), got {value!r}")
    return picked


class Searched(NamedTuple):
    """What :meth:`SearchAgent.search_batch` decided for R observations and why (A: the
    game's actions). Expert iteration distils it (``imitation.targets: search``)."""

    actions: np.ndarray  #: (R,) what :meth:`SearchAgent.act_batch` plays
    logits: np.ndarray   #: (R, A) the policy's logits, ``-inf`` for an illegal action
    #: (R, A) each action's mean simulated gain over the policy's favourite, in the
    #: objective's units: 0 for a searched decision's favourite, NaN where nothing was
    #: simulated (no candidate, or a decision not searched)
    gains: np.ndarray
    errors: np.ndarray   #: (R, A) the standard error of each gain (NaN where no gain)


class SearchAgent(Agent):
    """Plans every decision by simulation (module docstring) with a checkpoint's network.

    Args:
        network: a :class:`PolicyNetwork` for ``game`` and ``num_players``.
        reward_scale: the value head's units (``ppo.reward_scale`` of its training): the
            value divided by it is the points the seat still expects.
        preset: a name of :data:`PRESETS` (default ``"evaluate"``).
        settings: the settings table of the module docstring, over the preset's.
    """

    name = "search"
    supports_batch = True

    def __init__(self, network: PolicyNetwork, game: str = "dice", num_players: int = 2,
                 reward_scale: float = 0.05, preset: str = "evaluate", **settings: Any):
        spec = SPECS.get(game)
        if spec is None or network.observation_size != spec.observation_size(num_players) \
                or network.num_actions != spec.num_actions:
            raise AgentSpecError(f"the network takes {network.observation_size} observations "
                                 f"and {network.num_actions} actions, not those of the "
                                 f"{num_players}-player {game} game")
        if not isinstance(preset, str) or preset not in PRESETS[game]:
            # phases=play,entry in a spec splits at the comma, leaving entry a preset
            phase = f" ({preset!r} is a phase: join phases with '+', phases=play+entry)" \
                if preset in spec.phases else ""
            raise AgentSpecError(f"unknown search preset {preset!r}; choose one of "
                                 f"{sorted(PRESETS[game])}{phase}")
        unknown = sorted(set(settings) - set(DEFAULTS))
        if unknown:
            raise AgentSpecError(f"unknown search settings {unknown}; the settings are "
                                 f"{list(DEFAULTS)} and preset")
        chosen = {**DEFAULTS, **PRESETS[game][preset], **settings}
        super().__init__(game, num_players)
        self.preset = preset
        self.samples = check_integer("search setting samples", chosen["samples"], 1)
        # more candidates than the game has actions are all of them (and keep the row
        # grouping's int64 arithmetic safe from a top_k past 2**63)
        self.top_k = min(check_integer("search setting top_k", chosen["top_k"], 1),
                         spec.num_actions)
        self.turns = check_integer("search setting turns", chosen["turns"], 0)
        self.confidence = check_number("search setting confidence", chosen["confidence"], 0.0)
        self.min_prob = check_number("search setting min_prob", chosen["min_prob"], 0.0)
        self.rounds = check_integer("search setting rounds", chosen["rounds"], 1, MAX_ROUNDS)
        copies = self.samples * self.top_k
        if copies > MAX_COPIES:
            raise AgentSpecError(f"search settings samples={self.samples} and top_k="
                                 f"{chosen['top_k']} simulate {copies} games per decision; "
                                 f"at most {MAX_COPIES} (MAX_COPIES)")
        if self.min_prob > 1:
            raise AgentSpecError(f"search setting min_prob must be a probability <= 1, "
                                 f"got {chosen['min_prob']!r}")
        self.phases = _check_phases(chosen["phases"], game)
        if chosen["objective"] not in OBJECTIVES:
            raise AgentSpecError(f"search setting objective must be one of {OBJECTIVES}, "
                                 f"got {chosen['objective']!r}")
        self.objective = chosen["objective"]
        self.reward_scale = check_number("search setting reward_scale", reward_scale, 0.0,
                                         strict=True)
        self.network = network.eval()
        self.spec = spec
        self._engine = batched.BATCHED_GAMES[game]
        self._entry = spec.phases.index("entry")

    @classmethod
    def from_checkpoint(cls, network: PolicyNetwork, data: Mapping[str, Any], /,
                        **kwargs: Any) -> "SearchAgent":
        """The agent of a loaded checkpoint, its value units from its training config."""
        units = value_units(data)
        if "reward_scale" in units:
            kwargs.setdefault("reward_scale", units["reward_scale"])
        return cls(network, game=data["game"], num_players=int(data["num_players"]),
                   **kwargs)

    def settings(self) -> dict[str, Any]:
        """The settings this agent plays with (``phases`` as names)."""
        names = "+".join(self.spec.phases[p] for p in self.phases)
        return {"samples": self.samples, "top_k": self.top_k, "turns": self.turns,
                "confidence": self.confidence, "min_prob": self.min_prob,
                "rounds": self.rounds, "phases": names, "objective": self.objective}

    # -- deciding --------------------------------------------------------------------
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.check_inputs(observation, action_mask, batch=False)
        return int(self.act_batch(np.asarray(observation)[None],
                                  np.asarray(action_mask)[None])[0])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self.check_inputs(observations, masks)
        return self.search_batch(observations, masks).actions

    @torch.no_grad()
    def search_batch(self, observations: np.ndarray, masks: np.ndarray) -> Searched:
        """Decide a batch (R observations) and say why: :class:`Searched`."""
        obs = np.asarray(observations, dtype=np.float32)
        legal = legal_rows(np.asarray(masks))
        logits = self.network(torch.as_tensor(obs))[0].numpy()
        logits = np.where(legal, logits, -np.inf)
        candidate_logits = self._candidate_logits(logits)
        out = logits.argmax(1)
        gains, errors = np.full(logits.shape, np.nan), np.full(logits.shape, np.nan)
        phase = np.asarray(decode_batch(obs, self.game).phase)
        count = np.minimum(np.isfinite(candidate_logits).sum(1), self.top_k)
        todo = (count > 1) & np.isin(phase, self.phases)
        # One engine phase per search. Pruned rows keep few candidates, so they are searched
        # in groups of one count, not padded to the batch's most; unpruned, by phase alone
        # (as the recorded matches of docs/search.md were played).
        group = phase * (self.top_k + 1) + (count if self.min_prob else 0)
        for g in np.unique(group[todo]):
            rows = np.flatnonzero(todo & (group == g))
            candidates, gain, error = self.candidate_gains(
                obs[rows], candidate_logits[rows], int(phase[rows[0]]))
            out[rows] = self._choose(candidates, gain, error)
            r, k = np.nonzero(np.isfinite(gain))  # not the padding
            gains[rows[r], candidates[r, k]] = gain[r, k]
            errors[rows[r], candidates[r, k]] = error[r, k]
        return Searched(out.astype(np.int64), logits, gains, errors)

    def _candidate_logits(self, logits: np.ndarray) -> np.ndarray:
        """Masked policy logits (R, A) with the actions below ``min_prob`` masked too
        (``-inf``), except each row's favourite."""
        if not self.min_prob:
            return logits
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        keep = probs >= self.min_prob
        keep[np.arange(len(logits)), logits.argmax(1)] = True
        return np.where(keep, logits, -np.inf)

    def _choose(self, candidates: np.ndarray, gain: np.ndarray,
                error: np.ndarray) -> np.ndarray:
        """Of :meth:`candidate_gains`' candidates (R, K), the one each row plays."""
        better = gain > self.confidence * error
        better[:, 0] = True  # the favourite stands unless another candidate beats it
        pick = np.where(better, gain, -np.inf).argmax(1)
        return np.take_along_axis(candidates, pick[:, None], 1)[:, 0]

    @torch.no_grad()
    def candidate_gains(self, obs: np.ndarray, logits: np.ndarray,
                        phase: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Search observations ``obs`` (R, obs) in ``phase`` whose masked policy logits are
        ``logits`` (R, A) (``-inf``: no candidate): the candidates (R, K), the policy's
        favourite first, and each one's mean simulated gain over the favourite and its
        standard error (R, K); ``-inf`` gain for a padding candidate (fewer legal)."""
        K = min(self.top_k, int(np.isfinite(logits).sum(1).max()))
        order = np.argsort(-logits, axis=1, kind="stable")[:, :K]
        valid = np.isfinite(np.take_along_axis(logits, order, 1))
        candidates = np.where(valid, order, order[:, :1])  # padding: the favourite again
        values = self._simulate_positions(obs, candidates, phase)
        gain, error = paired_gains(values)
        for _ in range(1, self.rounds):
            lead = np.where(valid[:, 1:], gain[:, 1:], -np.inf)
            decided = (lead > self.confidence * error[:, 1:]).any(1)
            open_ = np.flatnonzero((lead > 0).any(1) & ~decided)
            if not len(open_):
                break
            more = np.full(values.shape[:2] + (self.samples,), np.nan)
            more[open_] = self._simulate_positions(obs[open_], candidates[open_], phase)
            values = np.concatenate([values, more], 2)
            gain, error = paired_gains(values)
        return candidates, np.where(valid, gain, -np.inf), error

    def _simulate_positions(self, obs: np.ndarray, candidates: np.ndarray,
                            phase: int) -> np.ndarray:
        """``samples`` simulated values (R, K, M) of each candidate (R, K) of each
        observation (R, obs) in ``phase``, on engines of at most MAX_BATCH_COPIES games."""
        (R, K), M = candidates.shape, self.samples
        part = MAX_BATCH_COPIES // (K * M)  # >= 8 rows: K * M is at most MAX_COPIES
        if R > part:
            return np.concatenate([self._simulate_positions(obs[i:i + part],
                                                            candidates[i:i + part], phase)
                                   for i in range(0, R, part)])
        engine = self._engine(R * K * M, self.num_players, backend="numpy",
                              seed=int(self.rng.integers(2 ** 62)))
        self._set_positions(engine, obs, phase, K)
        first = np.repeat(candidates.reshape(-1), M)
        return self._simulate(engine, first, R, K).reshape(R, K, M)

    # -- the simulations ---------------------------------------------------------------
    def _set_positions(self, engine: Any, obs: np.ndarray, phase: int, K: int) -> None:
        """Load ``K * samples`` copies of each observed position into ``engine`` (seats
        relative to the observer: the observer is seat 0); hidden cards dealt per sample."""
        M, view = self.samples, decode_batch(obs, self.game)

        def copies(x: np.ndarray) -> np.ndarray:
            return np.repeat(np.asarray(x), K * M, axis=0)

        if self.game == "dice":
            engine.set_positions(copies(view.cells), copies(view.misthrows),
                                 copies(view.active), phase, copies(view.colours),
                                 copies(view.value), validate=False)
            return
        hands, pile = deal_hidden(obs, M, self.rng)
        spread = np.arange(len(obs) * K * M)
        # copy m of every candidate gets deal m of its observation
        deal = (spread // (K * M)) * M + spread % M
        public = decode_cards_public(obs)
        counting = np.where(public["counting"] < 0, card_spec.NUM_STACKS, public["counting"])
        engine.set_positions(copies(view.cells), copies(view.misthrows), copies(view.active),
                             phase, hands[deal], copies(view.tops), copies(public["covered"]),
                             pile[deal], copies(view.value), copies(view.colours),
                             copies(public["played"]), copies(counting), validate=False)

    def _simulate(self, engine: Any, first: np.ndarray, R: int, K: int) -> np.ndarray:
        """Play every copy from its position, seat 0's first action ``first`` (N,), then
        the policy's, until ``turns`` turn ends or the end; each copy's value (N,)."""
        N, P = engine.num_games, self.num_players
        alive = np.ones(N, dtype=bool)
        value = np.zeros(N)
        ends, step = 0, 0
        rolls_dice = self.game == "dice"
        while True:
            masks = engine.action_masks()
            actions = masks.argmax(2)
            ask = (masks.sum(2) > 1) & alive[:, None]
            if step == 0:
                ask[:, 0] = False
                actions[:, 0] = first
            g, s = np.nonzero(ask)
            if len(g):
                obs = engine.observations()[g, s]
                logits = self.network(torch.as_tensor(obs))[0].numpy()
                actions[g, s] = np.where(masks[g, s] > 0, logits, -np.inf).argmax(1)
            entry = engine.phase == self._entry
            chance = self._dice(engine, R, K) if rolls_dice and not entry else None
            result = engine.step(actions, chance, validate=False)
            step += 1
            done = np.asarray(result.terminated) & alive
            value[done] = self._objective(np.asarray(result.scores_at_end)[done], None)
            alive &= ~done
            ends += int(entry)
            if not alive.any() or (self.turns and ends >= self.turns):
                break
        if alive.any():
            rows = np.flatnonzero(alive)
            seats = 1 if self.objective == "score" else P
            obs = engine.observations()[rows, :seats].reshape(len(rows) * seats, -1)
            to_come = self.network(torch.as_tensor(obs))[1].numpy().reshape(len(rows), seats)
            value[rows] = self._objective(np.asarray(engine.scores())[rows, :seats],
                                          to_come / self.reward_scale)
        return value

    def _objective(self, scores: np.ndarray, to_come: np.ndarray | None) -> np.ndarray:
        """Seat 0's objective of rows of scores (and the points each seat expects)."""
        points = scores.astype(np.float64) + (0.0 if to_come is None else to_come)
        if self.objective == "score" or self.num_players == 1:
            return points[:, 0]
        margin = points[:, 0] - points[:, 1:].max(1)
        return margin if self.objective == "margin" else (np.sign(margin) + 1) / 2

    def _dice(self, engine: Any, R: int, K: int) -> np.ndarray:
        """Die faces (N, 3) for a rolling step: one draw per (observation, sample),
        shared by all candidates (common random numbers)."""
        M = self.samples
        dice = rules.NUM_ROWS  # one die per colour
        faces = self.rng.integers(1, DIE_FACES + 1, size=(R, 1, M, dice), dtype=np.int8)
        return np.broadcast_to(faces, (R, K, M, dice)).reshape(engine.num_games, dice)


def paired_gains(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate, the mean gain over the favourite (candidate 0) and its standard
    error, from simulated values (R, K, M) whose copy ``m`` saw the same chance for every
    candidate (so the differences are paired); NaN: copy ``m`` of that row not simulated
    (a row's copies are all simulated or none)."""
    diff = values - values[:, :1]
    if not np.isnan(diff).any():  # one round: numpy's own mean and std, bit for bit as
        # the recorded matches were played (the pooled sums below round differently)
        M = values.shape[2]
        error = diff.std(2, ddof=1) / math.sqrt(M) if M > 1 else np.zeros(diff.shape[:2])
        return diff.mean(2), error
    n = np.maximum((~np.isnan(diff)).sum(2), 1)
    gain = np.nansum(diff, 2) / n
    spread = np.nansum((diff - gain[..., None]) ** 2, 2) / np.maximum(n - 1, 1)
    return gain, np.sqrt(spread / n)


def deal_hidden(obs: np.ndarray, samples: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Deal, ``samples`` times per card observation (R, obs), the cards its player
    cannot see: uniformly, the cards in no own hand slot, on no stack and not covered go
    to the other seats' hands (as many as each holds) and the draw pile (in a random
    order). Returns hands (R * samples, P, 3) (the observer's own hand at seat 0, -1 for
    an empty slot) and piles (R * samples, 32) (-1 after the last card), deal ``m`` of
    observation ``r`` at row ``r * samples + m``."""
    view, public = decode_batch(obs, "cards"), decode_cards_public(obs)
    R, D, H = len(obs), card_spec.DECK_SIZE, card_spec.HAND_SIZE
    num_players = public["hand_sizes"].shape[1]
    seen = public["covered"].copy()
    for ids in (view.hand, view.tops):
        r, slot = np.nonzero(ids >= 0)
        seen[r, ids[r, slot]] = True
    seen = np.repeat(seen, samples, axis=0)
    # random keys, 2 for the cards seen: sorting puts the unseen cards first, shuffled
    order = np.argsort(np.where(seen, 2.0, rng.random(seen.shape)), axis=1)
    sizes = np.repeat(public["hand_sizes"], samples, axis=0)
    hands = np.full((R * samples, num_players, H), -1, dtype=np.int64)
    hands[:, 0] = np.repeat(view.hand, samples, axis=0)
    start = np.zeros(R * samples, dtype=np.int64)
    slots = np.arange(H)
    for seat in range(1, num_players):
        take = slots[None, :] < sizes[:, seat, None]
        cards = np.take_along_axis(order, np.minimum(start[:, None] + slots, D - 1), 1)
        hands[:, seat] = np.where(take, cards, -1)
        start += sizes[:, seat]
    pile_size = np.repeat(public["pile"], samples, axis=0)
    at = np.minimum(start[:, None] + np.arange(D), D - 1)
    pile = np.where(np.arange(D)[None, :] < pile_size[:, None],
                    np.take_along_axis(order, at, 1), -1)
    return hands, pile
