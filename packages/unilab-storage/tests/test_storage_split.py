"""split_global: per-rank shares of a global capacity / batch size."""

from __future__ import annotations

import pytest

from unilab_storage import split_global


def test_divisible_and_floor():
    assert split_global(1_000_000, 4, "replay capacity") == 250_000
    assert split_global(8192, 1, "batch size") == 8192
    assert split_global(10, 3, "batch size", remainder="floor") == 3


def test_errors_name_the_quantity():
    with pytest.raises(ValueError, match=r"batch size=10 is not divisible by world_size=3"):
        split_global(10, 3, "batch size")
    with pytest.raises(ValueError, match="num_envs=2 is smaller than world_size=3"):
        split_global(2, 3, "num_envs", remainder="floor")
    with pytest.raises(ValueError, match="world_size must be >= 1"):
        split_global(4, 0, "capacity")
    with pytest.raises(ValueError, match="remainder"):
        split_global(4, 2, "capacity", remainder="ceil")
    with pytest.raises(TypeError, match="capacity must be an int"):
        split_global(4.0, 2, "capacity")
