"""What the batched engines' tests share: arrays of either backend as numpy, and the
differential checks that hold a batched engine equal to one ParallelEnv per game."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def to_np(x: Any) -> np.ndarray:
    """A numpy or torch (any device) array as numpy."""
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """float32 arrays equal bit for bit (``-0.0`` is not ``0.0``)."""
    return np.array_equal(np.asarray(a).view(np.int32), np.asarray(b).view(np.int32))


def assert_same_views(obs: np.ndarray, masks: np.ndarray, references: Sequence[dict],
                      agents: Sequence[str], where: Any = None) -> None:
    """The batched observations ``(N, P, obs)`` bit for bit and masks ``(N, P, A)`` equal
    each game's ParallelEnv observations ``references[i]``; ``where`` tags a failure."""
    assert masks.dtype == np.int8 and obs.dtype == np.float32
    for i, reference in enumerate(references):
        for s, agent in enumerate(agents):
            assert same_bits(obs[i, s], reference[agent]["observation"]), (i, s, where)
            assert np.array_equal(masks[i, s], reference[agent]["action_mask"]), (i, s, where)


class StepCheck:
    """One batched step's result as numpy, checked game by game against the reference
    env's step (:meth:`game`); ``returns`` ``(N, P)`` sums each game's rewards."""

    def __init__(self, out: Any, returns: np.ndarray) -> None:
        self.rewards, self.terminated = to_np(out.rewards), to_np(out.terminated)
        self.done_index = to_np(out.done_index).tolist()
        self.out, self.returns = out, returns

    def game(self, i: int, env: Any, observations: dict, rewards: dict,
             terminations: dict) -> bool:
        """Game ``i``'s rewards and terminations equal ``env.step``'s; when it ended, its
        final scores, returns, turns and observations equal the env's too, and its
        ``returns`` row is cleared. True when it ended."""
        for s, agent in enumerate(env.possible_agents):
            assert self.rewards[i, s] == np.float32(rewards[agent]), (i, s, rewards)
            assert self.terminated[i] == terminations[agent]
            self.returns[i, s] += rewards[agent]
        assert (i in self.done_index) == env.game.done
        if not env.game.done:
            return False
        j, out = self.done_index.index(i), self.out
        assert to_np(out.final_scores)[j].tolist() == env.game.scores()
        assert np.allclose(to_np(out.final_returns)[j], self.returns[i], atol=1e-6)
        assert int(to_np(out.final_turns)[j]) == env.game.turn
        final = to_np(out.final_observation)[j]
        for s, agent in enumerate(env.possible_agents):
            assert same_bits(final[s], observations[agent]["observation"])
        self.returns[i] = 0.0
        return True
