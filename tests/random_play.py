"""Masked-random play of a ParallelEnv, for the env tests of both games."""

from __future__ import annotations

from typing import Any

import numpy as np


def random_actions(env: Any, observations: dict, rng: np.random.Generator) -> dict:
    """A uniformly random legal action for every live agent."""
    return {agent: int(rng.choice(np.flatnonzero(observations[agent]["action_mask"])))
            for agent in env.agents}


def play(env: Any, seed: int, rng_seed: int = 0, max_steps: int = 5000) -> list[tuple]:
    """A masked-random game from ``env.reset(seed=seed)``; the list of (observations,
    rewards, terminations, infos) per step, the reset's first (rewards None). Fails when
    the game has not ended in ``max_steps`` steps."""
    rng = np.random.default_rng(rng_seed)
    observations, infos = env.reset(seed=seed)
    history = [(observations, None, None, infos)]
    for _ in range(max_steps):
        if not env.agents:
            break
        observations, rewards, terms, _, infos = env.step(random_actions(env, observations, rng))
        history.append((observations, rewards, terms, infos))
    assert not env.agents, "game did not terminate"
    return history
