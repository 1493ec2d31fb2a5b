"""The package's facades: configs load without torch (a command line is checked before the
learners load), every public name resolves, and the torch-free lists equal the real ones."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

FACADES = (
    "unilab_algos",
    "unilab_algos.common",
    "unilab_algos.ppo",
    "unilab_algos.fastsac",
    "unilab_algos.distill",
)


def test_the_configs_load_without_torch():
    code = (
        "import sys\n"
        "from unilab_algos import PPOConfig, FastSACConfig, DistillationConfig, NetworkConfig\n"
        "PPOConfig(); FastSACConfig(); DistillationConfig()\n"
        "print(sorted(m for m in ('torch', 'tensordict', 'numpy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", FACADES)
def test_every_public_name_of_a_facade_resolves(name):
    module = importlib.import_module(name)
    for public in module.__all__:
        assert getattr(module, public) is not None, public
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        module.nope  # noqa: B018


def test_activation_names_are_the_networks_activations():
    from unilab_algos.common.config import ACTIVATION_NAMES
    from unilab_algos.common.networks import ACTIVATIONS

    assert sorted(ACTIVATION_NAMES) == sorted(ACTIVATIONS)
