"""A whole game as an animated GIF, in one call.

::

    from qwinto_env.video import record_gif

    record_gif("game.gif", game="dice", agents=["pretrained:dice-2p", "expert"], seed=7)

One frame per step of the game (a decision point of every seat), drawn by
:func:`qwinto_env.image.draw`; the file is written atomically.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from .fileio import check_output
from .image import check_fps, draw, save_gif
from .opponents import bot_action, make_agent
from .parallel import parallel_env

__all__ = ["record_gif", "play_frames"]


def play_frames(game: str = "dice", num_players: int = 2, agents: Sequence[Any] | None = None,
                seed: int | None = None, viewer: int | None = None,
                **env_options: Any) -> list[np.ndarray]:
    """Play one whole game and return its frames, the first before any move.

    ``agents``: a list of one per seat, each a name or checkpoint path (made by the
    environments' opponent loader, :func:`qwinto_env.opponents.make_agent`) or an object
    with ``act(observation, action_mask) -> int``; or ``None`` for masked random play.
    Seats with a single legal action are not asked. ``seed`` seeds the game and the
    random play; ``viewer`` is the seat whose card hand is shown; ``env_options`` go
    to :func:`qwinto_env.parallel_env`. Each sheet is titled with its agent's ``name``
    where it has one.
    """
    env = parallel_env(game=game, num_players=num_players, **env_options)
    n = env.game.num_players
    if isinstance(agents, (str, os.PathLike)):  # len() would count its letters
        raise ValueError(f"agents must be a list of one agent per seat ({n}), got "
                         f"{os.fspath(agents)!r}")
    if agents is not None and len(agents) != n:
        raise ValueError(f"agents must give one agent per seat ({n}), got {len(agents)}")
    if agents is not None:
        agents = [make_agent(a, game, n) for a in agents]
    names = [f"player {seat}" + (f" ({agent.name})" if getattr(agent, "name", None) else "")
             for seat, agent in enumerate(agents or [None] * n)]
    observations, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    frames = [draw(env.game, viewer, names)]
    while env.agents:
        actions = {}
        for seat, agent in enumerate(env.agents):
            obs = observations[agent]
            legal = np.flatnonzero(obs["action_mask"])
            if agents is None or len(legal) == 1:
                actions[agent] = int(rng.choice(legal))
            else:
                actions[agent] = bot_action(agents[seat], obs["observation"], obs["action_mask"])
        observations, *_ = env.step(actions)
        frames.append(draw(env.game, viewer, names))
    return frames


def record_gif(path: str | os.PathLike, game: str = "dice", num_players: int = 2,
               agents: Sequence[Any] | None = None, seed: int | None = None,
               fps: float = 2.0, viewer: int | None = None, **env_options: Any) -> int:
    """Play one whole game (as :func:`play_frames`) into an animated GIF at ``path``,
    ``fps`` frames per second; returns the number of frames. A bad ``fps`` or a ``path``
    that cannot be written or ends in another suffix than ``.gif`` raises ValueError
    before the game is played."""
    check_fps(fps)
    check_output(path, ".gif")
    frames = play_frames(game, num_players, agents, seed, viewer, **env_options)
    save_gif(path, frames, fps)
    return len(frames)
