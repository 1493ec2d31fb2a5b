"""`interrupt_on_signals`: the one signal policy of a launch and of the code around it."""

from __future__ import annotations

import os
import signal
import time

import pytest

from unilab_launch import LaunchInterrupted, interrupt_on_signals


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_first_signal_raises_later_ones_are_ignored(sig: signal.Signals) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(LaunchInterrupted) as info, interrupt_on_signals():
        try:
            os.kill(os.getpid(), sig)
            for _ in range(500):  # the handler raises in one of these sleeps
                time.sleep(0.01)
            pytest.fail(f"{sig.name} raised nothing within 5 s")
        finally:
            # the stop under way: a second signal of either kind changes nothing (handled
            # while the policy is still in place: within the sleep)
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
    assert info.value.signal == sig.name and info.value.run_dir is None
    assert str(info.value) == f"interrupted by {sig.name}"
    assert isinstance(info.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is before  # restored on the way out


def test_nested_blocks_share_the_outer_policy() -> None:
    with interrupt_on_signals():
        outer = signal.getsignal(signal.SIGTERM)
        with interrupt_on_signals():
            assert signal.getsignal(signal.SIGTERM) is outer
        assert signal.getsignal(signal.SIGTERM) is outer  # the inner block left it in place
