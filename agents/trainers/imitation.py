"""Warm start by imitation: fit the policy to a demonstrator's choices before PPO.

PPO from scratch spends most of a short CPU budget discovering what every Qwinto
player knows (write where the number fits, avoid misthrows). Behaviour cloning of a
scripted player (``imitation.demonstrator``, by default ``expert``) gets there in a
minute; PPO then improves on the demonstrator instead of re-deriving it. The value
head is fitted at the same time to the (scaled) score still to come, so the critic
starts consistent with the policy it criticises.

Demonstrations come from self-play games of the demonstrator, played side by side on
the batched engine; only decision points (more than one legal action) are kept.

With a search demonstrator (expert iteration) the policy can be fitted to the
demonstrator's actions (``imitation.targets: actions``) or to its search-improved policy
(``search``): at every decision, the softmax over the legal actions of the network's
logits plus each simulated action's gain over the favourite divided by
``imitation.temperature`` (less a correction for the estimate's noise,
:func:`improved_policy`). Where the search found nothing (or did not search) that is
the network's own policy, so the fit moves it only where the search has evidence, by as
much as the evidence says, instead of sharpening every decision to one choice.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

import numpy as np
import torch
from tqdm import tqdm

from qwinto_env.batched import BATCHED_GAMES

from ..load import load
from ..processes import bar_progress, count_finished, in_processes
from ..policy import PolicyNetwork
from ..search import Searched
from .config import TrainConfig


@dataclass
class Demonstrations:
    """Decision points of demonstrator games: inputs, choices and score still to come."""

    obs: np.ndarray       # (M, obs_size) float32
    masks: np.ndarray     # (M, A) bool
    actions: np.ndarray   # (M,) int64
    to_come: np.ndarray   # (M,) float32: final score minus the score at that point
    targets: np.ndarray | None = None  # (M, A) float32: the policy to fit, else actions


def collect(cfg: TrainConfig, progress: bool = True) -> Demonstrations:
    """Play ``imitation.games`` self-play games of the demonstrator and record its choices.

    The games run side by side on the batched engine (game ``g`` starts with seat ``g %
    P``); the demonstrator decides every game's decision points at once
    (:meth:`~agents.base.Agent.act_batch`), and each slot's first game is kept. With
    ``imitation.workers`` = W > 1 the games are split over W processes (part ``i`` seeded
    ``run.seed + i``, one torch thread each) and the parts joined in order: a search
    demonstrator costs tens of milliseconds a decision, so its games are worth the cores.
    """
    ic = cfg.imitation
    sizes = [len(p) for p in np.array_split(np.arange(ic.games), min(ic.workers, ic.games))]
    desc = f"demonstrations ({ic.demonstrator})"
    if len(sizes) == 1:
        with tqdm(total=ic.games, desc=desc, unit="game", disable=not progress) as bar:
            return _collect_part(cfg, ic.games, cfg.run.seed, bar_progress(bar))
    jobs = [(cfg, n, cfg.run.seed + i, count_finished) for i, n in enumerate(sizes)]
    parts = in_processes(_collect_worker, jobs, len(jobs), ic.games, desc, progress)
    return Demonstrations(*(None if getattr(parts[0], f.name) is None
                            else np.concatenate([getattr(p, f.name) for p in parts])
                            for f in fields(Demonstrations)))


def _collect_worker(job: tuple) -> Demonstrations:
    return _collect_part(*job)


def _collect_part(cfg: TrainConfig, games: int, seed: int,
                  progress: Callable[[int, int], Any]) -> Demonstrations:
    """:func:`collect` of ``games`` games in this process, seeded ``seed``."""
    ic = cfg.imitation
    agent = load(ic.demonstrator, game=cfg.env.game, num_players=cfg.env.num_players)
    agent.reset(seed=seed)

    def decide(obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        if ic.targets != "search":
            return agent.act_batch(obs, masks.astype(np.int8)), {}
        searched = agent.search_batch(obs, masks)
        return searched.actions, {"targets": improved_policy(searched, ic.temperature)}

    demo = self_play(decide, cfg.env.game, cfg.env.num_players, games, seed, progress)
    return Demonstrations(demo["obs"].astype(np.float32), demo["masks"],
                          demo["actions"].astype(np.int64), demo["to_come"].astype(np.float32),
                          demo.get("targets"))


def self_play(decide: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, dict]],
              game: str, num_players: int, games: int, seed: int,
              progress: Callable[[int, int], Any]) -> dict[str, np.ndarray]:
    """Play ``games`` games side by side on the numpy batched engine (game ``g`` starts
    with seat ``g % num_players``; each slot's first game is kept), every game's decision
    points (more than one legal action) decided at once by ``decide(obs, masks)`` ->
    ``(actions, extras)``; ``progress(games, decisions)`` after every step
    (:mod:`agents.processes`). Returns, per decision point: ``obs``, ``masks`` (bool),
    ``actions``, ``games``, ``seats``, ``then`` (the seat's score there), ``to_come`` (its
    final score minus ``then``) and each array of ``extras``, one row per decision."""
    G, P = games, num_players
    engine = BATCHED_GAMES[game](G, P, backend="numpy", seed=seed)
    engine.reset(seed=seed, start_player=np.arange(G) % P)
    finished, finals = np.zeros(G, dtype=bool), np.zeros((G, P), dtype=np.float32)
    parts: dict[str, list[np.ndarray]] = {}
    while not finished.all():
        obs, masks = engine.observations(), engine.action_masks() > 0
        actions = masks.argmax(axis=2)  # the only legal action, where there is one
        g, s = np.nonzero((masks.sum(axis=2) > 1) & ~finished[:, None])
        if len(g):
            actions[g, s], extras = decide(obs[g, s], masks[g, s])
            for key, part in (("obs", obs[g, s]), ("masks", masks[g, s]),
                              ("actions", actions[g, s]), ("games", g), ("seats", s),
                              ("then", engine.scores()[g, s]), *extras.items()):
                parts.setdefault(key, []).append(part)
        out = engine.step(actions)
        first = ~finished[out.done_index]
        finals[out.done_index[first]] = out.final_scores[first]
        finished[out.done_index] = True
        progress(int(first.sum()), len(g))
    demo = {k: np.concatenate(v) for k, v in parts.items()}
    demo["to_come"] = finals[demo["games"], demo["seats"]] - demo["then"]
    return demo


def improved_policy(searched: Searched, temperature: float) -> np.ndarray:
    """The search-improved policy (R, A) float32 of a search's decisions: the softmax of
    the policy's logits plus ``gain / temperature - (error / temperature) ** 2 / 2`` (0
    where nothing was simulated). The second term removes the noise's bias: for a gain
    estimate with normal error, ``exp(estimate / temperature)`` overstates the odds by
    ``exp((error / temperature) ** 2 / 2)`` on average, which would favour every searched
    alternative over the favourite (whose gain, 0, is exact)."""
    scaled, noise = searched.gains / temperature, searched.errors / temperature
    z = searched.logits + np.nan_to_num(scaled - noise ** 2 / 2, nan=0.0)
    z = np.exp(z - z.max(1, keepdims=True))
    return (z / z.sum(1, keepdims=True)).astype(np.float32)


def pretrain(network: PolicyNetwork, demos: Demonstrations, cfg: TrainConfig,
             device: torch.device, progress: bool = True) -> dict[str, float]:
    """Fit ``network`` to ``demos``: cross-entropy of the masked logits to the actions (or
    the target policies, :attr:`Demonstrations.targets`) plus value regression."""
    ic = cfg.imitation
    obs = torch.as_tensor(demos.obs, device=device)
    masks = torch.as_tensor(demos.masks, device=device)
    actions = torch.as_tensor(demos.actions, device=device)
    soft = None if demos.targets is None else torch.as_tensor(demos.targets, device=device)
    targets = torch.as_tensor(demos.to_come * cfg.ppo.reward_scale, device=device)
    optimizer = torch.optim.Adam(network.parameters(), lr=ic.learning_rate)
    n = obs.shape[0]
    accuracy = float("nan")
    for _ in tqdm(range(ic.epochs), desc="imitation", unit="epoch", disable=not progress):
        order = torch.randperm(n, device=device)
        hits = 0
        for start in range(0, n, ic.batch_size):
            idx = order[start:start + ic.batch_size]
            logits, value = network(obs[idx])
            logits = logits.masked_fill(~masks[idx], -1e8)
            policy_loss = torch.nn.functional.cross_entropy(
                logits, actions[idx] if soft is None else soft[idx])
            value_loss = 0.5 * (value - targets[idx]).pow(2).mean()
            loss = policy_loss + cfg.ppo.vf_coef * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            hits += int((logits.argmax(dim=1) == actions[idx]).sum())
        accuracy = hits / n
    return {"imitation/accuracy": accuracy, "imitation/samples": float(n)}
