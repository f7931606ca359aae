"""Suite-wide fixtures."""

import numpy as np
import pytest
import torch

from qwinto_env.cards import CardGame
from qwinto_env.dice import DiceGame


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Every test runs torch on one thread: the tensors here are small, and on a small
    shared machine torch's thread pool spins against other processes and makes tiny
    trainings several times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="session")
def sb3_logs_in_pytest_temp(tmp_path_factory):
    """SB3's ``learn()`` without a logger makes an ``SB3-<time>`` folder in the system temp
    folder per call; the suite's (examples in subprocesses too) go to pytest's instead."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
        yield


@pytest.fixture
def observations():
    """``observations(game, n, players=2, seed=0)``: ``(n, size)`` float32 tensor of seat 0's
    observations along random games of ``game`` ("dice" or "cards"), every phase."""
    def collect(game: str, n: int, players: int = 2, seed: int = 0) -> torch.Tensor:
        state = (DiceGame if game == "dice" else CardGame)(num_players=players)
        rng, out = np.random.default_rng(seed), []
        state.reset(seed=seed)
        while len(out) < n:
            if state.done:
                state.reset(seed=int(rng.integers(1 << 30)))
            out.append(state.features()[state.observation_index(0)])
            state.step([int(rng.choice(state.legal_actions(s))) for s in range(players)])
        return torch.as_tensor(np.array(out, dtype=np.float32))
    return collect
