"""Search at play time: plan each decision by simulating the game with the batched engine.

:class:`SearchAgent` plays a checkpoint (``agents.load("search:<checkpoint>")``, a path
or ``pretrained:<name>``, both games). For a decision with several legal actions it

1. takes the ``top_k`` legal actions the policy head likes most as candidates;
2. puts ``samples`` copies of the position per candidate into one batched engine
   (:meth:`~qwinto_env.batched.BatchedDiceGame.set_positions`), plays the candidate in
   each, and every other decision, of every seat, by the policy (deterministic);
3. stops after ``turns`` turn ends (the current turn's end is the first; 0: at the end of
   the game) and scores each copy by the objective: ``"score"``, the searching seat's
   points now plus what its value head expects to come; ``"margin"``, that minus the
   same for the best other seat; ``"win"``, 1 when that margin is positive, 1/2 when it
   is 0, else 0 (a finished copy: by its final scores; solo play: always ``"score"``);
4. plays the candidate with the best mean.

**Chance.** The copies of a candidate differ only in chance, and candidate ``k``'s
copy ``m`` sees the same chance as every other candidate's copy ``m`` (common random
numbers): the same dice in the dice game; in the card game the same deal of the cards
the player cannot see (other hands and the draw-pile order, drawn uniformly from the
cards that are neither in the own hand, nor on the stacks, nor covered). The agent reads
nothing but its observation, so it cannot see the real hidden order, and all its
randomness comes from its generator (``reset(seed=...)``).

**Cost.** One decision simulates ``top_k * samples`` games for about ``turns`` turns:
the network's forward passes dominate (``docs/search.md`` has the measured times).
``act_batch`` searches a whole batch of decisions in one engine, which is how the
evaluator plays it at several games per second.

Settings (keyword arguments of ``agents.load``; :data:`PRESETS` names sets of them):

=============  ========  ==============================================================
setting        default   meaning
=============  ========  ==============================================================
``samples``    16        simulated games per candidate
``top_k``      4         candidates (the policy's most likely legal actions)
``turns``      2         turn ends simulated before the value head scores (0: to the end)
``confidence``  0         standard errors by which a candidate's paired gain must beat
                         the favourite's for the agent to leave the favourite
``objective``  "score"   ``"score"``, ``"margin"`` or ``"win"`` (see above)
=============  ========  ==============================================================
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import torch

from qwinto_env import batched
from qwinto_env.spec import SPECS
from qwinto_env.spec import cards as card_spec
from qwinto_env.spec.dice import DIE_FACES
from qwinto_env.view import decode_batch

from .base import Agent, AgentSpecError, legal_rows
from .lookahead import value_units
from .policy import PolicyNetwork

__all__ = ["SearchAgent", "OBJECTIVES", "PRESETS", "deal_hidden"]

OBJECTIVES = ("score", "margin", "win")
#: Named settings: ``"person"`` answers a person within about a second on one core,
#: ``"evaluate"`` plays several games per second in the batched evaluator.
PRESETS: dict[str, dict[str, Any]] = {
    "evaluate": {"samples": 16, "top_k": 4, "turns": 2, "confidence": 0.0},
    "person": {"samples": 64, "top_k": 6, "turns": 4, "confidence": 0.0},
}
_DEFAULTS = PRESETS["evaluate"]
#: The numeric settings (each preset gives all of them).
SETTINGS = tuple(_DEFAULTS)


def _positive_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise AgentSpecError(f"search setting {name} must be an integer >= {low}, "
                             f"got {value!r}")
    return int(value)


class SearchAgent(Agent):
    """Plans every decision by simulation (module docstring) with a checkpoint's network.

    Args:
        network: a :class:`PolicyNetwork` for ``game`` and ``num_players``.
        reward_scale: the value head's units (``ppo.reward_scale`` of its training): the
            value divided by it is the points the seat still expects.
        samples, top_k, turns, objective: the settings table of the module docstring.
        preset: a name of :data:`PRESETS` whose settings the others override.
    """

    name = "search"
    supports_batch = True

    def __init__(self, network: PolicyNetwork, game: str = "dice", num_players: int = 2,
                 reward_scale: float = 0.05, samples: int | None = None,
                 top_k: int | None = None, turns: int | None = None,
                 confidence: float | None = None, objective: str = "score",
                 preset: str | None = None):
        spec = SPECS.get(game)
        if spec is None or network.observation_size != spec.observation_size(num_players) \
                or network.num_actions != spec.num_actions:
            raise AgentSpecError(f"the network takes {network.observation_size} observations "
                                 f"and {network.num_actions} actions, not those of the "
                                 f"{num_players}-player {game} game")
        if preset is not None and preset not in PRESETS:
            raise AgentSpecError(f"unknown search preset {preset!r}; choose one of "
                                 f"{sorted(PRESETS)}")
        base = PRESETS[preset] if preset is not None else _DEFAULTS
        given = {"samples": samples, "top_k": top_k, "turns": turns, "confidence": confidence}
        settings = {k: base[k] if v is None else v for k, v in given.items()}
        if objective not in OBJECTIVES:
            raise AgentSpecError(f"search setting objective must be one of {OBJECTIVES}, "
                                 f"got {objective!r}")
        if isinstance(reward_scale, bool) or not isinstance(reward_scale, (int, float)) \
                or not math.isfinite(reward_scale) or reward_scale <= 0:
            raise AgentSpecError(f"reward_scale must be a finite number > 0, "
                                 f"got {reward_scale!r}")
        super().__init__(game, num_players)
        self.samples = _positive_int("samples", settings["samples"], 1)
        self.top_k = _positive_int("top_k", settings["top_k"], 1)
        self.turns = _positive_int("turns", settings["turns"], 0)
        self.confidence = settings["confidence"]
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, (int, float)) \
                or not math.isfinite(self.confidence) or self.confidence < 0:
            raise AgentSpecError(f"search setting confidence must be a finite number >= 0, "
                                 f"got {self.confidence!r}")
        self.confidence = float(self.confidence)
        self.objective = objective
        self.reward_scale = float(reward_scale)
        self.network = network.eval()
        self.spec = spec
        self._engine = batched.BATCHED_GAMES[game]
        self._entry = spec.phases.index("entry")

    @classmethod
    def from_checkpoint(cls, network: PolicyNetwork, data: Mapping[str, Any],
                        **kwargs: Any) -> "SearchAgent":
        """The agent of a loaded checkpoint, its value units from its training config."""
        unknown = sorted(set(kwargs) - set(SETTINGS) - {"reward_scale", "objective", "preset"})
        if unknown:
            raise AgentSpecError(f"unknown search settings {unknown}; the settings are "
                                 f"{sorted(SETTINGS) + ['objective', 'preset']}")
        units = value_units(data)
        if "reward_scale" in units:
            kwargs.setdefault("reward_scale", units["reward_scale"])
        return cls(network, game=data["game"], num_players=int(data["num_players"]),
                   **kwargs)

    def settings(self) -> dict[str, Any]:
        """The settings this agent plays with."""
        return {"samples": self.samples, "top_k": self.top_k, "turns": self.turns,
                "confidence": self.confidence, "objective": self.objective}

    # -- deciding --------------------------------------------------------------------
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.act_batch(np.asarray(observation)[None],
                                  np.asarray(action_mask)[None])[0])

    @torch.no_grad()
    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        obs = np.asarray(observations, dtype=np.float32)
        legal = legal_rows(np.asarray(masks))
        logits = self.network(torch.as_tensor(obs))[0].numpy()
        logits = np.where(legal, logits, -np.inf)
        out = logits.argmax(1)
        phase = np.asarray(decode_batch(obs, self.game).phase)
        todo = legal.sum(1) > 1
        for p in np.unique(phase[todo]):  # one engine phase per search
            rows = np.flatnonzero(todo & (phase == p))
            out[rows] = self._search(obs[rows], logits[rows], int(p))
        return out.astype(np.int64)

    def _search(self, obs: np.ndarray, logits: np.ndarray, phase: int) -> np.ndarray:
        """The chosen candidate of each observation ``obs`` (R, obs), all in ``phase``."""
        candidates, gain, error = self.candidate_gains(obs, logits, phase)
        better = gain > self.confidence * error
        better[:, 0] = True  # the favourite stands unless another candidate beats it
        pick = np.where(better, gain, -np.inf).argmax(1)
        return np.take_along_axis(candidates, pick[:, None], 1)[:, 0]

    @torch.no_grad()
    def candidate_gains(self, obs: np.ndarray, logits: np.ndarray,
                        phase: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Search observations ``obs`` (R, obs) in ``phase`` whose masked policy logits are
        ``logits`` (R, A) (``-inf``: illegal): the candidates (R, K), the policy's
        favourite first, and each one's mean simulated gain over the favourite and its
        standard error (R, K); ``-inf`` gain for a padding candidate (fewer legal)."""
        R, M = len(obs), self.samples
        K = min(self.top_k, int(np.isfinite(logits).sum(1).max()))
        order = np.argsort(-logits, axis=1, kind="stable")[:, :K]
        valid = np.isfinite(np.take_along_axis(logits, order, 1))
        candidates = np.where(valid, order, order[:, :1])  # padding: the favourite again
        engine = self._engine(R * K * M, self.num_players, backend="numpy",
                              seed=int(self.rng.integers(2 ** 62)))
        self._set_positions(engine, obs, phase, K)
        first = np.repeat(candidates.reshape(-1), M)
        values = self._simulate(engine, first, R, K).reshape(R, K, M)
        gain, error = paired_gains(values)
        return candidates, np.where(valid, gain, -np.inf), error

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
        hands, pile = deal_hidden(obs, M, self.num_players, self.rng)
        spread = np.arange(len(obs) * K * M)
        # copy m of every candidate gets deal m of its observation
        deal = (spread // (K * M)) * M + spread % M
        hidden = _card_public(obs, self.num_players)
        engine.set_positions(copies(view.cells), copies(view.misthrows), copies(view.active),
                             phase, hands[deal], copies(view.tops), copies(hidden["covered"]),
                             pile[deal], copies(view.value), copies(view.colours),
                             copies(hidden["played"]), copies(hidden["counting"]),
                             validate=False)

    def _simulate(self, engine: Any, first: np.ndarray, R: int, K: int) -> np.ndarray:
        """Play every copy from its position, seat 0's first action ``first`` (N,), then
        the policy's, until ``turns`` turn ends or the end; each copy's value (N,)."""
        N, P, M = engine.num_games, self.num_players, self.samples
        alive = np.ones(N, dtype=bool)
        value = np.zeros(N)
        ends, step = 0, 0
        rng_dice = self.game == "dice"
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
            chance = self._dice(engine, R, K) if rng_dice and not entry else None
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
        faces = self.rng.integers(1, DIE_FACES + 1, size=(R, 1, M, 3), dtype=np.int8)
        return np.broadcast_to(faces, (R, K, M, 3)).reshape(engine.num_games, 3)


def paired_gains(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate, the mean gain over the favourite (candidate 0) and its standard
    error, from simulated values (R, K, M) whose copy ``m`` saw the same chance for every
    candidate (so the differences are paired)."""
    diff = values - values[:, :1]
    M = values.shape[2]
    error = diff.std(2, ddof=1) / math.sqrt(M) if M > 1 else np.zeros(diff.shape[:2])
    return diff.mean(2), error


def _card_public(obs: np.ndarray, num_players: int) -> dict[str, np.ndarray]:
    """What card observations (R, obs) show beyond :func:`decode_batch`: the seats' hand
    sizes, the pile size, the covered cards, the stacks played and the counting stack."""
    layout = card_spec.observation_layout(num_players)
    common = layout.common
    seats = obs[:, layout.seats].reshape(len(obs), num_players, card_spec.SEAT.size)
    hand_sizes = np.rint(seats[..., card_spec.SEAT.hand_size.start] * card_spec.HAND_SIZE)
    counting = obs[:, common.counting]
    return {"hand_sizes": hand_sizes.astype(np.int64),
            "pile": np.rint(obs[:, common.pile.start] * card_spec.MAX_PILE).astype(np.int64),
            "covered": obs[:, common.covered] > 0.5,
            "played": obs[:, common.played] > 0.5,
            "counting": np.where(counting.max(1) > 0.5, counting.argmax(1),
                                 card_spec.NUM_STACKS)}


def deal_hidden(obs: np.ndarray, samples: int, num_players: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Deal, ``samples`` times per card observation (R, obs), the cards its player
    cannot see: uniformly, the cards in no own hand slot, on no stack and not covered go
    to the other seats' hands (as many as each holds) and the draw pile (in a random
    order). Returns hands (R * samples, P, 3) (the observer's own hand at seat 0, -1 for
    an empty slot) and piles (R * samples, 32) (-1 after the last card), deal ``m`` of
    observation ``r`` at row ``r * samples + m``."""
    view, public = decode_batch(obs, "cards"), _card_public(obs, num_players)
    R, D, H = len(obs), card_spec.DECK_SIZE, card_spec.HAND_SIZE
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
