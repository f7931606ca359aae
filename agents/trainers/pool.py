"""The opponent pool of self-play training: frozen snapshots of the learner and scripted bots.

Games are dealt out by the shares in :class:`~agents.trainers.config.OpponentConfig`:
``self_play`` games seat the learner everywhere; the other games seat the learner once
and one opponent in every other seat, drawn per game from the snapshots (their share
split evenly over the snapshots kept) and the scripted specs (each its own share). A
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
from ..policy import PolicyNetwork
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
        self.scripted = [Opponent(spec, agent=load(spec, game=game, num_players=num_players))
                         for spec in cfg.scripted if cfg.scripted[spec] > 0]
        for i, opp in enumerate(self.scripted):
            opp.agent.reset(seed=seed + 1 + i)
        self.snapshots: list[Opponent] = []
        self.snapshot_count = 0

    @property
    def opponent_share(self) -> float:
        """Share of games that seat opponents (the rest is pure self-play)."""
        total = self.cfg.self_play + self.cfg.snapshots + sum(self.cfg.scripted.values())
        return 1.0 - self.cfg.self_play / total

    @property
    def entries(self) -> list[Opponent]:
        """Every opponent, snapshots first; an opponent id indexes this list."""
        return self.snapshots + self.scripted

    def add_snapshot(self, network: PolicyNetwork) -> None:
        """Freeze a copy of ``network`` into the pool (dropping the oldest beyond pool_size)."""
        frozen = copy.deepcopy(network).eval()
        for p in frozen.parameters():
            p.requires_grad_(False)
        self.snapshot_count += 1
        self.snapshots.append(Opponent(f"snapshot-{self.snapshot_count}", network=frozen))
        del self.snapshots[:-max(1, self.cfg.pool_size)]

    def draw(self, k: int) -> np.ndarray:
        """Opponent ids for ``k`` new opponent games, by the configured shares."""
        weights = [self.cfg.snapshots / len(self.snapshots)] * len(self.snapshots) if \
            self.snapshots else []
        weights += [self.cfg.scripted[o.name] for o in self.scripted]
        weights = np.asarray(weights, dtype=np.float64)
        if weights.sum() <= 0:
            raise RuntimeError("the pool has no opponent with a positive share")
        return self.rng.choice(len(weights), size=k, p=weights / weights.sum())

    @torch.no_grad()
    def act(self, opponent: int, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Actions of opponent ``opponent`` for observations/masks ``(B, ...)`` on any device."""
        entry = self.entries[opponent]
        if entry.network is not None:
            logits, _ = entry.network(obs)
            return logits.masked_fill(~mask, -torch.inf).argmax(dim=1)
        actions = entry.agent.act_batch(obs.cpu().numpy(), mask.cpu().numpy().astype(np.int8))
        return torch.as_tensor(actions, device=obs.device)

    def state_dict(self) -> dict[str, Any]:
        return {"snapshots": [(o.name, o.network.state_dict()) for o in self.snapshots],
                "snapshot_count": self.snapshot_count, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any], template: PolicyNetwork) -> None:
        self.snapshots = []
        for name, weights in state["snapshots"]:
            net = copy.deepcopy(template).eval()
            net.load_state_dict(weights)
            for p in net.parameters():
                p.requires_grad_(False)
            self.snapshots.append(Opponent(name, network=net))
        self.snapshot_count = state["snapshot_count"]
        self.rng.bit_generator.state = state["rng"]
