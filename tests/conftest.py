"""Suite-wide fixtures."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Every test runs torch on one thread: the tensors here are small, and on a small
    shared machine torch's thread pool spins against other processes and makes tiny
    trainings several times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
