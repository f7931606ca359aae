"""Warm start by imitation: fit the policy to a demonstrator's choices before PPO.

PPO from scratch spends most of a short CPU budget discovering what every Qwinto
player knows (write where the number fits, avoid misthrows). Behaviour cloning of a
scripted player (``imitation.demonstrator``, by default ``expert``) gets there in a
minute; PPO then improves on the demonstrator instead of re-deriving it. The value
head is fitted at the same time to the (scaled) score still to come, so the critic
starts consistent with the policy it criticises.

Demonstrations come from self-play games of the demonstrator on the single-game
engine; only decision points (more than one legal action) are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from qwinto_env.parallel import GAMES

from ..load import load
from ..policy import PolicyNetwork
from .config import TrainConfig


@dataclass
class Demonstrations:
    """Decision points of demonstrator games: inputs, choices and score still to come."""

    obs: np.ndarray       # (M, obs_size) float32
    masks: np.ndarray     # (M, A) bool
    actions: np.ndarray   # (M,) int64
    to_come: np.ndarray   # (M,) float32: final score minus the score at that point


def collect(cfg: TrainConfig, progress: bool = True) -> Demonstrations:
    """Play ``imitation.games`` self-play games of the demonstrator and record its choices."""
    ic, game_name, P = cfg.imitation, cfg.env.game, cfg.env.num_players
    agent = load(ic.demonstrator, game=game_name, num_players=P)
    agent.reset(seed=cfg.run.seed)
    engine = GAMES[game_name](num_players=P)
    index = [engine.observation_index(s) for s in range(P)]
    obs, masks, actions, seats, games, scores_then, finals = [], [], [], [], [], [], []
    mask = np.zeros(engine.num_actions, dtype=bool)
    for g in tqdm(range(ic.games), desc=f"demonstrations ({ic.demonstrator})", unit="game",
                  disable=not progress):
        engine.reset(seed=cfg.run.seed * 1_000_003 + g, start_player=g % P)
        while not engine.done:
            feats, scores, joint = engine.features(), engine.scores(), []
            for s in range(P):
                legal = engine.legal_actions(s)
                if len(legal) == 1:
                    joint.append(legal[0])
                    continue
                mask[:] = False
                mask[legal] = True
                o = feats[index[s]]
                a = agent.act(o, mask.astype(np.int8))
                obs.append(o)
                masks.append(mask.copy())
                actions.append(a)
                seats.append(s)
                games.append(g)
                scores_then.append(scores[s])
                joint.append(a)
            engine.step(joint)
        finals.append(engine.scores())
    finals = np.asarray(finals, dtype=np.float32)
    to_come = finals[np.asarray(games), np.asarray(seats)] - np.asarray(scores_then, np.float32)
    return Demonstrations(np.asarray(obs, np.float32), np.asarray(masks), np.asarray(actions),
                          to_come.astype(np.float32))


def pretrain(network: PolicyNetwork, demos: Demonstrations, cfg: TrainConfig,
             device: torch.device, progress: bool = True) -> dict[str, float]:
    """Fit ``network`` to ``demos``: cross-entropy on masked logits plus value regression."""
    ic = cfg.imitation
    obs = torch.as_tensor(demos.obs, device=device)
    masks = torch.as_tensor(demos.masks, device=device)
    actions = torch.as_tensor(demos.actions, device=device)
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
            policy_loss = torch.nn.functional.cross_entropy(logits, actions[idx])
            value_loss = 0.5 * (value - targets[idx]).pow(2).mean()
            loss = policy_loss + cfg.ppo.vf_coef * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            hits += int((logits.argmax(dim=1) == actions[idx]).sum())
        accuracy = hits / n
    return {"imitation/accuracy": accuracy, "imitation/samples": float(n)}
