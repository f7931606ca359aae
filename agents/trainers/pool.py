"""The opponent pool of self-play training: frozen snapshots of the learner and scripted bots.

Games are dealt out by the shares in :class:`~agents.trainers.config.OpponentConfig`:
``self_play`` games seat the learner everywhere; the other games seat the learner once
and one opponent in every other seat. The ``sb3`` trainer draws that opponent per game
(:meth:`OpponentPool.draw`: the snapshots' share split evenly over the snapshots kept,
each scripted spec its own share); the ``torch`` trainer gives each opponent a fixed
share of its game slots (:meth:`OpponentPool.split`), so that its rollout handles every
opponent by fixed index sets, which a GPU runs without waiting on the host. A
snapshot is a frozen copy of the learner's network taken every ``snapshot_every``
learner steps; the pool keeps the newest ``pool_size``. Mixing old selves with fixed
bots keeps the learner from over-fitting one opponent or forgetting how to beat the
others.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..base import Agent
from ..load import load
from ..policy import PolicyAgent, PolicyNetwork
from .config import OpponentConfig


@dataclass
class Opponent:
    """One entry of the pool: a frozen network or a scripted agent."""

    name: str
    network: PolicyNetwork | None = None
    agent: Agent | None = None


class OpponentPool:
    """Snapshots and scripted opponents, and who plays which opponent game."""

    def __init__(self, cfg: OpponentConfig, game: str, num_players: int, seed: int):
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.scripted = [_scripted(spec, game, num_players, seed + 1 + i) for i, spec in
                         enumerate(s for s in cfg.scripted if cfg.scripted[s] > 0)]
        self.snapshots: list[Opponent] = []
        self.snapshot_count = 0

    @property
    def self_play_share(self) -> float:
        """Share of games of pure self-play (``opponents.self_play`` of all the weights)."""
        total = self.cfg.self_play + self.cfg.snapshots + sum(self.cfg.scripted.values())
        return self.cfg.self_play / total

    @property
    def opponent_share(self) -> float:
        """Share of games that seat opponents (the rest is pure self-play)."""
        return 1.0 - self.self_play_share

    @property
    def entries(self) -> list[Opponent]:
        """Every opponent, snapshots first; an opponent id indexes this list."""
        return self.snapshots + self.scripted

    def add_snapshot(self, network: PolicyNetwork) -> None:
        """Freeze a copy of ``network`` into the pool (dropping the oldest beyond pool_size)."""
        frozen = _frozen(copy.deepcopy(network))
        self.snapshot_count += 1
        self.snapshots.append(Opponent(f"snapshot-{self.snapshot_count}", network=frozen))
        del self.snapshots[:-max(1, self.cfg.pool_size)]

    def split(self, games: int) -> list[tuple[str, int]]:
        """How many of ``games`` opponent games go to the snapshots (``"snapshots"``, first)
        and to each scripted spec, by the configured shares (largest remainders)."""
        shares = ([("snapshots", self.cfg.snapshots)] if self.cfg.snapshots > 0 else []) + \
            [(o.name, self.cfg.scripted[o.name]) for o in self.scripted]
        total = sum(share for _, share in shares)
        exact = [games * share / total for _, share in shares]
        counts = [int(x) for x in exact]
        by_remainder = sorted(range(len(exact)), key=lambda i: counts[i] - exact[i])
        for i in by_remainder[:games - sum(counts)]:
            counts[i] += 1
        return [(name, n) for (name, _), n in zip(shares, counts)]

    def draw(self, k: int) -> np.ndarray:
        """Opponent ids for ``k`` new opponent games, by the configured shares."""
        weights = [self.cfg.snapshots / len(self.snapshots)] * len(self.snapshots) if \
            self.snapshots else []
        weights += [self.cfg.scripted[o.name] for o in self.scripted]
        weights = np.asarray(weights, dtype=np.float64)
        if weights.sum() <= 0:
            raise RuntimeError("the pool has no opponent with a positive share")
        return self.rng.choice(len(weights), size=k, p=weights / weights.sum())

    def act(self, opponent: int, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Actions of opponent id ``opponent`` (an index of :attr:`entries`)."""
        return play(self.entries[opponent], obs, mask)

    def to(self, device: torch.device) -> "OpponentPool":
        """Move the networks (checkpoint opponents) to ``device``."""
        for o in self.scripted:
            if o.network is not None:
                o.network.to(device)
        return self

    def state_dict(self) -> dict[str, Any]:
        return {"snapshots": [(o.name, o.network.state_dict()) for o in self.snapshots],
                "snapshot_count": self.snapshot_count, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any], template: PolicyNetwork) -> None:
        """Restore a :meth:`state_dict`, keeping its newest ``pool_size`` snapshots (a
        resume may give a smaller pool than the run was saved with)."""
        self.snapshots = []
        for name, weights in state["snapshots"][-self.cfg.pool_size:]:
            net = copy.deepcopy(template)
            net.load_state_dict(weights)
            self.snapshots.append(Opponent(name, network=_frozen(net)))
        self.snapshot_count = state["snapshot_count"]
        self.rng.bit_generator.state = state["rng"]


def _scripted(spec: str, game: str, num_players: int, seed: int) -> Opponent:
    """A scripted opponent; a checkpoint plays through its network (on the learner's
    device), like a snapshot."""
    agent = load(spec, game=game, num_players=num_players)
    agent.reset(seed=seed)
    if isinstance(agent, PolicyAgent) and agent.deterministic:
        return Opponent(spec, network=_frozen(agent.network))
    return Opponent(spec, agent=agent)


def _frozen(network: PolicyNetwork) -> PolicyNetwork:
    network.eval()
    for p in network.parameters():
        p.requires_grad_(False)
    return network


@torch.no_grad()
def play(opponent: Opponent, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``opponent``'s actions for observations and bool masks ``(B, ...)`` on any device.

    Networks and agents that decide tensors on their device (``accepts_tensors``: random,
    greedy, expert) make no host sync; any other agent is asked on the host.
    """
    if opponent.network is not None:
        logits, _ = opponent.network(obs)
        return logits.masked_fill(~mask, -torch.inf).argmax(dim=1)
    if opponent.agent.accepts_tensors:
        return opponent.agent.act_batch(obs, mask)
    actions = opponent.agent.act_batch(obs.cpu().numpy(), mask.cpu().numpy().astype(np.int8))
    return torch.as_tensor(actions, device=obs.device)
