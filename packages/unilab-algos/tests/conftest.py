"""Fixtures shared by unilab-algos' tests."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread per test: bitwise comparisons stay stable and CI's 2 cores are
    not oversubscribed by the multi-process tests running beside it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
