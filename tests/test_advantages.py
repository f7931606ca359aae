"""The torch trainer's GAE over decisions, against a per-stream reference walked forward."""

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from agents.trainers.torch_ppo import decision_advantages


def reference(rewards, ends, values, decides, next_value, next_decides, gamma, lam):
    """Per stream: each decision's return up to the next decision (or the game's end, or
    the state after the rollout), then advantages chained backward from decision to
    decision, decayed by gamma times lambda for every step between them."""
    T, S = rewards.shape
    adv, trained = np.zeros((T, S)), np.zeros((T, S), dtype=bool)
    for s in range(S):
        later = {}  # decision -> (delta, decay to the next decision, that decision or None)
        for t in np.flatnonzero(decides[:, s]):
            ret, disc, decay, k = 0.0, 1.0, 1.0, t
            while True:
                ret += disc * rewards[k, s]
                if ends[k, s]:
                    later[t] = (ret - values[t, s], 0.0, None)
                    break
                disc *= gamma
                decay *= gamma * lam
                k += 1
                if k == T:
                    if next_decides[s]:
                        later[t] = (ret + disc * next_value[s] - values[t, s], 0.0, None)
                    break
                if decides[k, s]:
                    later[t] = (ret + disc * values[k, s] - values[t, s], decay, k)
                    break
        for t in sorted(later, reverse=True):
            delta, decay, k = later[t]
            adv[t, s] = delta + (decay * adv[k, s] if k is not None else 0.0)
            trained[t, s] = True
    return adv, trained


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9), st.integers(1, 4), st.floats(0.0, 1.0), st.floats(0.0, 0.4),
       st.integers(0, 2 ** 32 - 1))
def test_decision_advantages_match_the_reference(T, S, p_decide, p_end, seed):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, S)).round(2)
    ends = rng.random((T, S)) < p_end
    values = rng.normal(size=(T, S))
    decides = rng.random((T, S)) < p_decide
    next_value, next_decides = rng.normal(size=S), rng.random(S) < 0.5
    gamma, lam = 0.9, 0.8
    as_t = lambda a: torch.as_tensor(a, dtype=torch.float64)
    adv, returns, trained = decision_advantages(
        as_t(rewards), as_t(ends), as_t(values), torch.as_tensor(decides), as_t(next_value),
        torch.as_tensor(next_decides), gamma, lam)
    want_adv, want_trained = reference(rewards, ends, values, decides, next_value,
                                       next_decides, gamma, lam)
    assert np.array_equal(trained.numpy(), want_trained)
    assert np.allclose(adv.numpy(), want_adv)
    assert np.allclose(returns.numpy(), np.where(want_trained, want_adv + values, 0.0))


def test_all_decisions_is_plain_gae():
    rng = np.random.default_rng(0)
    T, S, gamma, lam = 7, 3, 0.99, 0.95
    rewards, values = (torch.as_tensor(rng.normal(size=(T, S))) for _ in range(2))
    ends = torch.as_tensor((rng.random((T, S)) < 0.2).astype(float))
    next_value = torch.as_tensor(rng.normal(size=S))
    every = torch.ones(T, S, dtype=torch.bool)
    adv, _, trained = decision_advantages(rewards, ends, values, every, next_value, every[0],
                                          gamma, lam)
    want, last = torch.zeros(T, S, dtype=torch.float64), torch.zeros(S, dtype=torch.float64)
    for t in reversed(range(T)):
        following = next_value if t == T - 1 else values[t + 1]
        alive = 1.0 - ends[t]
        last = rewards[t] + gamma * following * alive - values[t] + gamma * lam * alive * last
        want[t] = last
    assert trained.all() and torch.allclose(adv, want)
