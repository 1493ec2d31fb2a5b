"""`unilab play` progress: episodes done / requested on one updating line (tqdm), only on a
terminal or with --progress. The checkpoint is an untrained PPO learner made by hand."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from _untrained_checkpoint import write_untrained_cartpole_run

from unilab_integration._play import play_episodes
from unilab_integration.cli import main


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_untrained_cartpole_run(tmp_path_factory.mktemp("run"))


def _counts(text: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"episodes:[^|]*\|[^|]*\| (\d+)/(\d+)", text)]


def test_the_line_counts_episodes_done_of_requested(checkpoint):
    stream = io.StringIO()
    result = play_episodes(checkpoint, episodes=5, num_envs=2, progress=stream)
    assert len(result.returns) == 5
    counts = _counts(stream.getvalue())
    assert counts[0] == (0, 5) and counts[-1] == (5, 5)
    assert all(total == 5 for _, total in counts)
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)
    assert "\n" not in stream.getvalue().rstrip("\n")  # one line, redrawn with \r


def test_cli_shows_it_with_the_flag_and_not_off_a_terminal(checkpoint, capsys):
    assert main(["play", str(checkpoint), "--episodes", "3", "--num-envs", "2", "--progress"]) == 0
    err = capsys.readouterr().err
    assert _counts(err)[-1] == (3, 3)
    assert main(["play", str(checkpoint), "--episodes", "3", "--num-envs", "2"]) == 0
    captured = capsys.readouterr()  # stderr is no terminal here: no line
    assert "episodes:" not in captured.err and "mean return" in captured.out
    args = ["play", str(checkpoint), "--episodes", "3", "--num-envs", "2", "--no-progress"]
    assert main(args) == 0
    assert "episodes:" not in capsys.readouterr().err
