"""`interrupt_on_signals`: the one signal policy of a launch and of the code around it."""

from __future__ import annotations

import os
import signal
import time

import pytest

from unilab_launch import LaunchInterrupted, interrupt_on_signals


@pytest.fixture
def interactive_sigint():
    """SIGINT as an interactive Python process has it: a test run started in the background
    by a non-interactive shell (`cmd &`) inherits SIGINT ignored, which the policy keeps
    (`test_an_ignored_sigint_stays_ignored`), so a SIGINT sent to it would never arrive."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_first_signal_raises_later_ones_are_ignored(
    sig: signal.Signals, interactive_sigint: None
) -> None:
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


def test_an_ignored_sigint_stays_ignored() -> None:
    """A background job (SIGINT ignored, as a shell starts `cmd &`) keeps ignoring Ctrl-C
    inside the block; SIGTERM still stops it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(LaunchInterrupted) as info, interrupt_on_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)  # ignored: nothing raised
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(500):
                time.sleep(0.01)
        assert info.value.signal == "SIGTERM"
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
