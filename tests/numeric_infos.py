"""What the ``infos="numeric"`` tests of the PettingZoo envs and of Qwinto-v0 share."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest


def shapes(info: dict) -> dict:
    """Key -> shape of an info whose values are ints or int64 arrays (else AssertionError)."""
    for key, value in info.items():
        assert (type(value) is int) or (isinstance(value, np.ndarray) and value.dtype == np.int64
                                        and value.flags.writeable), (key, value)
    return {key: np.shape(value) for key, value in info.items()}


def tianshou_buffer(make_env: Callable[[], Any], policy: Any) -> Any:
    """The replay buffer Tianshou's Collector fills with four episodes of ``policy`` over
    ``DummyVectorEnv([make_env, make_env])``, the path a Tianshou user takes."""
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv

    buffer = VectorReplayBuffer(4000, 2)
    collector = Collector[CollectStats](policy, DummyVectorEnv([make_env, make_env]), buffer)
    collector.reset()
    assert collector.collect(n_episode=4).n_collected_episodes >= 4
    return buffer


def check_tianshou_takes_only_numeric(collect: Callable[[str], Any],
                                      declared: dict[str, tuple[int, ...]]) -> None:
    """``collect(infos)`` (a filled buffer) keeps every declared key at its shape with
    ``infos="numeric"`` and fails with the full infos."""
    buffer = collect("numeric")
    assert {key: buffer.info[key].shape[1:] for key in declared} == declared
    assert buffer.terminated.any()
    # The buffer's arrays take the first step's shapes: a growing tuple or list breaks them,
    # with a message that depends on which key grows first in these unseeded games ("shape
    # mismatch", "setting an array element with a sequence", "Batch does not supported
    # tensor assignment"); the numeric run above, on the same envs, shows it is the infos.
    with pytest.raises(ValueError):
        collect("full")
